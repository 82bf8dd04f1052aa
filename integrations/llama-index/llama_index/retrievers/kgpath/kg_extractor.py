"""kgpath's offline spaCy extractor as a LlamaIndex ``kg_extractors`` component.

:class:`KgpathSpacyExtractor` is a ``TransformComponent`` for
``PropertyGraphIndex(kg_extractors=[...])``: it reads each node's text with
:class:`kgpath.ingest.SpacyExtractor` (no LLM, no network) and adds the entities (typed:
``PERSON``, ``GPE``, ``Concept``, ...) and relations to the node's metadata under
``KG_NODES_KEY`` / ``KG_RELATIONS_KEY``, after what earlier extractors put there, as
LlamaIndex's own extractors do. The entities and relations of a call are those
:func:`kgpath.ingest.graph_from_documents` builds from the same texts (one passage per
node, the node id as passage id), carrying kgpath's properties (``kgpath_id``, a
relation's ``kgpath_provenance``, ``weight``, ``kgpath_type``) so that
:func:`~llama_index.retrievers.kgpath.knowledge_graph_from_property_graph_store` reads the
store back into the same :class:`~kgpath.KnowledgeGraph`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.graph_stores.types import (
    KG_NODES_KEY,
    KG_RELATIONS_KEY,
    EntityNode,
    Relation,
)
from llama_index.core.schema import BaseNode, MetadataMode, TransformComponent
from llama_index.retrievers.kgpath.pg_conventions import (
    entity_names,
    entity_properties,
    relation_properties,
)

from kgpath._progress import progress_if
from kgpath.errors import ConfigError
from kgpath.graph import KnowledgeGraph
from kgpath.ingest import IngestReport, SpacyExtractor, TextPassage

__all__ = ["KgpathSpacyExtractor"]

_NO_TYPE = "entity"


class KgpathSpacyExtractor(TransformComponent):
    """Entities and relations from kgpath's offline spaCy extractor, for ``PropertyGraphIndex``.

    Parameters
    ----------
    model
        spaCy pipeline name (``pip install 'kgpath[nlp]'``; default ``en_core_web_sm``).
    cooccurrence, concepts, terms, max_path
        As :class:`kgpath.ingest.SpacyExtractor`.
    batch_size
        Texts per ``nlp.pipe`` batch.
    num_workers
        Slices of the nodes parsed concurrently by :meth:`acall`, each in a worker thread
        (spaCy is CPU-bound: this helps while other work waits). ``__call__`` reads all
        nodes in one pass; both give the same result.

    Examples
    --------
    >>> from llama_index.core import PropertyGraphIndex  # doctest: +SKIP
    >>> index = PropertyGraphIndex.from_documents(  # doctest: +SKIP
    ...     docs, kg_extractors=[KgpathSpacyExtractor()], embed_model=..., llm=MockLLM())
    """

    model: str = Field(default="en_core_web_sm", description="spaCy pipeline name.")
    cooccurrence: bool = Field(default=True)
    concepts: bool = Field(default=True)
    terms: bool = Field(default=True)
    max_path: int = Field(default=4)
    batch_size: int = Field(default=32)
    num_workers: int = Field(default=4)
    _extractor: SpacyExtractor | None = PrivateAttr(default=None)

    def __init__(self, model: str = "en_core_web_sm", *, cooccurrence: bool = True,
                 concepts: bool = True, terms: bool = True, max_path: int | None = None,
                 batch_size: int = 32, num_workers: int = 4) -> None:
        from kgpath.ingest.spacy_extractor import MAX_PATH

        if not isinstance(model, str) or not model:
            raise ConfigError(f"model must be a spaCy pipeline name, got {model!r}")
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1:
            raise ConfigError(f"num_workers must be a positive int, got {num_workers!r}")
        path = MAX_PATH if max_path is None else max_path
        core = SpacyExtractor(model, cooccurrence=cooccurrence, concepts=concepts,
                              terms=terms, max_path=path, batch_size=batch_size)
        fields: dict[str, Any] = {  # TransformComponent's __init__ takes the pydantic fields
            "model": model, "cooccurrence": core.cooccurrence, "concepts": core.concepts,
            "terms": core.terms, "max_path": core.max_path, "batch_size": core.batch_size,
            "num_workers": num_workers}
        super().__init__(**fields)
        self._extractor = core

    @classmethod
    def class_name(cls) -> str:
        """LlamaIndex's serialisation name."""
        return "KgpathSpacyExtractor"

    @property
    def extractor(self) -> SpacyExtractor:
        """The core extractor (rebuilt from the fields after unpickling or ``from_dict``)."""
        if self._extractor is None:
            self._extractor = SpacyExtractor(
                self.model, cooccurrence=self.cooccurrence, concepts=self.concepts,
                terms=self.terms, max_path=self.max_path, batch_size=self.batch_size)
        return self._extractor

    def __getstate__(self) -> dict[Any, Any]:
        state = super().__getstate__()
        private = dict(state.get("__pydantic_private__") or {})
        private["_extractor"] = None  # a loaded spaCy pipeline is not shipped; rebuilt on use
        state["__pydantic_private__"] = private
        return state

    def __call__(self, nodes: Sequence[BaseNode], show_progress: bool = False,
                 **kwargs: Any) -> Sequence[BaseNode]:
        """Add kgpath's entities and relations to every node's KG metadata.

        ``show_progress``: a bar over the ``batch_size`` batches.
        """
        todo = list(nodes)
        graph, live = self._passages(todo)
        size = self.batch_size
        slices = progress_if([live[i:i + size] for i in range(0, len(live), size)],
                             show_progress, "Extracting entities and relations (spaCy)")
        ex = self.extractor
        return self._attach(todo, graph, live, [r for s in slices for r in ex.extract_passages(s)])

    async def acall(self, nodes: Sequence[BaseNode], show_progress: bool = False,
                    **kwargs: Any) -> Sequence[BaseNode]:
        """Async :meth:`__call__`: ``num_workers`` slices parsed at once, each in a thread.

        The slices' readings are merged into one graph, so the result equals
        :meth:`__call__`'s.
        """
        todo = list(nodes)
        graph, live = self._passages(todo)
        size = max(1, -(-len(live) // self.num_workers))
        slices = [live[i:i + size] for i in range(0, len(live), size)]
        ex = self.extractor
        done = await asyncio.gather(*(ex.aextract_passages(s) for s in slices))
        return self._attach(todo, graph, live, [r for part in done for r in part])

    def graph_for(self, nodes: Sequence[BaseNode]) -> KnowledgeGraph:
        """The :class:`~kgpath.KnowledgeGraph` kgpath builds from ``nodes`` (one passage each).

        Raises
        ------
        ConfigError
            For two nodes with one id (naming it).
        """
        graph, live = self._passages(list(nodes))
        self._merge(graph, live, self.extractor.extract_passages(live))
        return graph

    def _passages(self, nodes: list[BaseNode]) -> tuple[KnowledgeGraph, list[TextPassage]]:
        graph = KnowledgeGraph()
        live: list[TextPassage] = []
        for n in nodes:
            if n.node_id in graph.passages:
                raise ConfigError(f"node id {n.node_id!r} is given twice")
            text = n.get_content(metadata_mode=MetadataMode.NONE)
            graph.add_passage(n.node_id, text, {"doc_id": n.node_id})
            if text.strip():
                live.append(TextPassage(n.node_id, text, n.node_id))
        return graph, live

    def _merge(self, graph: KnowledgeGraph, live: list[TextPassage], records: list[Any]) -> None:
        if live:
            self.extractor.add_to_graph(graph, live, records, IngestReport())

    def _attach(self, nodes: list[BaseNode], graph: KnowledgeGraph, live: list[TextPassage],
                records: list[Any]) -> list[BaseNode]:
        self._merge(graph, live, records)
        names = entity_names(graph)
        found: dict[str, tuple[list[EntityNode], list[Relation]]] = {
            n.node_id: ([], []) for n in nodes}
        for node in graph.nodes:
            props = entity_properties(node, names[node.id])
            # an entity's sources are the chunks that mention it (PropertyGraphIndex's
            # MENTIONS relations): exact across inserts, while a store upsert would keep only
            # the last call's list
            props.pop("kgpath_provenance", None)
            entity = EntityNode(name=names[node.id], label=node.type or _NO_TYPE,
                                properties=props)
            for pid in dict.fromkeys(node.provenance):
                if pid in found:
                    found[pid][0].append(entity)
        for edge in graph.edges:
            rel = Relation(label=edge.relation, source_id=_entity_id(names[edge.source]),
                           target_id=_entity_id(names[edge.target]),
                           properties=relation_properties(edge))
            for pid in dict.fromkeys(edge.provenance):
                if pid in found:
                    found[pid][1].append(rel)
        for n in nodes:
            entities, relations = found[n.node_id]
            n.metadata[KG_NODES_KEY] = [*n.metadata.pop(KG_NODES_KEY, []), *entities]
            n.metadata[KG_RELATIONS_KEY] = [*n.metadata.pop(KG_RELATIONS_KEY, []), *relations]
        return nodes


def _entity_id(name: str) -> str:
    """LlamaIndex's ``EntityNode.id`` for ``name``."""
    return EntityNode(name=name).id
