"""Framework-free helpers the LangChain and LlamaIndex adapters share.

The adapters only convert between their framework's objects and these helpers' plain
values, so a rule (the gate's gamma warning, the ``kgpath_*`` gate keys, PathRAG's Eq. 6
prompt order, merging sub-question results, prompt variable names) is written once.

* Sufficiency gate: :func:`make_gate`, :func:`gate_metadata` (policy in
  :mod:`kgpath.policies.sufficiency`).
* Scores and order: :func:`first_score`, :func:`checked_score`, :func:`ascending_order`.
* Schema-guided recipes: :func:`merge_sub_question_runs`, :func:`llm_label`,
  :func:`schema_triples`, :func:`permissive_schema`.
* Prompts: :func:`attr_owner`, :func:`to_core_template`.
* Documents: :class:`FromTextsMixin`.
* Property graphs (LlamaIndex's store conventions, read by attribute):
  :class:`PropertyGraphReader`, :func:`entity_names`, :func:`entity_properties`,
  :func:`relation_properties`.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from kgpath.errors import ConfigError, GraphError
from kgpath.evidence import METADATA_PREFIX, jsonable
from kgpath.graph import KnowledgeGraph
from kgpath.policies.sufficiency import SufficiencyGate, SufficiencyGateConfig

__all__ = [
    "GATE_FIELDS",
    "TRIPLET_SOURCE_KEY",
    "FromTextsMixin",
    "PropertyGraphReader",
    "ascending_order",
    "attr_owner",
    "checked_score",
    "entity_names",
    "entity_properties",
    "first_score",
    "gate_metadata",
    "llm_label",
    "make_gate",
    "merge_sub_question_runs",
    "permissive_schema",
    "progress_if",
    "relation_properties",
    "schema_triples",
    "to_core_template",
]

logger = logging.getLogger(__name__)
T = TypeVar("T")

#: :class:`SufficiencyGateConfig` fields an adapter exposes.
GATE_FIELDS = ("gamma", "epsilon", "top_k", "mode", "fallback_k", "score_missing")


def progress_if(items: Iterable[T], show: bool, desc: str) -> Iterable[T]:
    """``items``, behind a tqdm bar when ``show`` (the adapters' ``show_progress``)."""
    if not show:
        return items
    from tqdm.auto import tqdm

    return tqdm(items, desc=desc, leave=False)  # type: ignore[no-any-return]


# ====================================================================== sufficiency gate
def make_gate(values: Mapping[str, Any], embedder: Any = None, *,
              stacklevel: int = 3) -> SufficiencyGate:
    """The core gate from the :data:`GATE_FIELDS` among ``values`` (others use defaults).

    Warns when ``gamma < 1``: ``N_eff >= 1`` always (Lemma A.1), so every list is
    insufficient and the fallback always runs.
    """
    cfg = SufficiencyGateConfig(**{n: values[n] for n in GATE_FIELDS if n in values})
    if cfg.gamma < 1:
        warnings.warn(f"gamma={cfg.gamma} < 1: N_eff >= 1 always, so every list is "
                      "insufficient and the fallback always runs", UserWarning,
                      stacklevel=stacklevel)
    return SufficiencyGate(cfg, embedder=embedder)


def gate_metadata(marks: Mapping[str, Any]) -> dict[str, Any]:
    """The gate's marks of one item as ``kgpath_*`` metadata (JSON-safe values)."""
    return {METADATA_PREFIX + k: jsonable(v) for k, v in marks.items()}


# ====================================================================== scores and order
def first_score(metadata: Mapping[str, Any], keys: Sequence[str]) -> float | None:
    """The first numeric value among ``keys`` of ``metadata`` (non-numbers skipped)."""
    for key in keys:
        v = metadata.get(key)
        if isinstance(v, (int, float, np.number)) and not isinstance(v, bool):
            return float(v)
    return None


def checked_score(value: Any, what: str) -> float:
    """``value`` as a float (``None``: ``-inf``); :class:`ConfigError` naming ``what`` else."""
    if value is None:
        return float("-inf")
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) \
            or math.isnan(value):
        raise ConfigError(f"{what} = {value!r} is not a number")
    return float(value)


