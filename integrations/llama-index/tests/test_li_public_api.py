"""llama-index-retrievers-kgpath's public names are pinned: changing them is deliberate."""

from __future__ import annotations

import llama_index.retrievers.kgpath as li_kgpath

PUBLIC = {
    "KgpathRetriever", "KgpathQueryBundle", "C2RAGRetriever", "GraphAugmentedRetriever",
    "KGTraversalRetriever",
    "PathConstrainedRetriever", "PathRAGRetriever", "SchemaGuidedRetriever",
    "PCRSubRetriever", "PathRAGSubRetriever",
    "PathOrderPostprocessor", "SufficiencyPostprocessor", "pathrag_query_engine",
    "C2RAG_EVIDENCE_PROMPT", "C2RAG_PLANNER_PROMPT", "PATHRAG_KEYWORD_TEMPLATE",
    "PATHRAG_QA_TEMPLATE",
    "SchemaDecomposeQueryTransform", "SchemaSubQuestionRetriever",
    "graph_from_schema_llm_output", "schema_to_llamaindex_kwargs",
    "knowledge_graph_from_property_graph_store", "knowledge_graph_to_property_graph_store",
    "evidence_to_node",
    "LlamaIndexEmbedder", "LlamaIndexLLM", "KgpathEmbedding", "KgpathIndex",
    "KgpathSpacyExtractor",
}


def test_all_is_pinned() -> None:
    assert set(li_kgpath.__all__) == PUBLIC
    assert len(li_kgpath.__all__) == len(PUBLIC)  # no duplicates
    for name in li_kgpath.__all__:
        assert getattr(li_kgpath, name) is not None


def test_every_retriever_has_the_shared_constructors() -> None:
    for name in ("C2RAGRetriever", "GraphAugmentedRetriever", "KGTraversalRetriever",
    "PathConstrainedRetriever",
                 "PathRAGRetriever", "SchemaGuidedRetriever"):
        cls = getattr(li_kgpath, name)
        assert issubclass(cls, li_kgpath.KgpathRetriever)
        for ctor in ("from_graph", "from_documents", "from_texts"):
            assert callable(getattr(cls, ctor)), (name, ctor)


def test_from_texts_calls_from_documents_with_a_list() -> None:
    from kgpath.recipes import FromTextsMixin

    class R(FromTextsMixin):
        @classmethod
        def from_documents(cls, documents: object, **kw: object) -> tuple[object, object]:
            return documents, kw

    assert R.from_texts(iter(["a", "b"]), k=1) == (["a", "b"], {"k": 1})
