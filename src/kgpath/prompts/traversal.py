"""Prompts for the semantic chunk graph: LLM theme extraction and LLM-guided traversal.

Variables are named ``{like_this}``; literal braces are doubled.
"""

from __future__ import annotations

__all__ = ["THEME_EXTRACTION_PROMPT", "LLM_TRAVERSAL_PROMPT"]

#: Document-level themes (article, "Hierarchical Attributes"). Variables: ``{num_themes}``,
#: ``{title}``, ``{text}``. Expected reply: a JSON list of short strings.
THEME_EXTRACTION_PROMPT = """\
Read the document below and name its {num_themes} main themes.
Each theme is a short noun phrase of one to four words.

Title: {title}
Document:
{text}

Answer with a JSON list of exactly {num_themes} strings and nothing else, for example
["theme one", "theme two", ...]."""

#: One step of ``llm_guided_traversal``: the model sees the question, the sentences
#: gathered so far, and the top candidate chunks with previews and query similarities.
#: Variables: ``{query}``, ``{num_sentences}``, ``{extracted}``, ``{candidates}``,
#: ``{num_candidates}``. Expected reply: ``{"choice": <1..n>}`` or ``{"choice": "stop"}``.
LLM_TRAVERSAL_PROMPT = """\
You are steering a walk through a graph of text chunks to collect the evidence needed to
answer a question. Pick the chunk to read next, or stop when the evidence is sufficient.

Question: {query}

Evidence collected so far ({num_sentences} sentences):
{extracted}

Candidate chunks (cosine similarity to the question in brackets):
{candidates}

Reply with JSON only: {{"choice": N}} where N is a candidate number from 1 to
{num_candidates}, or {{"choice": "stop"}} to end the walk."""
