"""Prompts of the schema-guided method: extraction, decomposition, community summary, answer.

Plain ``str.format`` templates. Literal JSON braces are doubled (``{{``/``}}``) so the same
constants work with ``str.format``, LlamaIndex ``PromptTemplate`` and LangChain f-string
``ChatPromptTemplate``. Variables of each template are listed in :data:`PROMPT_VARIABLES`.
"""

from __future__ import annotations

__all__ = [
    "SCHEMA_ANSWER_PROMPT",
    "SCHEMA_COMMUNITY_SUMMARY_PROMPT",
    "SCHEMA_DECOMPOSE_PROMPT",
    "SCHEMA_EXTRACT_PROMPT",
    "SCHEMA_EVOLUTION_NOTE",
    "PROMPT_VARIABLES",
]

#: Schema-bounded triple extraction for one passage.
SCHEMA_EXTRACT_PROMPT = """\
You build a knowledge graph that must follow a fixed schema.

{schema}

Read the passage and list the entities and relations it states, using ONLY the types above
(write each type exactly as named). Skip facts that do not fit the schema.
{evolution_note}
Return JSON only, in this shape:
{{"entities": [{{"name": "...", "type": "...", "description": "...", "attributes": {{}}}}],
 "triples": [{{"head": "...", "head_type": "...", "relation": "...", "tail": "...",
              "tail_type": "...", "confidence": 0.0}}],
 "proposals": [{{"kind": "entity|relation|attribute", "name": "...", "description": "...",
                "head": [], "tail": [], "entities": [], "confidence": 0.0}}]}}
At most {max_triples} triples.

Passage:
{text}
"""

#: Inserted as ``evolution_note`` when schema evolution is enabled (empty otherwise).
SCHEMA_EVOLUTION_NOTE = """\
If the passage clearly needs a type the schema lacks, you may suggest it under "proposals"
with a confidence between 0 and 1; do not use the suggested type in "triples".
"""

#: Question decomposition with the same schema (pattern step 4).
SCHEMA_DECOMPOSE_PROMPT = """\
You plan retrieval over a knowledge graph built with this schema:

{schema}

Split the question into at most {max_sub_questions} focused sub-questions that can each be
answered from the graph (one sub-question if it is already simple), and name the schema
types the answer will involve. Use only type names from the schema.

Return JSON only:
{{"sub_questions": ["..."],
 "involved_types": {{"nodes": ["..."], "relations": ["..."], "attributes": ["..."]}}}}

Question: {question}
"""

#: Community summary for the hierarchy layer.
SCHEMA_COMMUNITY_SUMMARY_PROMPT = """\
Summarise in one or two sentences what connects this group of knowledge-graph nodes, so a
search system can decide whether a question is about this group.

Members:
{members}

Relations among them:
{relations}

Summary:"""

#: Final answer over merged, sub-question-tagged evidence.
SCHEMA_ANSWER_PROMPT = """\
Answer the question using only the evidence below. Each evidence line is tagged with the
sub-question(s) it was retrieved for. If the evidence is insufficient, say so.

Sub-questions:
{sub_questions}

Evidence:
{evidence}

Question: {question}
Answer:"""

#: Named variables of every template (checked by the tests).
PROMPT_VARIABLES: dict[str, tuple[str, ...]] = {
    "SCHEMA_EXTRACT_PROMPT": ("schema", "evolution_note", "max_triples", "text"),
    "SCHEMA_DECOMPOSE_PROMPT": ("schema", "max_sub_questions", "question"),
    "SCHEMA_COMMUNITY_SUMMARY_PROMPT": ("members", "relations"),
    "SCHEMA_ANSWER_PROMPT": ("sub_questions", "evidence", "question"),
}
