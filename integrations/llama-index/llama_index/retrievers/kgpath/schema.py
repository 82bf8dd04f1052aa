"""LlamaIndex adapters for schema-guided retrieval (kgpath.methods.schema).

Reference: N. Balic, "Schema-Guided Graph Retrieval for Multi-Hop Reasoning", 2026.

The retriever itself is :class:`~.retrievers.SchemaGuidedRetriever`. This module holds the
other ways in, all delegating every decision to the framework-free core:

* :class:`SchemaDecomposeQueryTransform` - a ``BaseQueryTransform`` that decomposes a query
  with the schema. As a plain transform it can only hand *one* bundle on, so it returns the
  original query with the sub-questions as ``custom_embedding_strs`` (embedding retrievers
  then average them). :class:`SchemaSubQuestionRetriever` wraps ANY LlamaIndex retriever and
  runs it once per sub-question (threads / ``asyncio.gather``), merging by node id.
* :func:`graph_from_schema_llm_output` - turns ``SchemaLLMPathExtractor`` output
  (``EntityNode``/``Relation`` lists under ``KG_NODES_KEY``/``KG_RELATIONS_KEY`` in node
  metadata) into a kgpath graph bounded by the same schema; :func:`schema_to_llamaindex_kwargs`
  goes the other way, configuring ``SchemaLLMPathExtractor`` from a kgpath schema, so one schema
  drives extraction in LlamaIndex and retrieval in kgpath.

"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.graph_stores.types import (
    KG_NODES_KEY,
    KG_RELATIONS_KEY,
    EntityNode,
    Relation,
)
from llama_index.core.indices.query.query_transform.base import BaseQueryTransform
from llama_index.core.prompts import BasePromptTemplate, PromptTemplate
from llama_index.core.prompts.mixin import PromptDictType, PromptMixinType
from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore, QueryBundle
from llama_index.retrievers.kgpath._base import to_kgpath_llm as _to_llm

from kgpath.errors import ConfigError
from kgpath.graph import KnowledgeGraph
from kgpath.ingest.extract import ExtractionResult, TypedEntity, TypedTriple, assemble_graph
from kgpath.ingest.schema import EntityType, RelationType, Schema, type_key
from kgpath.methods.schema import (
    DecompositionPlan,
    SchemaDecomposer,
    aparallel_map,
    parallel_map,
)
from kgpath.methods.schema.merge import merge_sub_question_runs
from kgpath.prompts.schema import SCHEMA_DECOMPOSE_PROMPT

__all__ = [
    "SchemaDecomposeQueryTransform",
    "SchemaSubQuestionRetriever",
    "graph_from_schema_llm_output",
    "schema_to_llamaindex_kwargs",
]


def _template(prompt: BasePromptTemplate | str) -> str:
    text = prompt if isinstance(prompt, str) else prompt.get_template()
    if "{question}" not in text:
        raise ConfigError("a decompose prompt must contain the {question} variable")
    return text


# ---------------------------------------------------------------------- transform form
class SchemaDecomposeQueryTransform(BaseQueryTransform):
    """Decompose a query with the schema (LLM or LLM-free heuristic).

    :meth:`decompose`/:meth:`adecompose` return the validated
    :class:`~kgpath.methods.schema.DecompositionPlan`. As a query transform (``run``), the
    query string is kept and the sub-questions become ``custom_embedding_strs``; the plan is
    kept in :attr:`last_plan` and also stored under ``"kgpath_plan"`` in the ``metadata``
    dict passed to ``run`` (LlamaIndex swaps an empty dict for a new one, so pass a
    non-empty dict to read it there).
    """

    def __init__(
        self,
        schema: Schema,
        llm: Any = None,
        *,
        graph: KnowledgeGraph | None = None,
        max_sub_questions: int = 4,
        decompose_prompt: BasePromptTemplate | str | None = None,
    ) -> None:
        self._decomposer = SchemaDecomposer(
            schema, _to_llm(llm), graph=graph, max_sub_questions=max_sub_questions,
            prompt=_template(decompose_prompt) if decompose_prompt else SCHEMA_DECOMPOSE_PROMPT,
        )
        self.last_plan: DecompositionPlan | None = None

    @property
    def decomposer(self) -> SchemaDecomposer:
        """The kgpath decomposer."""
        return self._decomposer

    def decompose(self, query: str) -> DecompositionPlan:
        """Validated plan for ``query``."""
        self.last_plan = self._decomposer.decompose(query)
        return self.last_plan

    async def adecompose(self, query: str) -> DecompositionPlan:
        """Async :meth:`decompose`."""
        self.last_plan = await self._decomposer.adecompose(query)
        return self.last_plan

    def _get_prompts(self) -> PromptDictType:
        return {"decompose_prompt": PromptTemplate(self._decomposer.prompt)}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        if "decompose_prompt" in prompts:
            self._decomposer.prompt = _template(prompts["decompose_prompt"])

    def _run(self, query_bundle: QueryBundle, metadata: dict[str, Any]) -> QueryBundle:
        plan = self.decompose(query_bundle.query_str)
        metadata["kgpath_plan"] = plan
        return QueryBundle(
            query_str=query_bundle.query_str,
            custom_embedding_strs=[s.text for s in plan.sub_questions],
        )


class SchemaSubQuestionRetriever(BaseRetriever):
    """Feed schema-validated sub-questions to ANY LlamaIndex retriever and merge the results.

    Each sub-question is retrieved by ``retriever`` concurrently (a bounded thread pool for
    ``retrieve``, ``asyncio.gather`` with a semaphore for ``aretrieve``). Results are merged by
    node id: a node keeps its best score and gets ``kgpath_sub_questions`` (indices) and
    ``kgpath_sub_question_texts`` in its metadata; merged nodes are copies, the wrapped
    retriever's nodes are not mutated.

    ``type_metadata_key``: when set, nodes whose metadata value under that key resolves to an
    entity type of the schema that is NOT among the sub-question's involved node types are
    dropped (nodes without the key are kept). This is a post-retrieval filter - weaker than the
    core retriever's before-scoring filter, since the wrapped retriever already spent its
    top-k on them.
    """

    def __init__(
        self,
        retriever: BaseRetriever,
        transform: SchemaDecomposeQueryTransform,
        *,
        max_concurrency: int = 4,
        similarity_top_k: int | None = None,
        type_metadata_key: str | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        if not isinstance(retriever, BaseRetriever):
            raise ConfigError(f"retriever must be a LlamaIndex BaseRetriever, got {retriever!r}")
        if not isinstance(transform, SchemaDecomposeQueryTransform):
            raise ConfigError(
                f"transform must be a SchemaDecomposeQueryTransform, got {transform!r}")
        if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int) or (
            max_concurrency < 1
        ):
            raise ConfigError(f"max_concurrency must be an int >= 1, got {max_concurrency!r}")
        self._retriever = retriever
        self._transform = transform
        self._max_concurrency = max_concurrency
        self._top_k = similarity_top_k
        self._type_key = type_metadata_key
        self.last_plan: DecompositionPlan | None = None
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def _get_prompt_modules(self) -> PromptMixinType:
        return {"query_transform": self._transform}

    def _typed(self, nodes: list[NodeWithScore], types: tuple[str, ...]) -> list[NodeWithScore]:
        if self._type_key is None or not types:
            return nodes
        schema = self._transform.decomposer.schema
        keep = []
        for n in nodes:
            raw = n.node.metadata.get(self._type_key)
            t = schema.resolve("entity", raw) if isinstance(raw, str) else None
            if t is None or t in types:
                keep.append(n)
        return keep

    def _merge(
        self, plan: DecompositionPlan, runs: list[list[NodeWithScore]]
    ) -> list[NodeWithScore]:
        self.last_plan = plan
        typed = [self._typed(nodes, plan.sub_questions[i].types.nodes)
                 for i, nodes in enumerate(runs)]
        out = []
        for n, tags in merge_sub_question_runs(typed, key=lambda n: n.node.node_id,
                                               score=_score):
            node = n.node.model_copy(deep=True)
            node.metadata["kgpath_sub_questions"] = tags
            node.metadata["kgpath_sub_question_texts"] = [plan.sub_questions[i].text
                                                          for i in tags]
            node.excluded_embed_metadata_keys = list(dict.fromkeys(
                [*node.excluded_embed_metadata_keys, "kgpath_sub_questions",
                 "kgpath_sub_question_texts"]))
            node.excluded_llm_metadata_keys = list(dict.fromkeys(
                [*node.excluded_llm_metadata_keys, "kgpath_sub_questions"]))
            out.append(NodeWithScore(node=node, score=n.score))
        return out[: self._top_k] if self._top_k is not None else out

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        plan = self._transform.decompose(query_bundle.query_str)
        runs = parallel_map(lambda sq: self._retriever.retrieve(QueryBundle(sq.text)),
                            list(plan.sub_questions), max_workers=self._max_concurrency)
        return self._merge(plan, [r for r, _, _ in runs])

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        plan = await self._transform.adecompose(query_bundle.query_str)

        async def one(sq: Any) -> list[NodeWithScore]:
            return await self._retriever.aretrieve(QueryBundle(sq.text))

        runs = await aparallel_map(one, list(plan.sub_questions), limit=self._max_concurrency)
        return self._merge(plan, [r for r, _, _ in runs])


def _score(n: NodeWithScore) -> float:
    return n.score if n.score is not None else float("-inf")


# ---------------------------------------------------------------------- extraction bridge

def llm_label(name: str) -> str:
    """A type name as LlamaIndex's ``SchemaLLMPathExtractor`` writes it (``BORN_IN``)."""
    return name.replace(" ", "_").upper()


