"""PathRAG inside a LangChain LCEL chain, fully offline.

question -> PathRAGRetriever (keywords -> nodes -> flow-pruned paths, scored by Eq. 4)
         -> PathOrderCompressor (ascending reliability: most reliable path last, Eq. 6)
         -> PATHRAG_CHAT_PROMPT (question first, then the paths) -> chat model.

Offline stand-ins, both honest about being weaker than the real thing:
* keywords come from kgpath's offline extractor; pass ``llm=ChatOpenAI(...)`` (any LangChain
  chat model) to ``PathRAGRetriever.from_graph`` for LLM keyword extraction;
* the "chat model" is a RunnableLambda that echoes the most reliable path, i.e. the last one
  in the prompt; swap in any chat model for real answers.

Run: python cookbook/langchain_pathrag_lcel.py
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompt_values import PromptValue
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from langchain_kgpath import (
    PATHRAG_CHAT_PROMPT,
    PathOrderCompressor,
    PathRAGRetriever,
    format_paths,
)

from kgpath import LocalEmbedder, PathRAGConfig
from kgpath.data import load_demo_graph

QUESTION = "Which award did the discoverers of radium receive for it?"

# The paper's PathRAG (PathRAGConfig.paper(): the defaults are the passage preset),
# PathRAG-lt sized (N=20 nodes, K=5 paths) to keep the printed prompt short; the paths
# themselves (output="native"), not their source passages, go into the prompt.
retriever = PathRAGRetriever.from_graph(
    load_demo_graph(), embedding=LocalEmbedder(), config=PathRAGConfig.paper(), k=5,
    num_nodes=20, output="native"
)
compressor = PathOrderCompressor()


def ordered_paths(inputs: dict[str, Any]) -> str:
    """Ascending reliability (Eq. 6), rendered as numbered path blocks."""
    return format_paths(compressor.compress_documents(inputs["docs"], inputs["query"]))


def echo_most_reliable_path(prompt: PromptValue) -> AIMessage:
    """Offline stand-in for a chat model: answers with the last (most reliable) path."""
    last = prompt.to_string().rstrip().splitlines()[-1]
    return AIMessage(content=f"(stand-in model) most reliable evidence -> {last}")


context = RunnablePassthrough.assign(paths=RunnableLambda(ordered_paths))
prompt_chain = {"docs": retriever, "query": RunnablePassthrough()} | context | PATHRAG_CHAT_PROMPT
chain = prompt_chain | RunnableLambda(echo_most_reliable_path) | StrOutputParser()

if __name__ == "__main__":
    docs = retriever.invoke(QUESTION)
    print(f"Question: {QUESTION}\n")
    print("Retrieved paths (best first):")
    for d in docs:
        print(f"  {d.metadata['kgpath_reliability']:.3f}  {d.metadata['kgpath_path']}")
    print("\nPrompt sent to the model:\n")
    print(prompt_chain.invoke(QUESTION).to_string())
    print("\nAnswer:", chain.invoke(QUESTION))
