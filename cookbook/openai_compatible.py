"""kgpath with OpenAI, or any OpenAI-compatible server (vLLM, llama.cpp, Ollama, LM Studio, ...).

Configuration, from the environment:

* ``OPENAI_API_KEY`` - key for api.openai.com (or for your server, if it wants one);
* ``OPENAI_BASE_URL`` - e.g. ``http://localhost:8000/v1`` for a local server;
* ``KGPATH_CHAT_MODEL`` (default ``gpt-4o-mini``) and ``KGPATH_EMBED_MODEL`` (default
  ``text-embedding-3-small``; set ``KGPATH_EMBED_MODEL=local`` to keep kgpath's bundled
  offline embedder and use the server only as the LLM).

With neither ``OPENAI_API_KEY`` nor ``OPENAI_BASE_URL`` set, the recipe prints that it skipped
and exits 0 (so it can run in CI); see ``cookbook/offline.py`` for the fully offline version.

What it does, on kgpath's demo graph (history of radioactivity):

1. PCR with OpenAI embeddings: nodes reachable from the anchor, ranked by similarity;
2. PathRAG with LLM keyword extraction (section 4.1 of the paper) and its path prompt;
3. the LLM answers from PathRAG's prompt (query first, paths in ascending reliability).

Run: OPENAI_API_KEY=sk-... python cookbook/openai_compatible.py
"""

from __future__ import annotations

import os
import sys

from kgpath import (
    BackendError,
    GraphIndex,
    LocalEmbedder,
    OpenAIEmbedder,
    OpenAILLM,
    PathConstrainedRetriever,
)
from kgpath.data import demo_corpus, load_demo_graph
from kgpath.methods.pathrag import PathRAGRetriever


def main() -> int:
    key = os.environ.get("OPENAI_API_KEY")
    base_url = os.environ.get("OPENAI_BASE_URL")
    if not key and not base_url:
        print("skipped: set OPENAI_API_KEY (OpenAI) or OPENAI_BASE_URL (any OpenAI-compatible "
              "server) to run this recipe; cookbook/offline.py needs neither")
        return 0
    api_key = key or "not-needed"  # local servers usually ignore the key; the client wants one
    chat_model = os.environ.get("KGPATH_CHAT_MODEL", "gpt-4o-mini")
    embed_model = os.environ.get("KGPATH_EMBED_MODEL", "text-embedding-3-small")
    llm = OpenAILLM(chat_model, api_key=api_key, base_url=base_url)
    embedder = (
        LocalEmbedder(show_progress=False) if embed_model == "local"
        else OpenAIEmbedder(embed_model, api_key=api_key, base_url=base_url)
    )
    where = base_url or "api.openai.com"
    print(f"server: {where}; chat model: {chat_model}; embeddings: {embed_model}")

    graph = load_demo_graph()
    index = GraphIndex(graph, embedder)
    spec = demo_corpus()["queries"][0]
    question = spec["query"]
    try:
        pcr = PathConstrainedRetriever(index).retrieve(
            question, anchor_name=spec["anchor_name"], direction=spec.get("direction", "out"),
            max_depth=spec.get("max_depth"), k=4,
        )
        print(f"\nQ: {question}\nPCR from {pcr.anchor.name!r}:")
        for h in pcr.hits:
            print(f"  {h.score:.3f}  {h.path_text(graph)}")

        pathrag = PathRAGRetriever(index, llm=llm)
        res = pathrag.retrieve(question, top_k=5)
        print(f"\nPathRAG keywords ({res.keyword_source}): {', '.join(res.keywords)}")
        for p in res.paths:
            print(f"  reliability {p.reliability:.3f}  {p.describe()}")
        answer = llm.complete(res.prompt)
    except BackendError as exc:
        print(f"the server at {where} failed: {exc}", file=sys.stderr)
        return 1
    print(f"\nAnswer ({chat_model}):\n{answer.strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
