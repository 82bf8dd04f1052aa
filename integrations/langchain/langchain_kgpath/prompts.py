"""The core prompts as ``ChatPromptTemplate``s, the formatters that fill them, LCEL pieces.

* :data:`PATHRAG_CHAT_PROMPT` (``{query}`` then ``{paths}``; Eq. 6) and :func:`format_paths`.
* :data:`C2RAG_CHAT_PROMPT` (``{context}``, ``{query}``) and :func:`format_evidence_blocks`
  (Eq. 16 blocks from the documents' ``kgpath_constraint``/``kgpath_state`` trace).
* Schema-guided recipe *decompose -> parallel retrieve -> answer*: :func:`answer_prompt`,
  :func:`format_documents`, :func:`decompose_runnable`, :func:`merge_sub_question_documents`.

Formatters read the evidence metadata of :meth:`kgpath.evidence.Evidence.metadata`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnableLambda

from kgpath.errors import ConfigError
from kgpath.methods.schema.merge import merge_sub_question_runs
from kgpath.prompts.c2rag import EVIDENCE_HUMAN_PROMPT, EVIDENCE_SYSTEM_PROMPT
from kgpath.prompts.pathrag import PATHRAG_PATH_BLOCK, PATHRAG_QA_PROMPT
from kgpath.prompts.schema import SCHEMA_ANSWER_PROMPT, SCHEMA_DECOMPOSE_PROMPT
from langchain_kgpath._base import as_kgpath_llm
from langchain_kgpath.compressors import first_score

__all__ = [
    "C2RAG_CHAT_PROMPT",
    "PATHRAG_CHAT_PROMPT",
    "answer_prompt",
    "decompose_runnable",
    "format_documents",
    "format_evidence_blocks",
    "format_paths",
    "merge_sub_question_documents",
]

#: Path-based QA prompt (Eq. 6). Variables: ``query`` and ``paths`` (see :func:`format_paths`).
PATHRAG_CHAT_PROMPT = ChatPromptTemplate.from_messages([("human", PATHRAG_QA_PROMPT)])

#: The evidence-block answer prompt: system instructions + ``{context}`` and ``{query}``.
C2RAG_CHAT_PROMPT = ChatPromptTemplate.from_messages(
    [("system", EVIDENCE_SYSTEM_PROMPT), ("human", EVIDENCE_HUMAN_PROMPT)]
)


def format_paths(documents: Sequence[Document]) -> str:
    """Render documents, in the given order, as the numbered path blocks of ``{paths}``."""
    return "\n".join(
        PATHRAG_PATH_BLOCK.format(number=i, text=d.page_content) for i, d in enumerate(documents, 1)
    )


def _block_status(meta: dict[str, Any]) -> str:
    ne = meta.get("kgpath_n_eff")
    status = f"state: {str(meta.get('kgpath_state', '')).upper()} (N_eff " + (
        "n/a)" if ne is None else f"{ne:.2f})")
    bound = ", ".join(str(b) for b in meta.get("kgpath_bindings") or ())
    if bound:
        status += f"; {bound}"
    return status


def format_evidence_blocks(documents: Sequence[Document]) -> str:
    """Render documents as Eq. 16 evidence blocks for :data:`C2RAG_CHAT_PROMPT`.

    Documents carrying ``kgpath_constraint`` are grouped under it, blocks in order of first
    appearance, with the constraint's state, N_eff and bindings; a document whose
    ``kgpath_source`` is ``textual`` is marked as recovered. Any other document goes, in
    order, into a final block of plain evidence.
    """
    blocks: dict[str, list[Document]] = {}
    other: list[Document] = []
    for d in documents:
        c = d.metadata.get("kgpath_constraint")
        (blocks.setdefault(str(c), []) if c is not None else other).append(d)

    def line(d: Document, i: int) -> str:
        tag = " (textual recovery)" if d.metadata.get("kgpath_source") == "textual" else ""
        return f"- [{d.id or i}] {d.page_content}{tag}"

    out = []
    for n, (constraint, docs) in enumerate(blocks.items(), 1):
        lines = [f"[Block {n}] {constraint}", _block_status(docs[0].metadata)]
        out.append("\n".join(lines + [line(d, i) for i, d in enumerate(docs, 1)]))
    if other:
        out.append("\n".join(["[Evidence]"] + [line(d, i) for i, d in enumerate(other, 1)]))
    return "\n\n".join(out)


# ---------------------------------------------------------------------- schema-guided
def answer_prompt() -> ChatPromptTemplate:
    """The core schema answer prompt; variables ``question``, ``sub_questions``, ``evidence``."""
    return ChatPromptTemplate.from_template(SCHEMA_ANSWER_PROMPT)


def format_documents(docs: Sequence[Document]) -> str:
    """Evidence lines ``[kind (type)] text {sub-question 1,2}`` for :func:`answer_prompt`."""
    lines = []
    for d in docs:
        m = d.metadata
        typ = f" ({m['kgpath_schema_type']})" if m.get("kgpath_schema_type") else ""
        tag = ",".join(str(i + 1) for i in m.get("kgpath_sub_questions") or ())
        lines.append(f"[{m.get('kgpath_kind', 'document')}{typ}] {d.page_content}"
                     + (f" {{sub-question {tag}}}" if tag else ""))
    return "\n".join(lines)


def decompose_runnable(
    schema: Any,
    llm: Any = None,
    *,
    graph: Any = None,
    max_sub_questions: int = 4,
    prompt: str = SCHEMA_DECOMPOSE_PROMPT,
) -> Runnable[str, Any]:
    """A runnable ``question -> DecompositionPlan`` (sync and native async).

    Same validation as the core: types outside ``schema`` dropped with a warning, malformed
    output repaired or replaced by the whole question; ``llm=None`` uses the heuristic.
    """
    from kgpath.methods.schema import SchemaDecomposer

    dec = SchemaDecomposer(schema, as_kgpath_llm(llm), graph=graph,
                           max_sub_questions=max_sub_questions, prompt=prompt)

    async def adecompose(q: str) -> Any:
        return await dec.adecompose(q)

    return RunnableLambda(dec.decompose, afunc=adecompose, name="schema_decompose")


def _score(d: Document) -> float:
    s = first_score(d.metadata, ("kgpath_score", "score"))
    return float("-inf") if s is None else s


def merge_sub_question_documents(plan: Any, results: Sequence[Sequence[Document]]
                                 ) -> list[Document]:
    """Merge per-sub-question documents: de-duplicate, keep the best score, tag sub-questions.

    Identity is the document ``id`` (else its text); the score is ``kgpath_score`` (else
    ``score``; missing = lowest). Output copies carry ``kgpath_sub_questions`` (0-based
    indices into ``plan.sub_questions``, the union over the lists that returned them) and
    are ordered by score, then first appearance.
    """
    if len(results) != len(plan.sub_questions):
        raise ConfigError(
            f"{len(results)} result list(s) for {len(plan.sub_questions)} sub-question(s)"
        )
    merged = merge_sub_question_runs(results, key=lambda d: d.id or d.page_content,
                                     score=_score)
    return [Document(page_content=d.page_content, id=d.id,
                     metadata={**d.metadata, "kgpath_sub_questions": tags})
            for d, tags in merged]
