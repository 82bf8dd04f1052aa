"""kgpath's prompts as LlamaIndex ``PromptTemplate`` objects, and where each retriever keeps them.

The texts are the core's string constants (:mod:`kgpath.prompts`); this module only wraps
them, with LlamaIndex's variable names (``{query_str}``, ``{context_str}``) where a
response synthesizer uses them. Each retriever exposes its prompts through
``get_prompts``/``update_prompts`` (see :data:`PROMPT_ATTRS`): :func:`attr_owner` finds
where a prompt lives on the core retriever, :func:`to_core_template` turns an updated
LlamaIndex template back into the core's variable names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llama_index.core.prompts import PromptTemplate
from llama_index.core.prompts.prompt_type import PromptType

from kgpath.errors import ConfigError
from kgpath.prompts.c2rag import EVIDENCE_QA_PROMPT, PLANNER_PROMPT
from kgpath.prompts.pathrag import PATHRAG_KEYWORD_PROMPT, PATHRAG_QA_PROMPT

__all__ = [
    "C2RAG_EVIDENCE_PROMPT",
    "C2RAG_PLANNER_PROMPT",
    "PATHRAG_KEYWORD_TEMPLATE",
    "PATHRAG_QA_TEMPLATE",
    "PROMPT_ATTRS",
    "attr_owner",
    "to_core_template",
]

#: Path-based QA prompt (Eq. 6): the question first, then the paths in the node order
#: (ascending reliability after :class:`~.postprocessors.PathOrderPostprocessor`).
PATHRAG_QA_TEMPLATE = PromptTemplate(
    PATHRAG_QA_PROMPT,
    prompt_type=PromptType.QUESTION_ANSWER,
    template_var_mappings={"query_str": "query", "context_str": "paths"},
)

#: Keyword-extraction prompt of PathRAG section 4.1 (``{query_str}``), answered with JSON.
PATHRAG_KEYWORD_TEMPLATE = PromptTemplate(
    PATHRAG_KEYWORD_PROMPT,
    prompt_type=PromptType.CUSTOM,
    template_var_mappings={"query_str": "query"},
)

#: C2RAG's evidence-block answer prompt (Eq. 16 context) with LlamaIndex's variable names.
C2RAG_EVIDENCE_PROMPT = PromptTemplate(
    EVIDENCE_QA_PROMPT.replace("{context}", "{context_str}").replace("{query}", "{query_str}"),
    prompt_type=PromptType.QUESTION_ANSWER,
)

#: C2RAG's planner prompt (``{query}``, ``{m}``, ``{schema}``).
C2RAG_PLANNER_PROMPT = PromptTemplate(PLANNER_PROMPT, prompt_type=PromptType.CUSTOM)

_QA = {"query_str": "query", "context_str": "paths"}

#: method -> prompt name -> (core attribute path, {LlamaIndex variable: core variable});
#: an updated prompt must use every core variable named here.
PROMPT_ATTRS: Mapping[str, Mapping[str, tuple[str, Mapping[str, str]]]] = {
    "pcr": {},
    "pathrag": {"keyword_prompt": ("keyword_prompt", {"query_str": "query"}),
                "path_qa_prompt": ("qa_prompt", _QA)},
    "c2rag": {"planner_prompt": ("planner_prompt", {"query": "query"})},
    "schema": {"decompose_prompt": ("decomposer.prompt", {"question": "question"})},
    "traversal": {"llm_traversal_prompt": ("llm_prompt", {"query": "query"})},
}


def attr_owner(root: Any, path: str) -> tuple[Any, str]:
    """The object holding the dotted attribute ``path`` of ``root``, and its last name."""
    owner, *rest, attr = [root, *path.split(".")]
    for name in rest:
        owner = getattr(owner, name)
    return owner, attr


def to_core_template(text: str, names: Mapping[str, str], what: str) -> str:
    """A framework template with its variables renamed to the core's (``names``: fw -> core).

    Raises :class:`ConfigError` naming ``what`` when a core variable is missing.
    """
    for fw_var, core_var in names.items():
        text = text.replace("{" + fw_var + "}", "{" + core_var + "}")
    missing = [v for v in names.values() if "{" + v + "}" not in text]
    if missing:
        raise ConfigError(f"{what} must use the variables {sorted(names)} "
                          f"(or {sorted(names.values())}); missing {missing}")
    return text
