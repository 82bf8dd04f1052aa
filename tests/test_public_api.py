"""kgpath's public names are pinned: adding or removing one is a deliberate act."""

from __future__ import annotations

import subprocess
import sys

import kgpath

PUBLIC = {
    "Edge", "GraphIndex", "KnowledgeGraph", "Node", "Passage",
    "Evidence", "EvidenceRetriever",
    "AugmentedConfig", "C2RAGConfig", "ConstraintCheckedRetriever", "GraphAugmentedRetriever",
    "PCRConfig", "PathConstrainedRetriever",
    "PathRAGConfig", "PathRAGRetriever", "SchemaGuidedRetriever", "SchemaRetrieverConfig",
    "SufficiencyGate", "TraversalConfig", "TraversalRetriever",
    "Embedder", "HashingEmbedder", "LLM", "LocalEmbedder", "OpenAIEmbedder", "OpenAILLM",
    "Reranker", "ScriptedLLM", "default_embedder",
    "BackendError", "ConfigError", "EmbeddingError", "EmptyGraphError", "GraphError",
    "KgpathError", "MissingDependencyError", "NodeNotFoundError", "ParseError",
    "PersistenceError", "QueryError", "__version__",
}


def test_all_is_pinned() -> None:
    assert set(kgpath.__all__) == PUBLIC
    assert len(kgpath.__all__) == len(PUBLIC)  # no duplicates
    for name in kgpath.__all__:
        assert getattr(kgpath, name) is not None


def test_every_error_derives_from_the_root() -> None:
    for name in kgpath.__all__:
        obj = getattr(kgpath, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert issubclass(obj, kgpath.KgpathError), name


def test_no_compatibility_layer() -> None:
    """Names live in their module only: ``kgpath`` re-exports ``__all__`` and nothing else."""
    for name in ("PCRResult", "build_chunk_graph", "CypherPCR", "LangChainEmbedder", "BM25Index"):
        assert name not in kgpath.__all__
        assert not hasattr(kgpath, name), name
    assert not hasattr(kgpath, "_COMPAT")


def test_unknown_name_is_an_attribute_error() -> None:
    import pytest

    with pytest.raises(AttributeError, match="no_such_name"):
        kgpath.no_such_name  # noqa: B018


def test_import_kgpath_loads_no_framework_and_no_demo() -> None:
    code = (
        "import sys, kgpath; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('llama_index', 'langchain', "
        "'langchain_core') or m.startswith(('kgpath.demo', 'kgpath.cli'))]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