def schema_triples(schema: Schema) -> list[tuple[str, str, str]]:
    """Every allowed ``(head, relation, tail)`` of ``schema`` in :func:`llm_label` form.

    A relation without a head or tail restriction expands to every entity type.
    """
    ents = [e.name for e in schema.entities]
    return [(llm_label(h), llm_label(r.name), llm_label(t))
            for r in schema.relations for h in r.head or ents for t in r.tail or ents]


def permissive_schema(entity_types: Iterable[str], relations: Iterable[str], *,
                      name: str, where: str) -> Schema:
    """A schema of every label seen with unrestricted relations (conversion, no bounding).

    Raises :class:`ConfigError` (mentioning ``where``) when no entity type was seen.
    """
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


def schema_to_llamaindex_kwargs(schema: Schema) -> dict[str, Any]:
    """``SchemaLLMPathExtractor`` keyword arguments that enforce this kgpath schema.

    Returns ``possible_entities`` / ``possible_relations`` (``Literal`` types of the labels,
    written the way LlamaIndex normalises them: upper case, ``_`` for spaces),
    ``kg_validation_schema`` (every allowed ``(head, relation, tail)``; a relation with no
    head/tail restriction expands to every entity type), ``possible_entity_props`` (attribute
    names, or ``None``) and ``strict=True``.
    """
    ents = tuple(llm_label(e.name) for e in schema.entities)
    kwargs: dict[str, Any] = {
        "possible_entities": Literal[ents],  # type: ignore[valid-type]
        "kg_validation_schema": schema_triples(schema),
        "strict": True,
        "possible_entity_props": [a.name for a in schema.attributes] or None,
    }
    if schema.relations:
        kwargs["possible_relations"] = Literal[  # type: ignore[valid-type]
            tuple(llm_label(r.name) for r in schema.relations)]
    return kwargs


