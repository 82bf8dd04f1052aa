"""Prompt of PCR's optional LLM step: choose the relation chain a question asks for.

Variables are named ``{like_this}``; literal braces are doubled.
"""

from __future__ import annotations

__all__ = ["CHAIN_CHOICE_PROMPT"]

#: ``score=TemplateScore(llm=...)`` (:mod:`kgpath.methods.pcr.templates`): the model sees
#: the question and the best relation chains of the LLM-free scorer, each written as
#: triples with the unknown nodes as "something". Variables: ``{query}``, ``{chains}``
#: (numbered lines), ``{num_chains}``. Expected reply: the chosen chain's number.
CHAIN_CHOICE_PROMPT = """\
A question is asked about a knowledge graph. Each numbered line below is a chain of
relations that starts at the entity the question names; "something" stands for the
entities along the chain, and the last one is the answer the chain gives.

Question: {query}

Chains:
{chains}

Which chain gives what the question asks for? Answer with its number (1 to {num_chains})
only."""