def ascending_order(items: Sequence[T], scores: Sequence[float],
                    top_n: int | None = None) -> list[T]:
    """``items`` in ascending score, the best last: PathRAG's Eq. 6 prompt order.

    Among equal scores the item ranked earlier ends up later; ``top_n`` keeps the ``n``
    highest scores.

    >>> ascending_order(["a", "b", "c"], [0.9, 0.1, 0.9], top_n=2)
    ['c', 'a']
    """
    if top_n is not None and (isinstance(top_n, bool) or not isinstance(top_n, int)
                              or top_n < 0):
        raise ConfigError(f"top_n must be None or an int >= 0, got {top_n!r}")
    keyed = [(s, -i, x) for i, (s, x) in enumerate(zip(scores, items, strict=True))]
    if top_n is not None:
        keyed = sorted(keyed, key=lambda t: (t[0], t[1]), reverse=True)[:top_n]
    keyed.sort(key=lambda t: (t[0], t[1]))
    return [x for _, _, x in keyed]


# ====================================================================== schema recipes
def merge_sub_question_runs(runs: Iterable[Iterable[T]], key: Callable[[T], str],
                            score: Callable[[T], float]) -> list[tuple[T, list[int]]]:
    """Merge per-sub-question results: one item per key, its best score, its sub-questions.

    Returns ``(item, indices)`` pairs: the best-scored item of each key (the first on a
    tie) with the 0-based indices of the runs that returned it, ordered by score, then
    first appearance.

    >>> merge_sub_question_runs([["a", "b"], ["b"]], key=str, score=lambda x: 0.0)
    [('a', [0]), ('b', [0, 1])]
    """
    best: dict[str, T] = {}
    tags: dict[str, list[int]] = {}
    for i, items in enumerate(runs):
        for item in items:
            k = key(item)
            if i not in tags.setdefault(k, []):
                tags[k].append(i)
            if k not in best or score(item) > score(best[k]):
                best[k] = item
    order = {k: n for n, k in enumerate(tags)}
    ranked = sorted(best.items(), key=lambda kv: (-score(kv[1]), order[kv[0]]))
    return [(item, tags[k]) for k, item in ranked]


def llm_label(name: str) -> str:
    """A type name as LlamaIndex's ``SchemaLLMPathExtractor`` writes it (``BORN_IN``)."""
    return name.replace(" ", "_").upper()


def schema_triples(schema: Any) -> list[tuple[str, str, str]]:
    """Every allowed ``(head, relation, tail)`` of ``schema`` in :func:`llm_label` form.

    A relation without a head or tail restriction expands to every entity type.
    """
    ents = [e.name for e in schema.entities]
    return [(llm_label(h), llm_label(r.name), llm_label(t))
            for r in schema.relations for h in r.head or ents for t in r.tail or ents]


def permissive_schema(entity_types: Iterable[str], relations: Iterable[str], *,
                      name: str, where: str) -> Any:
    """A schema of every label seen with unrestricted relations (conversion, no bounding).

    Raises :class:`ConfigError` (mentioning ``where``) when no entity type was seen.
    """
    from kgpath.ingest.schema import EntityType, RelationType, Schema, type_key

    labels: dict[str, str] = {}
    for lab in entity_types:
        if lab:
            labels.setdefault(type_key(lab), lab)
    rels: dict[str, str] = {}
    for rel in relations:
        rels.setdefault(type_key(rel), rel)
    if not labels:
        raise ConfigError(f"no typed entities found in {where}; pass schema= or run the "
                          "extractor first")
    return Schema(name=name, entities=tuple(EntityType(name=x) for x in labels.values()),
                  relations=tuple(RelationType(name=x) for x in rels.values()))


# ====================================================================== prompts
def attr_owner(root: Any, path: str) -> tuple[Any, str]:
    """The object holding the dotted attribute ``path`` of ``root``, and its last name."""
    owner, *rest, attr = [root, *path.split(".")]
    for name in rest:
        owner = getattr(owner, name)
    return owner, attr


