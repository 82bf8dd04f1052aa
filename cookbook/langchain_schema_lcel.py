"""Schema-guided retrieval as an LCEL chain: decompose -> parallel retrieve -> answer.

Offline. THE CHAT MODELS ARE SCRIPTED (LangChain's ``FakeListChatModel``): the decomposer's
reply is a fixed JSON plan and the answer is a fixed string, so no API key is needed; swap
in any chat model (e.g. ``ChatOpenAI``) for real output - the chain does not change.
Embeddings: the bundled offline ``LocalEmbedder`` (``--hashing``: ``HashingEmbedder``).

    question
      -> decompose_runnable(schema, chat_model)            # plan validated against the schema
      -> RunnableLambda(retrieve one sub-question).batch(   # sub-questions run concurrently
             plan.sub_questions, max_concurrency=4)         #   (LangChain's thread pool)
      -> merge_sub_question_documents                       # de-duplicate, tag sub-questions
      -> answer_prompt() | chat_model | StrOutputParser()

Run: python cookbook/langchain_schema_lcel.py [--hashing]
"""

from __future__ import annotations

import json
import sys
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from langchain_kgpath import (
    SchemaGuidedRetriever,
    answer_prompt,
    decompose_runnable,
    format_documents,
    merge_sub_question_documents,
)

from kgpath import HashingEmbedder
from kgpath.data import load_demo_graph
from kgpath.demo.schema import demo_schema
from kgpath.methods.schema import DecompositionPlan

QUESTION = "Who explained nuclear fission, and which element does fission split?"
SCRIPTED_PLAN = json.dumps({
    "sub_questions": ["Who explained nuclear fission?", "Which element does fission split?"],
    "involved_types": {"nodes": ["Person", "Phenomenon", "Element"],
                       "relations": ["explained", "splits"], "attributes": []},
})
SCRIPTED_ANSWER = ("(scripted) Lise Meitner explained nuclear fission; fission splits "
                   "uranium.")


def build_chain(embeddings: Any = None) -> Any:
    """The LCEL chain; ``embeddings=None`` uses the offline LocalEmbedder."""
    schema = demo_schema()
    graph = load_demo_graph()
    planner_model = FakeListChatModel(responses=[SCRIPTED_PLAN])   # scripted stand-in
    answer_model = FakeListChatModel(responses=[SCRIPTED_ANSWER])  # scripted stand-in
    # output="native": the typed nodes and triples themselves, not their source passages;
    # k=10 of them per sub-question (the default, 5, would cut the triples)
    retriever = SchemaGuidedRetriever.from_graph(graph, schema=schema, embedding=embeddings,
                                                 k_triples=4, output="native", k=10)

    decompose = decompose_runnable(schema, planner_model, graph=graph)
    # one sub-question -> its typed documents (types from the plan, no re-decomposition)
    retrieve_one = RunnableLambda(
        lambda sq: retriever.invoke(sq.text, plan=DecompositionPlan(
            sq.text, (sq,), sq.types, "given")),
        name="retrieve_sub_question",
    )

    def parallel_retrieve(x: dict[str, Any]) -> list[Any]:
        plan = x["plan"]
        runs = retrieve_one.batch(list(plan.sub_questions), config={"max_concurrency": 4})
        return merge_sub_question_documents(plan, runs)

    def answer_inputs(x: dict[str, Any]) -> dict[str, str]:
        subs = "\n".join(f"{i}. {s.text}" for i, s in enumerate(x["plan"].sub_questions, 1))
        return {"question": x["question"], "sub_questions": subs,
                "evidence": format_documents(x["docs"])}

    return (
        {"question": RunnablePassthrough(), "plan": decompose}
        | RunnablePassthrough.assign(docs=RunnableLambda(parallel_retrieve))
        | RunnablePassthrough.assign(inputs=RunnableLambda(answer_inputs))
        | RunnablePassthrough.assign(
            answer=(lambda x: x["inputs"]) | answer_prompt() | answer_model | StrOutputParser()
        )
    )


def main(argv: list[str]) -> None:
    chain = build_chain(HashingEmbedder() if "--hashing" in argv else None)
    out = chain.invoke(QUESTION)
    print(f"Question: {QUESTION}")
    print("Plan (SCRIPTED chat model, validated against the schema):")
    for i, sq in enumerate(out["plan"].sub_questions, 1):
        print(f"  {i}. {sq.text}  types={sq.types.to_dict()}")
    print("Merged evidence (retrieved concurrently, de-duplicated):")
    print(out["inputs"]["evidence"])
    print("Answer (SCRIPTED chat model):", out["answer"])


if __name__ == "__main__":
    main(sys.argv[1:])
