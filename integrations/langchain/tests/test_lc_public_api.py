"""langchain-kgpath's public names are pinned: adding or removing one is a deliberate act."""

from __future__ import annotations

import langchain_kgpath

PUBLIC = {
    "KgpathRetriever", "C2RAGRetriever", "GraphAugmentedRetriever", "KGTraversalRetriever",
    "PathConstrainedRetriever",
    "PathRAGRetriever", "SchemaGuidedRetriever",
    "PathOrderCompressor", "SufficiencyCompressor", "SufficiencyFallbackRetriever",
    "C2RAG_CHAT_PROMPT", "PATHRAG_CHAT_PROMPT", "answer_prompt", "decompose_runnable",
    "format_documents", "format_evidence_blocks", "format_paths",
    "merge_sub_question_documents",
    "knowledge_graph_from_entity_graph", "knowledge_graph_from_graph_documents",
    "as_kgpath_embedder", "as_kgpath_llm", "evidence_to_document", "__version__",
    "LangChainEmbedder", "LangChainLLM", "KgpathEmbeddings", "KgpathGraphStore",
}


def test_all_is_pinned() -> None:
    assert set(langchain_kgpath.__all__) == PUBLIC
    assert len(langchain_kgpath.__all__) == len(PUBLIC)  # no duplicates
    for name in langchain_kgpath.__all__:
        assert getattr(langchain_kgpath, name) is not None


def test_every_retriever_has_the_shared_constructors() -> None:
    for name in ("C2RAGRetriever", "GraphAugmentedRetriever", "KGTraversalRetriever",
    "PathConstrainedRetriever",
                 "PathRAGRetriever", "SchemaGuidedRetriever"):
        cls = getattr(langchain_kgpath, name)
        assert issubclass(cls, langchain_kgpath.KgpathRetriever)
        for ctor in ("from_graph", "from_documents", "from_texts"):
            assert callable(getattr(cls, ctor)), (name, ctor)


def test_from_texts_calls_from_documents_with_a_list() -> None:
    from kgpath.recipes import FromTextsMixin

    class R(FromTextsMixin):
        @classmethod
        def from_documents(cls, documents: object, **kw: object) -> tuple[object, object]:
            return documents, kw

    assert R.from_texts(iter(["a", "b"]), k=1) == (["a", "b"], {"k": 1})
