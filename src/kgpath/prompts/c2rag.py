"""Prompts for C2RAG: the atomic-constraint planner and the evidence-block answer prompt.

Plain ``str.format`` templates (literal braces are doubled). Adapters wrap them into a
LlamaIndex ``PromptTemplate`` or a LangChain ``ChatPromptTemplate``.

Variables
---------
:data:`PLANNER_PROMPT`
    ``{query}`` the question, ``{m}`` the number of relation variants per constraint,
    ``{schema}`` the JSON schema of a plan (:data:`kgpath.methods.c2rag.plan.PLAN_SCHEMA`).
:data:`EVIDENCE_QA_PROMPT`
    ``{query}`` the question, ``{context}`` the evidence blocks of Eq. 16 as rendered by
    :func:`kgpath.methods.c2rag.format_blocks`.
"""

from __future__ import annotations

__all__ = [
    "PLANNER_PROMPT",
    "EVIDENCE_QA_PROMPT",
    "EVIDENCE_SYSTEM_PROMPT",
    "EVIDENCE_HUMAN_PROMPT",
]

PLANNER_PROMPT = """\
Break the question below into a short ordered list of atomic constraints that a \
knowledge-graph retriever can check one at a time.

How to write the plan:
- A constraint is a triple pattern with a "head", a "relation" and a "tail".
- Each end is either an entity that the question names (copy its wording exactly) or a \
placeholder for an unknown entity: a "?" followed by one short type word, such as \
"?person", "?city" or "?year".
- Reuse a placeholder wherever the question refers to the same unknown thing. Every \
placeholder must connect, through the constraints, to an entity that the question names.
- Put the constraints in the order in which they can be solved: each one should start \
from a named entity or from a placeholder that an earlier constraint solves.
- For each constraint list under "variants" exactly {m} other ways the relation could be \
worded as a short knowledge-graph edge label.
- List every placeholder under "placeholders" with its type.

Reply with JSON only, following this JSON schema:
{schema}

Example question: Which river runs through the city where the painter of "The Night \
Watch" died?
Example plan:
{{"placeholders": {{"?painter": "person", "?city": "city", "?river": "river"}},
 "constraints": [
  {{"head": "The Night Watch", "relation": "painted by", "tail": "?painter",
   "variants": ["painter", "created by", "artist"]}},
  {{"head": "?painter", "relation": "died in", "tail": "?city",
   "variants": ["place of death", "passed away in", "death place"]}},
  {{"head": "?river", "relation": "flows through", "tail": "?city",
   "variants": ["runs through", "crosses", "passes through"]}}]}}

Question: {query}
Plan:"""

EVIDENCE_SYSTEM_PROMPT = """\
You answer multi-hop questions from evidence blocks. Each block begins with the \
constraint it supports, a triple pattern in which "?" marks an unknown, followed by its \
state and its evidence. A RESOLVED block was settled by the knowledge graph and shows \
the entity bound to its unknown. An UNRESOLVED block could not be settled by the graph; \
its evidence is text found by search and must be read to fill the unknown. Use only the \
evidence. If it does not support an answer, say that the evidence is insufficient."""

EVIDENCE_HUMAN_PROMPT = """\
Evidence blocks:
{context}

Question: {query}
Answer:"""

EVIDENCE_QA_PROMPT = EVIDENCE_SYSTEM_PROMPT + "\n\n" + EVIDENCE_HUMAN_PROMPT
