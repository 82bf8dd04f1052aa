"""The open-vocabulary extractor family: its records, its base, and how names merge.

An open extractor (spaCy, any LLM) reads passages and returns, per passage, an
:class:`Extraction`: the entities it found (surface name and type) and the relations
between them (head, relation label, tail, kind), with no schema to bound them. Its base,
:class:`OpenExtractor`, is an :class:`~kgpath.ingest.extractor.Extractor` whose
:meth:`~OpenExtractor.add_to_graph` merges names by :func:`entity_key` (case, accents,
punctuation, possessives, a leading "the") across documents, and by
:func:`short_form_map` within one document (a short form such as "Curie" that names
exactly one longer entity of the same document, "Marie Curie"). Entity nodes carry only
what extraction found (name, type, the first sentence that mentions them as text,
provenance) and the extractor's name; existing nodes keep their text (so their vectors
stay valid) and gain provenance.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

from kgpath.graph import KnowledgeGraph
from kgpath.ingest.chunking import TextPassage
from kgpath.ingest.extractor import Extractor, IngestReport

__all__ = [
    "COOCCURRENCE",
    "COOCCURRENCE_WEIGHT",
    "ExtractedEntity",
    "ExtractedRelation",
    "Extraction",
    "OpenExtractor",
    "entity_key",
    "short_form_map",
]

COOCCURRENCE = "co-occurs with"
"""Relation label of sentence co-occurrence edges (kind ``"cooccurrence"``)."""
COOCCURRENCE_WEIGHT = 0.5
"""Edge weight of co-occurrence relations (syntactic and LLM relations weigh 1.0)."""
_TEXT_CHARS = 400


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
    failed: bool = False
    """The passage could not be read (e.g. no usable LLM reply): retried by the next
    ``add_documents`` / ``upsert_documents`` of the index."""


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

    Linear in the keys' tokens: each key's prefixes and suffixes of the token counts that
    keys have are looked up among the keys (a scan of every key per key was quadratic:
    29 s for the 8k names of one document, issue 23).

    Examples
    --------
    >>> short_form_map(["marie curie", "curie", "bohr", "niels bohr", "paris"])
    {'curie': 'marie curie', 'bohr': 'niels bohr'}
    >>> short_form_map(["marie curie", "pierre curie", "curie"])
    {}
    """
    uniq = list(dict.fromkeys(keys))
    tokens = [k.split() for k in uniq]
    joined = [" ".join(t) for t in tokens]  # one string per token sequence
    shorts = set(joined)
    lengths = sorted({len(t) for t in tokens})  # a short form has one of these token counts
    one: dict[str, str] = {}  # short form -> the one longer key that starts or ends with it
    many: set[str] = set()  # short forms two or more longer keys start or end with
    for k, t, s in zip(uniq, tokens, joined, strict=True):
        n = len(t)
        cut = list(accumulate(len(x) + 1 for x in t))  # prefix of j tokens: s[:cut[j-1]-1]
        for j in lengths:
            if j >= n:
                break
            head, tail = (s[:cut[j - 1] - 1], s[cut[n - j - 1]:]) if j else ("", "")
            for form in (head,) if head == tail else (head, tail):
                if form in shorts and form not in many and one.setdefault(form, k) != k:
                    many.add(form)
                    del one[form]
    return {k: one[s] for k, s in zip(uniq, joined, strict=True) if s in one}