def to_core_template(text: str, names: Mapping[str, str], what: str) -> str:
    """A framework template with its variables renamed to the core's (``names``: fw -> core).

    Raises :class:`ConfigError` naming ``what`` when a core variable is missing.
    """
    for fw_var, core_var in names.items():
        text = text.replace("{" + fw_var + "}", "{" + core_var + "}")
    missing = [v for v in names.values() if "{" + v + "}" not in text]
    if missing:
        raise ConfigError(f"{what} must use the variables {sorted(names)} "
                          f"(or {sorted(names.values())}); missing {missing}")
    return text


# ====================================================================== documents
class FromTextsMixin:
    """``from_texts(texts, **kwargs)``: the retriever's ``from_documents`` for strings."""

    @classmethod
    def from_texts(cls, texts: Iterable[str], **kwargs: Any) -> Any:
        """:meth:`from_documents` for plain strings."""
        return cls.from_documents(list(texts), **kwargs)  # type: ignore[attr-defined]


# ====================================================================== property graphs
#: LlamaIndex's property naming an entity's or relation's source chunk.
TRIPLET_SOURCE_KEY = "triplet_source_id"
_RESERVED = frozenset({"kgpath_id", "kgpath_name", "kgpath_provenance", "kgpath_type",
                       "description", TRIPLET_SOURCE_KEY})
_NO_TYPE = ("entity", "Entity")


def _props(p: Mapping[str, Any], drop: Iterable[str] = ()) -> dict[str, Any]:
    skip = _RESERVED | set(drop)
    return {k: v for k, v in p.items() if k not in skip and v is not None}


def _prov_from(p: Mapping[str, Any]) -> list[str]:
    prov = p.get("kgpath_provenance")
    if isinstance(prov, (list, tuple)):
        return [str(x) for x in prov]
    src = p.get(TRIPLET_SOURCE_KEY)
    return [str(src)] if src else []


class PropertyGraphReader:
    """Accumulates a property graph's entities, relations and chunks, then builds the graph.

    Conventions: an entity's ``kgpath_id``/``kgpath_name`` properties (else its id/name),
    ``description`` or ``text`` as node text, label ``entity`` for no type,
    ``kgpath_provenance`` (else ``triplet_source_id``, its relations' sources and the
    chunks that mention it) as provenance; relations' ``weight``, ``description`` and
    ``kgpath_type``. A relation touching a chunk is a mention.
    """

    def __init__(self) -> None:
        self.entities: list[tuple[str, str, str, str | None, dict[str, Any], list[str]]] = []
        self.exact_prov: set[str] = set()  # written by kgpath: provenance is complete
        self.embeddings: dict[str, Sequence[float]] = {}
        self.alias: dict[str, str] = {}  # store entity id -> kgpath id
        self.chunks: dict[str, tuple[str, dict[str, Any]]] = {}
        self.edges: list[tuple[str, str, str, str, str | None, float, list[str],
                               dict[str, Any]]] = []
        self.mentions: list[tuple[str, str]] = []  # (chunk id, entity alias)

    def entity(self, alias: str, name: str | None, label: str | None,
               properties: Mapping[str, Any], embedding: Sequence[float] | None = None) -> None:
        """Add one entity (``alias``: the store's id for it)."""
        p = dict(properties)
        kid = str(p.get("kgpath_id") or alias)
        name = str(p.get("kgpath_name") or name or kid)
        text = p.get("description") or p.get("text") or ""
        typ = None if label in _NO_TYPE or not label else str(label)
        self.alias[alias] = kid
        self.alias.setdefault(kid, kid)
        if isinstance(p.get("kgpath_provenance"), (list, tuple)):
            self.exact_prov.add(kid)
        self.entities.append((kid, name, str(text), typ, _props(p), _prov_from(p)))
        if embedding is not None:
            self.embeddings[kid] = embedding

    def relation(self, source: str, target: str, label: str,
                 properties: Mapping[str, Any]) -> None:
        """Add one relation (a mention when one end is a chunk already read)."""
        s, t = str(source), str(target)
        if s in self.chunks and t not in self.chunks:
            self.mentions.append((s, t))
            return
        if t in self.chunks:
            self.mentions.append((t, s))
            return
        p = dict(properties)
        w = p.get("weight", 1.0)
        self.edges.append((s, t, str(label), str(p.get("description") or ""),
                           p.get("kgpath_type"), 1.0 if w is None else float(w),
                           _prov_from(p), _props(p, ("weight",))))

    def _extra_provenance(self) -> dict[str, list[str]]:
        extra: dict[str, list[str]] = {}
        for cid, alias in self.mentions:
            extra.setdefault(self.alias.get(alias, alias), []).append(cid)
        # LlamaIndex keeps one source chunk per entity (the last one seen); the chunks of its
        # relations are sources too, as in KnowledgeGraph.from_triples
        for s, t, *_rest, prov, _meta in self.edges:
            for end in (s, t):
                kid = self.alias.get(end)
                if kid is not None and kid not in self.exact_prov:
                    extra.setdefault(kid, []).extend(prov)
        return extra

    def build(self, *, include_chunks: bool, embeddings: bool) -> KnowledgeGraph:
        """The graph, in read order (``embeddings``: use the stored ones, all required)."""
        g = KnowledgeGraph()
        if include_chunks:
            for cid, (text, meta) in self.chunks.items():
                g.add_passage(cid, text, meta)
        extra = self._extra_provenance()
        for kid, name, text, typ, meta, prov in self.entities:
            merged = list(dict.fromkeys(prov + extra.get(kid, []))) if include_chunks else []
            g.add_node(kid, name=name, text=text, type=typ, metadata=meta, provenance=merged)
        dangling = 0
        for s, t, rel, text, typ, w, prov, meta in self.edges:
            src, dst = self.alias.get(s), self.alias.get(t)
            if src is None or dst is None:
                dangling += 1
                continue
            g.add_edge(src, dst, relation=rel, text=text, type=typ, weight=w,
                       provenance=prov if include_chunks else (), metadata=meta)
        if dangling:
            logger.warning("skipped %d relation(s) whose end is not an entity of the store",
                           dangling)
        if embeddings and self.embeddings:
            if len(self.embeddings) != len(g):
                raise GraphError(
                    f"only {len(self.embeddings)} of {len(g)} entities carry an embedding; "
                    "pass embeddings=False to let kgpath embed the nodes")
            g.vectors.set(self.embeddings)
        return g


