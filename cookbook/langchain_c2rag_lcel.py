"""C2RAG in LangChain LCEL chains, fully offline.

1. C2RAG retriever -> evidence blocks (Eq. 16) -> C2RAG_CHAT_PROMPT -> chat model.
2. The C2RAG sufficiency check guarding an ordinary vector retriever: when its top
   passages have no dominant one (N_eff > γ), C2RAG's evidence is added as a fallback.

No LLM runs here. The planner is a FakeListChatModel that replays the hand-written plan
stored with the question (a stand-in: swap in any chat model, e.g. ChatOpenAI, to plan for
real), and the answering model is a FakeListChatModel too. Data: the hand-written C2RAG
demo KG (the paper's Figure 5 case).

Run: python cookbook/langchain_c2rag_lcel.py [--embedder local|hashing]
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_kgpath import (
    C2RAG_CHAT_PROMPT,
    C2RAGRetriever,
    SufficiencyFallbackRetriever,
    format_evidence_blocks,
)

from kgpath import Embedder, HashingEmbedder, LocalEmbedder
from kgpath.demo.c2rag import demo_questions, load_demo_kg


class KgpathEmbeddings(Embeddings):
    """A kgpath embedder seen as LangChain ``Embeddings`` (for the plain vector store)."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embedder.embed_passages(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embedder.embed_queries([text])[0].tolist()


class ScoredVectorRetriever(BaseRetriever):
    """Top-k passages of a vector store with their cosine in ``metadata["score"]``."""

    store: Any
    k: int = 3

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        hits = self.store.similarity_search_with_score(query, k=self.k)
        return [Document(page_content=d.page_content, id=d.id,
                         metadata={**d.metadata, "score": float(s)}) for d, s in hits]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="C2RAG LCEL recipe (offline)")
    ap.add_argument("--embedder", default="local", choices=["local", "hashing"])
    args = ap.parse_args(argv)
    embedder: Embedder = LocalEmbedder(show_progress=False) if args.embedder == "local" \
        else HashingEmbedder()
    graph = load_demo_kg()
    q = demo_questions()[0]
    question = q["query"]

    # ---- chain 1: C2RAG -> evidence blocks -> prompt -> model
    planner = FakeListChatModel(responses=[json.dumps(q["plan"])])  # scripted planner
    # The S_rel check's defaults (ε 0.03, γ 2.5) are calibrated for the bundled embedder;
    # the hashing embedder's lexical cosines need the stricter ε 0.01, γ 2.0.
    check = {"gamma": 2.0, "epsilon": 0.01} if args.embedder == "hashing" else {}
    retriever = C2RAGRetriever.from_graph(graph, embedding=embedder, llm=planner, **check)
    answer_model = FakeListChatModel(responses=["(a real chat model's answer would appear here)"])
    inputs = {
        "context": retriever | RunnableLambda(format_evidence_blocks),
        "query": RunnablePassthrough(),
    }
    chain = inputs | C2RAG_CHAT_PROMPT | answer_model | StrOutputParser()
    print("Planner: scripted FakeListChatModel replaying a hand-written plan (no real LLM)\n")
    print("Prompt sent to the answering model:\n")
    print((inputs | C2RAG_CHAT_PROMPT).invoke(question).to_string())
    print("\nAnswer:", chain.invoke(question))

    # the full trace is one call away
    result = retriever.result(question)
    print("\nHop decisions:")
    for h in result.hops:
        ne = "n/a" if h.n_eff is None else f"{h.n_eff:.3f}"
        print(f"  hop {h.step} ({h.kind}) {h.linearized!r}: N_eff {ne} -> {h.state}"
              f"{' + textual recovery' if h.recovery_used else ''}")

    # ---- chain 2: sufficiency check guarding a plain vector retriever
    store = InMemoryVectorStore(KgpathEmbeddings(embedder))
    store.add_documents([Document(page_content=p.text, id=p.id)
                         for p in graph.passages.values()])
    guarded = SufficiencyFallbackRetriever(
        ScoredVectorRetriever(store=store, k=3), C2RAGRetriever(graph=retriever.core),
        gamma=1.5,
    )
    docs = guarded.invoke(question)
    m = docs[0].metadata
    print(f"\nVector retriever top-3: N_eff {m['kgpath_gate_n_eff']:.3f} vs gamma 1.5 -> "
          f"{m['kgpath_gate_state']}, action {m['kgpath_gate_action']}")
    for d in docs:
        print(f"  [{d.metadata['kgpath_gate_source']}] {d.id}: {d.page_content[:70]}")


if __name__ == "__main__":
    main()
