"""C2RAG over the embedded Cypher engine (Ladybug/Kùzu) equals the in-memory retriever.

The FalkorDB suite (``tests/test_falkordb_c2rag.py``, ``pytest -m falkordb``) holds the
random graphs; this runs the C2RAG demo KG with its scripted plans and the LLM-free
fallback plan on the engine every install has, sync and async.
"""

from __future__ import annotations

import asyncio
import dataclasses

from kgpath import GraphIndex, HashingEmbedder
from kgpath.backends.cypher import EmbeddedCypherDriver, load_graph
from kgpath.demo.c2rag import demo_questions, load_demo_kg
from kgpath.methods.c2rag import ConstraintCheckedRetriever, CypherC2RAG
from tests.test_falkordb_c2rag import CONFIGS, assert_same


def test_c2rag_embedded_cypher_equals_in_memory(tmp_path) -> None:
    drv = EmbeddedCypherDriver.open(tmp_path / "db")
    try:
        index = GraphIndex(load_demo_kg(), HashingEmbedder(64))
        db = CypherC2RAG(drv, embedder=index.embedder, schema=load_graph(drv, index))
        mem = ConstraintCheckedRetriever(index)
        for n, q in enumerate(demo_questions()[:8]):
            cfg = dataclasses.asdict(CONFIGS[n % len(CONFIGS)])
            for plan in (q["plan"], None):
                a = mem.retrieve(q["query"], plan=plan, **cfg)
                assert_same(a, db.retrieve(q["query"], plan=plan, **cfg))
                if n % 3 == 0:
                    assert_same(a, asyncio.run(db.aretrieve(q["query"], plan=plan, **cfg)))
    finally:
        drv.close()