def entity_names(graph: KnowledgeGraph) -> dict[str, str]:
    """Map kgpath id -> property-graph entity name: the node name when unique, else the id.

    Names are unique after LlamaIndex's id rule (``"`` read as a space).
    """
    counts: dict[str, int] = {}
    for n in graph.nodes:
        key = n.name.replace('"', " ")
        counts[key] = counts.get(key, 0) + 1
    names: dict[str, str] = {}
    used: dict[str, str] = {}
    for n in graph.nodes:
        cand = n.name if counts[n.name.replace('"', " ")] == 1 else n.id
        if cand.replace('"', " ") in used:
            cand = f"{n.name} [{n.id}]"
        key = cand.replace('"', " ")
        if key in used:
            raise GraphError(f"cannot give node {n.id!r} a unique LlamaIndex entity name "
                             f"({cand!r} is taken by {used[key]!r})")
        used[key] = n.id
        names[n.id] = cand
    return names


def _with_provenance(props: dict[str, Any], text: str, provenance: Sequence[str]
                     ) -> dict[str, Any]:
    if text:
        props["description"] = text
    if provenance:
        props["kgpath_provenance"] = list(provenance)
        props[TRIPLET_SOURCE_KEY] = provenance[0]
    return props


def entity_properties(node: Any, name: str) -> dict[str, Any]:
    """A kgpath node's property-graph properties (``name``: its entity name there)."""
    props: dict[str, Any] = {**node.metadata, "kgpath_id": node.id}
    if name != node.name:
        props["kgpath_name"] = node.name
    return _with_provenance(props, node.text, node.provenance)


def relation_properties(edge: Any) -> dict[str, Any]:
    """A kgpath edge's property-graph properties."""
    props: dict[str, Any] = {**edge.metadata, "weight": edge.weight}
    props = _with_provenance(props, edge.text, ())
    if edge.type is not None:
        props["kgpath_type"] = edge.type
    return _with_provenance(props, "", edge.provenance)
