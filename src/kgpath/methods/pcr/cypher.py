"""PCR inside a Cypher database: :class:`CypherPCR`.

PCR over a :class:`~kgpath.backends.cypher.CypherBackend`.
"""

from __future__ import annotations

import os
from typing import Any

from kgpath.backends.cypher import CypherBackend, CypherDriver, CypherSchema
from kgpath.backends.cypher.vectors import VectorFiles
from kgpath.embeddings import Embedder
from kgpath.methods.pcr.config import PCRConfig
from kgpath.methods.pcr.retriever import PathConstrainedRetriever

__all__ = ["CypherPCR"]


class CypherPCR(PathConstrainedRetriever):
    """Path-Constrained Retrieval inside a Cypher database.

    PCR over a :class:`~kgpath.backends.cypher.CypherBackend`: same configuration, pipeline
    and result types as :class:`PathConstrainedRetriever`. On a database written by
    :func:`~kgpath.backends.cypher.load_graph` from graph ``G`` the result equals the
    in-memory result on ``G`` (same hits, scores, hops, paths and evidence; see
    :mod:`kgpath.backends.cypher.queries` for the tie rule). The trace adds
    ``backend``, ``queries`` (round trips) and ``seconds``.

    Parameters
    ----------
    driver
        Anything :func:`~kgpath.backends.cypher.as_cypher_driver` accepts.
    embedder
        Embeds queries, and nodes that have no stored embedding (cached by id).
    schema
        Where fields live (:class:`~kgpath.backends.cypher.CypherSchema`).
    config
        :class:`PCRConfig`. ``mode`` must be ``"vector"``: BM25 and hybrid scores need
        corpus-wide statistics the database does not keep.
    page_size, max_cached_embeddings
        See :class:`~kgpath.backends.cypher.CypherBackend`.
    vectors
        Node (and passage) vector files beside the database
        (:class:`~kgpath.backends.cypher.vectors.VectorFiles` or their directory, written by
        ``load_graph(..., vector_dir=...)`` or kept by ``DatabaseIndex(...,
        vector_dir=...)``): the global fallback of Section 3.5 (``fallback="global"``, or no
        anchor) is an exact chunked scan of the file instead of a paged scan of the stored
        vectors, and reached nodes without a stored vector are read from it instead of
        embedded. Same result (``tests/test_falkordb_vector_sync.py``).

    Examples
    --------
    >>> from kgpath import KnowledgeGraph, HashingEmbedder
    >>> from kgpath.backends.cypher import EmbeddedCypherDriver, load_graph
    >>> g = KnowledgeGraph.from_triples([("a", "to", "b"), ("b", "to", "c"), ("x", "to", "y")])
    >>> import tempfile, os
    >>> drv = EmbeddedCypherDriver.open(os.path.join(tempfile.mkdtemp(), "db"))
    >>> schema = load_graph(drv, g)
    >>> pcr = CypherPCR(drv, embedder=HashingEmbedder(), schema=schema)
    >>> sorted(pcr.retrieve("c", anchor="a", max_depth=2).ids)
    ['a', 'b', 'c']
    >>> drv.close()
    """

    backend: CypherBackend

    def __init__(
        self,
        driver: Any,
        *,
        embedder: Embedder | None = None,
        schema: CypherSchema | None = None,
        config: PCRConfig | None = None,
        page_size: int = 20_000,
        max_cached_embeddings: int = 200_000,
        vectors: VectorFiles | str | os.PathLike[str] | None = None,
    ) -> None:
        backend = CypherBackend(
            driver, embedder=embedder, schema=schema, page_size=page_size,
            max_cached_embeddings=max_cached_embeddings, vectors=vectors,
        )
        super().__init__(backend, config=config)

    @property
    def driver(self) -> CypherDriver:
        """The database driver."""
        return self.backend.driver

    @property
    def schema(self) -> CypherSchema:
        """Where fields live in the database."""
        return self.backend.schema

    @property
    def embedder(self) -> Embedder:
        """The query (and fallback node) embedder."""
        return self.backend.embedder

    def __repr__(self) -> str:
        return (
            f"CypherPCR(driver={self.driver!r}, node_label={self.schema.node_label!r}, "
            f"k={self.config.k}, max_depth={self.config.max_depth})"
        )
