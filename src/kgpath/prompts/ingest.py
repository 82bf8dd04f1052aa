"""Prompts of the document-to-graph ingestion (plain templates with named variables)."""

__all__ = ["OPEN_EXTRACT_PROMPT", "PROMPT_VARIABLES"]

#: Open (schema-free) extraction for one passage: entities first, then triples, JSON only.
OPEN_EXTRACT_PROMPT = """\
You build a knowledge graph from text.

First list the named entities and important concepts the passage mentions, each with a short
type (Person, Organization, Place, Work, Event, Concept, ...). Then list the facts the passage
states between them as (head, relation, tail) triples, where head and tail are names from your
entity list, written exactly as there, and relation is a short verb phrase.

Return JSON only, in this shape:
{{"entities": [{{"name": "...", "type": "..."}}],
 "triples": [{{"head": "...", "relation": "...", "tail": "..."}}]}}
At most {max_triples} triples.

Passage:
{text}
"""

PROMPT_VARIABLES = {"OPEN_EXTRACT_PROMPT": ("max_triples", "text")}
