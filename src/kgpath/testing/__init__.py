"""Test helpers shipped with kgpath: the retriever contract suite both adapters run.

Requires ``pytest`` (``pip install kgpath[dev]``).
"""

from kgpath.testing.contract import CONTRACT_QUERIES, RetrieverContractSuite, Row

__all__ = ["CONTRACT_QUERIES", "RetrieverContractSuite", "Row"]
