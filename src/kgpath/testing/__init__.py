"""Test helpers shipped with kgpath: the retriever contract suite both adapters run.

Requires ``pytest`` (``pip install kgpath[dev]``).
"""

from kgpath.testing.contract import RetrieverContractSuite, Row, adapter_class, example

__all__ = ["RetrieverContractSuite", "Row", "adapter_class", "example"]
