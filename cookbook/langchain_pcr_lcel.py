"""PCR inside a LangChain LCEL chain, fully offline.

retriever (graph-constrained) -> documents formatted with their paths -> ChatPromptTemplate
-> chat model. The model here is LangChain's FakeListChatModel, so the script runs without
any API key; swap in any chat model (e.g. ChatOpenAI) to get real answers.

Run: python cookbook/langchain_pcr_lcel.py
"""

from __future__ import annotations

from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough
from langchain_kgpath import PathConstrainedRetriever

from kgpath import LocalEmbedder, PCRConfig
from kgpath.data import load_demo_graph

QUESTION = "Where was the ore for radium mined?"

# The paper's PCR (PCRConfig.paper(): out-edges, unlimited depth) for a multi-hop question
# from a named anchor; the defaults (both directions, depth 1) are tuned for passage search.
retriever = PathConstrainedRetriever.from_graph(
    load_demo_graph(), embedding=LocalEmbedder(), config=PCRConfig.paper(),
    anchor_name="Marie Curie", k=4
)


def format_docs(docs: list[Document]) -> str:
    """One line per source passage, with the path from the anchor that reached it."""
    return "\n".join(
        f"- {d.page_content} [score={d.metadata['kgpath_score']:.3f}, "
        f"hops={d.metadata['kgpath_hops']}; path: {d.metadata.get('kgpath_path', '')}]"
        for d in docs
    )


prompt = ChatPromptTemplate.from_messages(
    [
        ("system", "Answer using only these facts, reached from the anchor in a graph:\n{facts}"),
        ("human", "{question}"),
    ]
)
inputs = {"facts": retriever | format_docs, "question": RunnablePassthrough()}
model = FakeListChatModel(responses=["(a real chat model's answer would appear here)"])
chain = inputs | prompt | model | StrOutputParser()

if __name__ == "__main__":
    print("Prompt sent to the model:\n")
    print((inputs | prompt).invoke(QUESTION).to_string())
    print("\nAnswer:", chain.invoke(QUESTION))
    # Per-call options: another anchor and k, same chain shape.
    docs = retriever.invoke("Which element does fission split?", anchor_name="Albert Einstein", k=2)
    print("\nPer-call anchor 'Albert Einstein', k=2:")
    print(format_docs(docs))
