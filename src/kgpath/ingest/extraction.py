"""What an extractor returns, the protocol every extractor implements, and name merging.

An extractor reads passages and returns, per passage, the entities it found (surface name
and type) and the relations between them (head, relation label, tail, kind). Names are
merged by :func:`entity_key` (case, accents, punctuation, possessives, a leading "the")
across documents, and by :func:`short_form_map` within one document (a short form such as
"Curie" that names exactly one longer entity of the same document, "Marie Curie").
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from kgpath.ingest.documents import TextPassage

__all__ = [
    "COOCCURRENCE",
    "ExtractedEntity",
    "ExtractedRelation",
    "Extraction",
    "Extractor",
    "entity_key",
    "short_form_map",
]

COOCCURRENCE = "co-occurs with"
"""Relation label of sentence co-occurrence edges (kind ``"cooccurrence"``)."""


@dataclass(frozen=True)
class ExtractedEntity:
    """An entity mention: surface name, type, and the sentence it was found in."""

    name: str
    type: str
    sentence: str = ""


@dataclass(frozen=True)
class ExtractedRelation:
    """``head --relation--> tail`` with its kind and the sentence that states it.

    ``kind`` is ``"svo"``, ``"prep"``, ``"copula"``, ``"appos"``, ``"poss"`` (a possessive:
    "Brazil's Marta"), ``"llm"`` or ``"cooccurrence"`` (the weaker, typed co-occurrence
    relation).
    """

    head: str
    relation: str
    tail: str
    kind: str
    sentence: str = ""


@dataclass(frozen=True)
class Extraction:
    """Everything one extractor found in one passage."""

    passage_id: str
    entities: tuple[ExtractedEntity, ...] = ()
    relations: tuple[ExtractedRelation, ...] = ()
    notes: tuple[str, ...] = field(default=())
    """Why something was skipped or repaired (e.g. malformed LLM output)."""


@runtime_checkable
class Extractor(Protocol):
    """Reads passages, returns one :class:`Extraction` per passage, in order."""

    name: str
    """Recorded in the graph's node/edge metadata (``extractor``)."""

    def extract(self, passages: Sequence[TextPassage]) -> list[Extraction]:
        """Extract from every passage."""
        ...

    async def aextract(self, passages: Sequence[TextPassage]) -> list[Extraction]:
        """Async :meth:`extract`."""
        ...


_POSSESSIVE = re.compile(r"['’]s?$")


def entity_key(name: str) -> str:
    """The merge key of an entity name.

    Case-folded, accents and punctuation removed, a possessive and a leading article
    dropped.

    Examples
    --------
    >>> entity_key("The Curies'"), entity_key("Irène Joliot-Curie's")
    ('curies', 'irene joliot curie')
    """
    s = unicodedata.normalize("NFKD", name.strip())
    s = "".join(c for c in s if not unicodedata.combining(c))
    s = _POSSESSIVE.sub("", s)
    s = re.sub(r"[^\w]+", " ", s.lower()).strip()
    s = re.sub(r"^(?:the|a|an) ", "", s)
    return s


def short_form_map(keys: Iterable[str]) -> dict[str, str]:
    """Map each short key to the one longer key of the same document it abbreviates.

    A key abbreviates a longer one when its tokens are a prefix or a suffix of the longer
    key's tokens. When two longer keys match ("curie": "marie curie", "pierre curie") the
    short form is ambiguous and stays unmerged.

    Examples
    --------
    >>> short_form_map(["marie curie", "curie", "bohr", "niels bohr", "paris"])
    {'curie': 'marie curie', 'bohr': 'niels bohr'}
    >>> short_form_map(["marie curie", "pierre curie", "curie"])
    {}
    """
    uniq = list(dict.fromkeys(keys))
    toks = {k: k.split() for k in uniq}
    out: dict[str, str] = {}
    for short in uniq:
        st = toks[short]
        longer = [
            k for k in uniq
            if len(toks[k]) > len(st) and (toks[k][: len(st)] == st or toks[k][-len(st):] == st)
        ]
        if len(longer) == 1:
            out[short] = longer[0]
    return out


def canonical_names(mentions: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """Display name per key: the most frequent surface form (longest on ties)."""
    out = {}
    for key, names in mentions.items():
        counts: dict[str, int] = {}
        for n in names:
            counts[n] = counts.get(n, 0) + 1
        out[key] = max(counts, key=lambda n: (counts[n], len(n), n))
    return out
