"""Issue 10 acceptance for LangChain: an LCEL ``format_docs`` chain on the demo graph gets
passage text from each of the five retrievers built with ``from_graph(graph)`` defaults
(offline bundled embedder, no LLM); unknown keyword arguments raise; sync == async.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough
from langchain_kgpath import (
    C2RAGRetriever,
    KgpathRetriever,
    KGTraversalRetriever,
    PathConstrainedRetriever,
    PathRAGRetriever,
    SchemaGuidedRetriever,
)

from kgpath import ConfigError
from kgpath.data import load_demo_graph
from kgpath.facade import method_spec

QUERY = "Where was the ore for radium mined?"
CLASSES: dict[str, type[KgpathRetriever]] = {
    "pcr": PathConstrainedRetriever,
    "pathrag": PathRAGRetriever,
    "c2rag": C2RAGRetriever,
    "schema": SchemaGuidedRetriever,
    "traversal": KGTraversalRetriever,
}
RESULTS = {
    "pcr": "kgpath.methods.pcr:PCRResult",
    "pathrag": "kgpath.methods.pathrag:PathRAGResult",
    "c2rag": "kgpath.methods.c2rag:C2RAGResult",
    "schema": "kgpath.methods.schema:SchemaResult",
    "traversal": "kgpath.methods.traversal:TraversalResult",
}


def has_evidence(method: str) -> bool:
    import importlib

    mod, name = RESULTS[method].split(":")
    cls = getattr(importlib.import_module(mod), name)
    return inspect.isfunction(getattr(cls, "evidence", None)) or hasattr(cls, "ranked_evidence")


def evidence_methods() -> list[Any]:
    return [pytest.param(m, marks=pytest.mark.skipif(
        not has_evidence(m), reason=f"{RESULTS[m]}.evidence() is not on main yet"))
        for m in CLASSES]


def format_docs(docs: list[Document]) -> str:
    return "\n\n".join(d.page_content for d in docs)


@pytest.fixture(scope="module")
def graph() -> Any:
    return load_demo_graph()


@pytest.mark.slow
@pytest.mark.parametrize("method", evidence_methods())
def test_format_docs_chain_receives_passage_text(graph: Any, method: str) -> None:
    retriever = CLASSES[method].from_graph(graph)  # default arguments, as the issue checks
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from these passages:\n{context}"), ("human", "{question}")])
    chain = {"context": retriever | format_docs, "question": RunnablePassthrough()} | prompt
    system = chain.invoke(QUERY).to_messages()[0].content
    texts = {p.text for p in graph.passages.values()}
    docs = retriever.invoke(QUERY)
    assert docs and all(d.page_content in texts for d in docs)
    assert all(d.metadata["kgpath_kind"] == "passage" and d.metadata["kgpath_method"] == method
               for d in docs)
    assert docs[0].page_content in system


@pytest.mark.parametrize("method", evidence_methods())
async def test_sync_equals_async_and_k(graph: Any, method: str) -> None:
    r = CLASSES[method].from_graph(graph)
    for output in ("passages", "native"):
        s = r.invoke(QUERY, k=2, output=output)
        a = await r.ainvoke(QUERY, k=2, output=output)
        assert [(d.id, d.page_content, d.metadata) for d in s] == [
            (d.id, d.page_content, d.metadata) for d in a]
        assert 1 <= len(s) <= 2
        assert [d.metadata["kgpath_rank"] for d in s] == list(range(1, len(s) + 1))
        assert all(type(d.metadata["kgpath_score"]) is float for d in s)


@pytest.mark.parametrize("method", list(CLASSES))
def test_unknown_keyword_arguments_raise(graph: Any, method: str) -> None:
    cls = CLASSES[method]
    accepted = re.escape("accepted: [")
    with pytest.raises(ConfigError, match=re.escape("['colour']") + ".*" + accepted):
        cls.from_graph(graph, colour="red")
    r = cls.from_graph(graph)
    bogus = "anchor" if "anchor" not in method_spec(method).call_args else "anchorage"
    with pytest.raises(ConfigError, match=re.escape(f"['{bogus}']") + ".*" + accepted):
        r.invoke(QUERY, k=2, **{bogus: "x"})


async def test_unknown_keyword_arguments_raise_async(graph: Any) -> None:
    r = PathRAGRetriever.from_graph(graph)
    with pytest.raises(ConfigError, match=re.escape("['anchor']")):
        await r.ainvoke(QUERY, k=2, anchor="x")


def test_every_class_has_from_graph_and_only_names_its_method() -> None:
    for method, cls in CLASSES.items():
        assert cls.method == method and issubclass(cls, KgpathRetriever)
        assert cls.from_graph.__func__ is KgpathRetriever.from_graph.__func__  # type: ignore
        assert "_get_relevant_documents" not in vars(cls)