def graph_from_schema_llm_output(
    nodes: Sequence[BaseNode],
    schema: Schema | None = None,
    *,
    graph: KnowledgeGraph | None = None,
    strict: bool = True,
) -> ExtractionResult:
    """Build a kgpath graph from ``SchemaLLMPathExtractor`` output, bounded by ``schema``.

    For each text node: its ``KG_NODES_KEY`` entities (``EntityNode``: ``label`` -> type,
    ``name``, ``properties`` -> attributes) and ``KG_RELATIONS_KEY`` relations (``Relation``:
    ``label``, ``source_id``, ``target_id``) become typed records whose provenance is the
    text node's id; the text node becomes a passage. Property keys that merely copy the text
    node's own metadata (LlamaIndex copies chunk metadata into every property dict) are not
    treated as attributes. Labels like ``BORN_IN`` resolve to ``born in`` (case and ``_``
    folded). Everything then goes through :func:`kgpath.ingest.extract.assemble_graph`, the same
    bounding used for kgpath's own extractor.

    ``schema=None`` accepts every label seen (a permissive schema named ``"from-llamaindex"``
    with unrestricted relations) - no bounding, only conversion.
    """
    passages: list[tuple[str, str]] = []
    entities: list[TypedEntity] = []
    triples: list[TypedTriple] = []
    for tn in nodes:
        if not isinstance(tn, BaseNode):
            raise ConfigError(f"expected LlamaIndex nodes, got {type(tn).__name__}")
        passages.append((tn.node_id, tn.get_content(metadata_mode=MetadataMode.NONE)))
        _read_extracted(tn, entities, triples)
    if schema is None:
        schema = permissive_schema(
            [e.type for e in entities] + [x for t in triples for x in (t.head_type, t.tail_type)],
            [t.relation for t in triples], name="from-llamaindex",
            where=f"the nodes' metadata ({KG_NODES_KEY!r})")
    res = assemble_graph(schema, entities, triples, passages=passages, graph=graph,
                         strict=strict)
    trace = dict(res.trace)
    trace.update(extractor="llama_index.SchemaLLMPathExtractor", passages=len(passages))
    return dataclasses.replace(res, trace=trace)


def _read_extracted(tn: BaseNode, entities: list[TypedEntity],
                    triples: list[TypedTriple]) -> None:
    """Append one text node's extracted entities and relations (provenance: the node)."""
    pid = tn.node_id
    chunk_meta = {k: v for k, v in tn.metadata.items()
                  if k not in (KG_NODES_KEY, KG_RELATIONS_KEY)}

    def own(props: dict[str, Any]) -> dict[str, Any]:  # drop copies of the chunk metadata
        return {k: v for k, v in props.items() if not (k in chunk_meta and chunk_meta[k] == v)}

    by_id: dict[str, EntityNode] = {}
    for en in tn.metadata.get(KG_NODES_KEY, []) or []:
        if isinstance(en, EntityNode):  # ChunkNode or other labelled nodes carry no entity
            by_id[en.id] = en
            entities.append(TypedEntity(name=en.name, type=en.label,
                                        attributes=own(en.properties), source=pid))
    for rel in tn.metadata.get(KG_RELATIONS_KEY, []) or []:
        if not isinstance(rel, Relation):
            continue
        h, t = by_id.get(rel.source_id), by_id.get(rel.target_id)
        triples.append(TypedTriple(
            head=h.name if h else rel.source_id, head_type=h.label if h else "",
            relation=rel.label, tail=t.name if t else rel.target_id,
            tail_type=t.label if t else "", source=pid, properties=own(rel.properties),
        ))
