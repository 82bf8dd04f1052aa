"""The open family's merge, computed over stored records in one pass (the lifecycle's speed).

:meth:`OpenExtractor.add_to_graph <kgpath.ingest.extraction.OpenExtractor.add_to_graph>`
merges mention by mention through ``KnowledgeGraph.add_node`` / ``add_edge``, re-writing a
node each time it gains a passage: fine once per build, too slow to repeat on every update
(2.1 s for 131 HotpotQA passages under a profiler). :func:`assemble_open` computes the same
result from the same records with plain dictionaries, creates each node and edge once and
installs them in bulk (:func:`kgpath.graph.edit.set_contents`). The rules it reproduces,
each a function of a key's mentions in passage order:

* **key**: :func:`~kgpath.ingest.extraction.entity_key` of the name, mapped through the
  document's :func:`~kgpath.ingest.extraction.short_form_map`; mentions are read per
  passage, entities first, then each relation's head and tail;
* **node id and name**: the first mention's surface form (stripped), with ``'`` appended
  while another key already has that id (first-mention order decides);
* **text**: the first mention's sentence (400 characters); **provenance**: the passages
  in first-mention order; **node order**: first mention;
* **type**: the majority over typed mentions ("Concept" and "Entity" count only when no
  other type was seen; ties to the larger name), ``"Concept"`` when none was typed;
* **edges** ``(head id, tail id, relation)``, self-loops skipped: the first text, the first
  kind, the largest weight (co-occurrence 0.5, others 1.0), provenance in order.

``tests/test_replay.py`` checks that it equals ``add_to_graph`` on random records
(hypothesis), including short forms, id collisions and type votes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from kgpath.graph import Edge, KnowledgeGraph, Node
from kgpath.graph.edit import set_contents
from kgpath.graph.model import check_id, check_text
from kgpath.ingest.chunking import TextPassage
from kgpath.ingest.extraction import (
    COOCCURRENCE_WEIGHT,
    Extraction,
    entity_key,
    short_form_map,
)

__all__ = ["assemble_open"]

_TEXT_CHARS = 400


class _Keys:
    """``entity_key`` memoised per surface form (a corpus repeats its names)."""

    def __init__(self) -> None:
        self.memo: dict[str, str] = {}

    def __call__(self, name: str) -> str:
        k = self.memo.get(name)
        if k is None:
            k = self.memo[name] = entity_key(name)
        return k


def _short_maps(keys: _Keys, passages: Sequence[TextPassage],
                records: Sequence[Extraction]) -> dict[str, dict[str, str]]:
    per_doc: dict[str, list[str]] = {}
    for p, ex in zip(passages, records, strict=True):
        names = [e.name for e in ex.entities]
        names += [n for r in ex.relations for n in (r.head, r.tail)]
        per_doc.setdefault(p.doc_id, []).extend(keys(n) for n in names)
    return {doc: short_form_map(k for k in ks if k) for doc, ks in per_doc.items()}


class _Nodes:
    """Per key: id, name, text, provenance; type votes; ids taken."""

    def __init__(self, keys: _Keys) -> None:
        self.keys = keys
        self.rec: dict[str, list[Any]] = {}  # key -> [id, name, text, {passage: None}]
        self.types: dict[str, Counter[str]] = {}
        self.taken: set[str] = set()

    def mention(self, name: str, typ: str | None, sentence: str, passage: str,
                short: dict[str, str]) -> str | None:
        key = self.keys(name)
        if not key:
            return None
        key = short.get(key, key)
        if typ:
            self.types.setdefault(key, Counter())[typ] += 1
        rec = self.rec.get(key)
        if rec is not None:
            rec[3][passage] = None
            return str(rec[0])
        nid = surface = name.strip()
        while nid in self.taken:
            nid += "'"
        self.taken.add(nid)
        self.rec[key] = [nid, surface, sentence[:_TEXT_CHARS], {passage: None}]
        return nid

    def type_of(self, key: str) -> str:
        counts = self.types.get(key)
        if not counts:
            return "Concept"
        named = {t: c for t, c in counts.items() if t not in ("Concept", "Entity")}
        pool = named or counts
        return max(pool, key=lambda t: (pool[t], t))

    def build(self, extractor: str) -> list[Node]:
        meta = {"extractor": extractor}
        out = []
        for key, (nid, name, text, prov) in self.rec.items():
            check_id(nid, "node id")
            out.append(Node(nid, check_text(name, f"name of node {nid!r}"),
                            check_text(text, f"text of node {nid!r}"), self.type_of(key),
                            dict(meta), tuple(prov)))
        return out


def assemble_open(passages: Sequence[TextPassage], records: Sequence[Extraction],
                  extractor: str) -> KnowledgeGraph:
    """A new graph of ``passages`` (in order) merged from their ``records`` (see the module).

    Equal to ``KnowledgeGraph()`` + ``add_passage`` of each passage +
    ``OpenExtractor.add_to_graph(graph, passages, records, report)`` for an extractor named
    ``extractor``.
    """
    keys = _Keys()
    shorts = _short_maps(keys, passages, records)
    nodes = _Nodes(keys)
    edges: dict[tuple[str, str, str], list[Any]] = {}
    for p, ex in zip(passages, records, strict=True):
        short = shorts.get(p.doc_id, {})
        for e in ex.entities:
            nodes.mention(e.name, e.type, e.sentence, p.id, short)
        for r in ex.relations:
            h = nodes.mention(r.head, None, r.sentence, p.id, short)
            t = nodes.mention(r.tail, None, r.sentence, p.id, short)
            if h is None or t is None or h == t:
                continue
            w = COOCCURRENCE_WEIGHT if r.kind == "cooccurrence" else 1.0
            rec = edges.get((h, t, r.relation))
            if rec is None:
                edges[(h, t, r.relation)] = [r.sentence[:_TEXT_CHARS], r.kind, w, {p.id: None}]
            else:
                rec[0] = rec[0] or r.sentence[:_TEXT_CHARS]
                rec[1] = rec[1] or r.kind
                rec[2] = max(rec[2], w)
                rec[3][p.id] = None
    meta = {"extractor": extractor}
    edge_list = [Edge(h, t, check_text(rel, f"relation of edge {h!r} -> {t!r}"),
                      check_text(text, f"text of edge {h!r} -> {t!r}"), kind, w, tuple(prov),
                      dict(meta))
                 for (h, t, rel), (text, kind, w, prov) in edges.items()]
    g = KnowledgeGraph()
    for p in passages:
        g.add_passage(p.id, p.text, p.metadata)
    set_contents(g, nodes.build(extractor), edge_list)
    return g
