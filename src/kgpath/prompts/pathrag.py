"""Prompt templates for PathRAG (Chen et al., 2025), as plain ``str.format`` templates.

Literal braces are doubled (``{{``/``}}``) so the same strings work unchanged as
LlamaIndex ``PromptTemplate`` and LangChain f-string ``ChatPromptTemplate`` templates.

* :data:`PATHRAG_KEYWORD_PROMPT` (variable ``{query}``): section 4.1, the LLM turns the
  question into keywords, returned as JSON.
* :data:`PATHRAG_QA_PROMPT` (variables ``{query}``, ``{paths}``): section 4.3, Eq. (6):
  the question comes first and the textual paths follow in the order chosen by the
  ordering policy (ascending reliability by default), so the most reliable path is the
  last thing the model reads. Nothing but the paths follows the question.
* :data:`PATHRAG_PATH_BLOCK` (variables ``{number}``, ``{text}``): one textual path (Eq. 5)
  inside ``{paths}``.
* :data:`PATHRAG_RELATION_BLOCK` (variables ``{number}``, ``{text}``): one relation retrieved
  for the high-level keywords. These blocks open ``{paths}``, right after the query
  (section 5.1.3: "retrieved edges that correspond to global keywords of LightRAG are
  placed after the query"), so the most reliable path still comes last.
"""

from __future__ import annotations

__all__ = [
    "PATHRAG_KEYWORD_PROMPT",
    "PATHRAG_QA_PROMPT",
    "PATHRAG_PATH_BLOCK",
    "PATHRAG_FLAT_BLOCK",
    "PATHRAG_RELATION_BLOCK",
]

PATHRAG_KEYWORD_PROMPT = """\
You pick search keywords for a retriever over a knowledge graph of entities and relations.
Read the question and reply with one JSON object and nothing else, shaped like
{{"entities": ["..."], "concepts": ["..."]}}
- "entities": names of people, places, organisations, objects, dates or technical terms that \
the question mentions or clearly needs, most important first;
- "concepts": a few broader themes the answer depends on.
Use short noun phrases copied from the question where possible.

Question: {query}
JSON:"""

PATHRAG_QA_PROMPT = """\
Answer the question below using the relational paths from a knowledge graph that follow it. \
Each path chains entity descriptions and the relations between them. If the paths do not \
contain the answer, say so.

Question: {query}

Relational paths:
{paths}"""

PATHRAG_PATH_BLOCK = "Path {number}: {text}"

PATHRAG_FLAT_BLOCK = "- {text}"

PATHRAG_RELATION_BLOCK = "Relation {number}: {text}"