def canonical_names(mentions: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """Display name per key: the most frequent surface form (longest on ties)."""
    out = {}
    for key, names in mentions.items():
        counts: dict[str, int] = {}
        for n in names:
            counts[n] = counts.get(n, 0) + 1
        out[key] = max(counts, key=lambda n: (counts[n], len(n), n))
    return out


class OpenExtractor(Extractor[Extraction]):
    """Base of the open-vocabulary family (records: :class:`Extraction`).

    Subclasses implement the hook pair ``extract_passage(passage_id, text)`` /
    ``aextract_passage``; :meth:`extract` / :meth:`aextract` read a batch and
    :meth:`add_to_graph` merges the records by name (see the module docstring).
    """

    def extract(self, passages: Sequence[TextPassage]) -> list[Extraction]:
        """One :class:`Extraction` per passage, in order."""
        return self.extract_passages(passages)

    async def aextract(self, passages: Sequence[TextPassage]) -> list[Extraction]:
        """Async :meth:`extract`."""
        return await self.aextract_passages(passages)

    def add_to_graph(self, graph: KnowledgeGraph, passages: Sequence[TextPassage],
                     records: Sequence[Extraction], report: IngestReport) -> None:
        """Add entities and relations, merging names by key (short forms per document)."""
        shorts = _doc_key_maps(passages, records)
        merger = _Merger(graph, self.name or type(self).__name__, report)
        for p, ex in zip(passages, records, strict=True):
            report.notes.extend(f"{p.id}: {n}" for n in ex.notes)
            merger.add(p, ex, shorts.get(p.doc_id, {}))
        merger.flush()


def _doc_key_maps(passages: Sequence[TextPassage],
                  extractions: Sequence[Extraction]) -> dict[str, dict[str, str]]:
    """Per document: short key -> the longer key it abbreviates (same document only)."""
    keys: dict[str, list[str]] = {}
    for p, ex in zip(passages, extractions, strict=True):
        names = [e.name for e in ex.entities]
        names += [n for r in ex.relations for n in (r.head, r.tail)]
        keys.setdefault(p.doc_id, []).extend(entity_key(n) for n in names)
    return {doc: short_form_map(k for k in ks if k) for doc, ks in keys.items()}


class _Merger:
    """Adds extracted entities and relations to the graph, merging names by key.

    A new node is added at its first mention; later mentions (provenance, type votes) and
    every relation are gathered and written once by :meth:`flush`, which gives the graph
    that adding each mention as it comes gives (``add_edge`` merges duplicates the same
    way), in linear time: an entity or triple named in each of ``P`` passages was
    re-written with its whole provenance ``P`` times (10k documents naming one entity:
    28 s, issue 23).
    """

    def __init__(self, graph: KnowledgeGraph, extractor_name: str, report: IngestReport):
        self.graph = graph
        self.name = extractor_name
        self.report = report
        self.id_of: dict[str, str] = {}
        for n in graph.nodes:
            self.id_of.setdefault(entity_key(n.name), n.id)
        self.types: dict[str, Counter[str]] = {}
        self.touched: dict[str, tuple[str, dict[str, None]]] = {}  # id -> key, provenance
        self.edges: dict[tuple[str, str, str], list[Any]] = {}  # merged as add_edge would

    def node(self, name: str, typ: str | None, sentence: str, passage: str,
             short: dict[str, str]) -> str | None:
        key = entity_key(name)
        if not key:
            return None
        key = short.get(key, key)
        g = self.graph
        nid = self.id_of.get(key)
        if typ:
            self.types.setdefault(key, Counter())[typ] += 1
        if nid is None:
            nid = name.strip()
            while nid in g:  # a different key already uses this surface form
                nid += "'"
            self.id_of[key] = nid
            g.add_node(nid, name.strip(), sentence[:_TEXT_CHARS], type=typ or "Concept",
                       metadata={"extractor": self.name}, provenance=(passage,))
            self.report.nodes_new += 1
        seen = self.touched.get(nid)
        if seen is None:
            seen = self.touched[nid] = (key, dict.fromkeys(g.node(nid).provenance))
        seen[1][passage] = None
        return nid

    def flush(self) -> None:
        """Write the gathered provenance and types, then the relations (merged)."""
        g = self.graph
        for nid, (key, prov) in self.touched.items():
            old = g.node(nid)
            typ, provenance = self._type(key, old.type), tuple(prov)
            if typ != old.type or provenance != old.provenance:
                g.add_node(nid, old.name, old.text, type=typ, metadata=old.metadata,
                           provenance=provenance)
        for (h, t, rel), (text, kind, weight, prov) in self.edges.items():
            g.add_edge(h, t, rel, text, type=kind, weight=weight, provenance=tuple(prov),
                       metadata={"extractor": self.name})

    def _type(self, key: str, current: str | None) -> str | None:
        counts = self.types.get(key)
        if not counts:
            return current
        named = {t: c for t, c in counts.items() if t not in ("Concept", "Entity")}
        pool = named or counts
        return max(pool, key=lambda t: (pool[t], t))

    def add(self, passage: TextPassage, ex: Extraction, short: dict[str, str]) -> None:
        for e in ex.entities:
            self.node(e.name, e.type, e.sentence, passage.id, short)
        for r in ex.relations:
            h = self.node(r.head, None, r.sentence, passage.id, short)
            t = self.node(r.tail, None, r.sentence, passage.id, short)
            if h is None or t is None or h == t:
                continue
            weight = COOCCURRENCE_WEIGHT if r.kind == "cooccurrence" else 1.0
            text = r.sentence[:_TEXT_CHARS]
            got = self.edges.get((h, t, r.relation))
            if got is None:
                self.edges[(h, t, r.relation)] = [text, r.kind, weight, {passage.id: None}]
            else:  # as KnowledgeGraph.add_edge merges an exact duplicate
                got[0], got[1] = got[0] or text, got[1] or r.kind
                got[2] = max(got[2], weight)
                got[3][passage.id] = None
            self.report.edges_added += 1
