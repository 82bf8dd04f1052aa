"""LangChain's standard ``VectorStore`` suite (langchain-tests) over KgpathGraphStore, offline.

The embedding is the suite's own (``DeterministicFakeEmbedding``); entities are runs of
capitalised words (the suite's texts have none, so its graphs hold passages only). Skipped
when ``langchain-tests`` is not installed.
"""

from __future__ import annotations

import re
from collections.abc import Generator

import pytest
from langchain_kgpath import KgpathGraphStore

from kgpath.ingest.extraction import ExtractedEntity, Extraction, OpenExtractor

integration = pytest.importorskip("langchain_tests.integration_tests")


class Capitals(OpenExtractor):
    """Runs of capitalised words are entities."""

    name = "capitals"

    def extract_passage(self, passage_id: str, text: str) -> Extraction:
        names = re.findall(r"[A-Z][a-z]+(?: [A-Z][a-z]+)*", text)
        return Extraction(passage_id, tuple(ExtractedEntity(n, "Thing", text) for n in names))


class TestKgpathGraphStoreStandard(integration.VectorStoreIntegrationTests):
    @pytest.fixture()
    def vectorstore(self) -> Generator[KgpathGraphStore, None, None]:  # type: ignore[override]
        """An empty store (each test gets a new one; nothing outlives it)."""
        yield KgpathGraphStore(self.get_embeddings(), extractor=Capitals())
