from __future__ import annotations

import numpy as np
import pytest

from kgpath import KnowledgeGraph
from kgpath.embeddings import BaseEmbedder
from kgpath.errors import MissingDependencyError
from kgpath.eval.datasets import shared_datasets_dir


class TableEmbedder(BaseEmbedder):
    """Returns hand-chosen vectors: exact, hand-computable cosine scores in tests.

    ``vectors`` maps a text to its vector; unknown texts raise so a test cannot silently
    depend on an embedding it did not choose.
    """

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = {k: np.asarray(v, dtype=np.float32) for k, v in vectors.items()}
        self._dim = len(next(iter(vectors.values())))
        self.batch_size = 1024
        self.show_progress = False
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    def _embed(self, texts: list[str], kind: str) -> np.ndarray:
        self.calls.append((kind, tuple(texts)))
        try:
            return np.stack([self.vectors[t] for t in texts])
        except KeyError as exc:
            raise AssertionError(f"TableEmbedder has no vector for {exc.args[0]!r}") from None


@pytest.fixture
def table_embedder():
    return TableEmbedder


@pytest.fixture
def chain_graph() -> KnowledgeGraph:
    """a -> b -> c -> d, plus an island x -> y and a back edge d -> b (cycle)."""
    g = KnowledgeGraph()
    for n in "abcdxy":
        g.add_node(n, name=n.upper(), text=f"node {n}")
    for s, t in [("a", "b"), ("b", "c"), ("c", "d"), ("d", "b"), ("x", "y")]:
        g.add_edge(s, t, relation="next")
    return g


@pytest.fixture
def datasets():
    d = shared_datasets_dir()
    if d is None:
        pytest.skip("../shared/datasets is absent (fresh clone)")
    return d


def _spacy_ready() -> bool:
    try:
        from kgpath.ingest.spacy_extractor import load_pipeline

        load_pipeline()
        return True
    except (ImportError, OSError, MissingDependencyError):  # not installed, model missing
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip tests marked ``spacy`` when the English pipeline cannot be loaded."""
    marked = [item for item in items if item.get_closest_marker("spacy") is not None]
    if marked and not _spacy_ready():
        skip = pytest.mark.skip(reason="spaCy English pipeline missing")
        for item in marked:
            item.add_marker(skip)


pytest_plugins = ["kgpath.testing.falkordb"]  # FalkorDB server fixtures and the falkordb marker
