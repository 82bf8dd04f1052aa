"""The open family's merge as an aggregate over mentions, updated per document.

:meth:`OpenExtractor.add_to_graph <kgpath.ingest.extraction.OpenExtractor.add_to_graph>`
merges mention by mention through ``KnowledgeGraph.add_node`` / ``add_edge``: fine once
per build, too slow to repeat over the whole corpus on every update (2.1 s for 131
HotpotQA passages under a profiler). Every field it produces is a function of one key's (or
one edge's) mentions in passage order, so :class:`OpenAssembly` keeps those mentions per
key and per edge and, when documents change, recomputes only the keys and edges they
touch. The rules, each over the mentions in passage order (entities first, then each
relation's head and tail):

* **key**: :func:`~kgpath.ingest.extraction.entity_key` of the name, mapped through the
  document's :func:`~kgpath.ingest.extraction.short_form_map`;
* **node id and name**: the first mention's surface form (stripped), with ``'`` appended
  while a key mentioned earlier already has that id; **node order**: first mention;
* **text**: the first mention's sentence (400 characters); **provenance**: the passages
  in order; **type**: the majority over typed mentions ("Concept" and "Entity" count only
  when no other type was seen; ties to the larger name), else ``"Concept"``;
* **edges** ``(head, tail, relation)`` between two different keys: the first non-empty text
  and kind, the largest weight (co-occurrence 0.5, others 1.0), provenance in order, order
  of first occurrence.

``tests/test_replay.py`` checks that a build, and any sequence of document removals and
additions, equals ``add_to_graph`` over the final passages (hypothesis), including short
forms, id collisions and type votes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
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

__all__ = ["OpenAssembly", "assemble_open"]

_TEXT_CHARS = 400
Pos = tuple[int, int]
"""A passage's place in the graph's passage order (compared as a tuple)."""
_Doc = tuple[str, Sequence[tuple[Pos, TextPassage, Extraction]]]


class OpenAssembly:
    """Mentions per key and per edge, the node and edge records they give (see the module).

    :meth:`update` removes documents and adds documents (each with its passages, their
    places and records); :meth:`records` returns the nodes and edges in graph order.
    """

    def __init__(self, extractor: str) -> None:
        self.extractor = extractor
        self._key_memo: dict[str, str] = {}
        self.docs: dict[str, list[tuple[Pos, str]]] = {}  # doc -> its (place, passage id)
        self.ent: dict[str, list[tuple[str, str, str | None, str, int]]] = {}
        self.rel: dict[str, list[tuple[str, str, str, str, str, float, int]]] = {}
        self.pos: dict[str, Pos] = {}
        self.by_key: dict[str, dict[str, tuple[int, str, str]]] = {}
        self.types: dict[str, Counter[str]] = {}
        self.by_edge: dict[tuple[str, str, str], dict[str, list[tuple[int, str, str, float]]]] = {}
        self.edges_of: dict[str, set[tuple[str, str, str]]] = {}
        self.ids: dict[str, str] = {}
        self.nodes: dict[str, Node] = {}
        self.edges: dict[tuple[str, str, str], Edge] = {}
        self._dirty_keys: set[str] = set()
        self._dirty_edges: set[tuple[str, str, str]] = set()
        self.seen: dict[str, list[tuple[TextPassage, Extraction]]] = {}
        """Per document: the passages and record objects last resolved."""
        # orders of the last call, with each key's and edge's first place; valid while
        # places are not renumbered (move)
        self.key_first: dict[str, tuple[Pos, int, str, str]] = {}
        self.edge_first: dict[tuple[str, str, str], tuple[Pos, int]] = {}
        self.key_order: list[str] = []
        self.edge_order: list[tuple[str, str, str]] = []
        self._moved = False

    def _key(self, name: str) -> str:
        k = self._key_memo.get(name)
        if k is None:
            k = self._key_memo[name] = entity_key(name)
        return k

    # ------------------------------------------------------------------ mentions
    def _resolve(self, doc: _Doc) -> None:
        """Resolve one document's mentions (its short forms) and index them."""
        doc_id, items = doc
        keys = [self._key(n) for _, _, ex in items for n in
                [e.name for e in ex.entities] + [x for r in ex.relations for x in (r.head, r.tail)]]
        short = short_form_map(k for k in keys if k)
        self.docs[doc_id] = [(pos, p.id) for pos, p, _ in items]
        for pos, p, ex in items:
            self.pos[p.id] = pos
            ents: list[tuple[str, str, str | None, str, int]] = []
            rels: list[tuple[str, str, str, str, str, float, int]] = []
            for e in ex.entities:
                self._mention(ents, e.name, e.type, e.sentence, short)
            for j, r in enumerate(ex.relations):
                h = self._mention(ents, r.head, None, r.sentence, short)
                t = self._mention(ents, r.tail, None, r.sentence, short)
                if h is not None and t is not None and h != t:
                    w = COOCCURRENCE_WEIGHT if r.kind == "cooccurrence" else 1.0
                    rels.append((h, t, r.relation, r.sentence[:_TEXT_CHARS], r.kind, w, j))
            self.ent[p.id], self.rel[p.id] = ents, rels
            self._index(p.id, ents, rels)

    def _mention(self, out: list[tuple[str, str, str | None, str, int]], name: str,
                 typ: str | None, sentence: str, short: dict[str, str]) -> str | None:
        key = self._key(name)
        if not key:
            return None
        key = short.get(key, key)
        out.append((key, name.strip(), typ or None, sentence[:_TEXT_CHARS], len(out)))
        return key

    def _index(self, pid: str, ents: list[Any], rels: list[Any]) -> None:
        for key, surface, typ, sentence, i in ents:
            per = self.by_key.setdefault(key, {})
            if pid not in per:
                per[pid] = (i, surface, sentence)
            if typ:
                self.types.setdefault(key, Counter())[typ] += 1
            self._dirty_keys.add(key)
        for h, t, rel, text, kind, w, j in rels:
            self.by_edge.setdefault((h, t, rel), {}).setdefault(pid, []).append((j, text, kind, w))
            self.edges_of.setdefault(h, set()).add((h, t, rel))
            self.edges_of.setdefault(t, set()).add((h, t, rel))
            self._dirty_edges.add((h, t, rel))

    def _drop(self, doc_id: str) -> None:
        for _, pid in self.docs.pop(doc_id, ()):
            for key, _, typ, _, _ in self.ent.pop(pid, ()):
                self.by_key.get(key, {}).pop(pid, None)
                if typ:
                    self.types[key][typ] -= 1
                self._dirty_keys.add(key)
            for h, t, rel, *_ in self.rel.pop(pid, ()):
                self.by_edge.get((h, t, rel), {}).pop(pid, None)
                self._dirty_edges.add((h, t, rel))
            self.pos.pop(pid, None)

    def update(self, removed: Iterable[str], added: Iterable[_Doc]) -> None:
        """Remove the documents ``removed`` (ids), then add ``added`` (id, passages).

        Places of the documents kept may be renumbered (:meth:`move`) but not reordered.
        """
        for doc_id in removed:
            self._drop(doc_id)
        for doc in added:
            self._drop(doc[0])
            self._resolve(doc)

    def move(self, doc_id: str, places: Sequence[Pos]) -> None:
        """Give a kept document's passages new places (same relative order)."""
        entries = self.docs[doc_id]
        self.docs[doc_id] = [(pos, pid) for pos, (_, pid) in zip(places, entries, strict=True)]
        for pos, (_, pid) in zip(places, entries, strict=True):
            if self.pos.get(pid) != pos:
                self.pos[pid] = pos
                self._moved = True

    # ------------------------------------------------------------------ records
    def _first(self, key: str) -> tuple[Pos, int, str, str]:
        pos = self.pos
        return min(((pos[p], *m) for p, m in self.by_key[key].items()),
                   key=lambda m: (m[0], m[1]))

    def _first_clean(self, key: str) -> tuple[Pos, int, str, str]:
        """:meth:`_first` of a key no update touched: its node's first passage."""
        p0 = self.nodes[key].provenance[0]
        return (self.pos[p0], *self.by_key[key][p0])

    def _type(self, key: str) -> str:
        counts = +self.types.get(key, Counter())
        if not counts:
            return "Concept"
        named = {t: c for t, c in counts.items() if t not in ("Concept", "Entity")}
        pool = named or counts
        return max(pool, key=lambda t: (pool[t], t))

    def _assign_ids(self) -> list[str]:
        """Keys in first-mention order; (re)assign ids, marking keys whose id changed."""
        gone = {k for k in self._dirty_keys if not self.by_key.get(k)}
        for key in gone:
            for d in (self.by_key, self.types, self.nodes, self.ids, self.key_first):
                d.pop(key, None)  # type: ignore[attr-defined]
        if self._moved:
            self.key_first = {}
        firsts = self.key_first
        fresh = [k for k in self.by_key if k in self._dirty_keys or k not in firsts]
        for k in fresh:
            firsts[k] = self._first(k)
        rank = {k: (firsts[k][0], firsts[k][1]) for k in fresh}
        known = [k for k in self.key_order if k not in gone and k not in rank]
        rank.update((k, (firsts[k][0], firsts[k][1])) for k in known)
        order = self.key_order = sorted(known + list(dict.fromkeys(fresh)), key=rank.__getitem__)
        taken: set[str] = set()
        for key in order:
            nid = firsts[key][2]
            while nid in taken:
                nid += "'"
            taken.add(nid)
            if self.ids.get(key) != nid:
                self.ids[key] = nid
                self._dirty_keys.add(key)
                self._dirty_edges.update(self.edges_of.get(key, ()))
        return order

    def _node(self, key: str) -> Node:
        per = self.by_key[key]
        _, _, surface, sentence = self._first(key)
        nid = self.ids[key]
        prov = tuple(sorted(per, key=lambda p: self.pos[p]))
        check_id(nid, "node id")
        return Node(nid, check_text(surface, f"name of node {nid!r}"),
                    check_text(sentence, f"text of node {nid!r}"), self._type(key),
                    {"extractor": self.extractor}, prov)

    def _edge(self, triple: tuple[str, str, str]) -> Edge | None:
        per = self.by_edge.get(triple)
        if not per:
            return None
        h, t, rel = triple
        prov = tuple(sorted(per, key=lambda p: self.pos[p]))
        occ = [o for p in prov for o in per[p]]
        text = next((o[1] for o in occ if o[1]), "")
        kind = next((o[2] for o in occ if o[2]), occ[0][2])
        src, dst = self.ids[h], self.ids[t]
        return Edge(src, dst, check_text(rel, f"relation of edge {src!r} -> {dst!r}"),
                    check_text(text, f"text of edge {src!r} -> {dst!r}"), kind,
                    max(o[3] for o in occ), prov, {"extractor": self.extractor})

    def records(self) -> tuple[list[Node], list[Edge]]:
        """Nodes and edges in graph order, recomputing only what the updates touched."""
        order = self._assign_ids()
        for key in self._dirty_keys:
            if key in self.by_key:
                self.nodes[key] = self._node(key)
        for triple in self._dirty_edges:
            edge = self._edge(triple)
            if edge is None:
                self.by_edge.pop(triple, None)
                self.edges.pop(triple, None)
                for end in triple[:2]:
                    self.edges_of.get(end, set()).discard(triple)
            else:
                self.edges[triple] = edge
        dirty = set(self._dirty_edges)
        self._dirty_keys.clear()
        self._dirty_edges.clear()
        return [self.nodes[k] for k in order], [self.edges[t] for t in self._edge_order(dirty)]

    def _edge_order(self, dirty: set[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
        """Edges by first occurrence: the last order, the touched edges placed again."""
        first = self.edge_first
        if self._moved:
            first.clear()
            self.edge_order = []
            dirty = set(self.edges)
        for t in dirty:
            first.pop(t, None)
        pos, by_edge = self.pos, self.by_edge
        for t in dirty:
            e = self.edges.get(t)
            if e is not None:
                p0 = e.provenance[0]
                first[t] = (pos[p0], by_edge[t][p0][0][0])
        kept = [t for t in self.edge_order if t in first and t not in dirty]
        self.edge_order = sorted(kept + [t for t in dirty if t in first], key=first.__getitem__)
        self._moved = False
        return self.edge_order


def assemble_open(passages: Sequence[TextPassage], records: Sequence[Extraction],
                  extractor: str, *, assembly: OpenAssembly | None = None,
                  places: Sequence[Pos] | None = None) -> KnowledgeGraph:
    """A new graph of ``passages`` (in order) merged from their ``records`` (see the module).

    Equal to ``KnowledgeGraph()`` + ``add_passage`` of each passage +
    ``OpenExtractor.add_to_graph(graph, passages, records, report)`` for an extractor named
    ``extractor``. With ``assembly`` (an :class:`OpenAssembly` the caller keeps between
    calls) only documents whose passages or records changed since the last call are
    resolved again, and only the keys and edges they touch recomputed. ``places`` gives
    each passage an increasing place that stays the same across calls (the lifecycle's
    document sequence numbers), so nothing kept is renumbered; default: the position.
    """
    asm = assembly if assembly is not None else OpenAssembly(extractor)
    docs: dict[str, list[tuple[Pos, TextPassage, Extraction]]] = {}
    where = places if places is not None else [(i, 0) for i in range(len(passages))]
    for pos, p, ex in zip(where, passages, records, strict=True):
        docs.setdefault(p.doc_id, []).append((pos, p, ex))
    _sync(asm, docs)
    nodes, edges = asm.records()
    g = KnowledgeGraph()
    for p in passages:
        g.add_passage(p.id, p.text, p.metadata)
    set_contents(g, nodes, edges, check=False)  # edges join assembled nodes by construction
    return g


def _sync(asm: OpenAssembly, docs: dict[str, list[tuple[Pos, TextPassage, Extraction]]]) -> None:
    """Bring ``asm`` to ``docs``: re-resolve documents whose passages or records changed.

    Kept documents are renumbered in place; if their relative order changed, every
    document is resolved again (the lifecycle never reorders, but a caller may).
    """
    sig = {d: [(p, ex) for _, p, ex in items] for d, items in docs.items()}
    keep = {d for d in docs if _same(asm.seen.get(d), sig[d])}
    new_pos = {p.id: pos for items in docs.values() for pos, p, _ in items}
    kept = [p.id for d in keep for p, _ in sig[d]]
    if sorted(kept, key=asm.pos.__getitem__) != sorted(kept, key=new_pos.__getitem__):
        keep = set()  # the kept passages were reordered: resolve everything again
    asm.update([d for d in asm.seen if d not in keep],
               [(d, docs[d]) for d in docs if d not in keep])
    for d in keep:
        asm.move(d, [pos for pos, _, _ in docs[d]])
    asm.seen = sig


def _same(old: list[tuple[TextPassage, Extraction]] | None,
          new: list[tuple[TextPassage, Extraction]]) -> bool:
    """The same passages with the very same record objects (a re-extraction is new)."""
    return old is not None and len(old) == len(new) and all(
        a[1] is b[1] and a[0] == b[0] for a, b in zip(old, new))
