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


def test_c2rag_embedded_cypher_name_index_equals_in_memory(tmp_path) -> None:
    # the name token index and vector files on the embedded engine (its id lookup)
    drv = EmbeddedCypherDriver.open(tmp_path / "db")
    try:
        index = GraphIndex(load_demo_kg(), HashingEmbedder(64))
        schema = load_graph(drv, index, vector_dir=tmp_path / "v")
        db = CypherC2RAG(drv, embedder=index.embedder, schema=schema, vectors=tmp_path / "v")
        assert db._access.shared.names is not None
        mem = ConstraintCheckedRetriever(index)
        for q in demo_questions():
            for plan in (q["plan"], None):
                assert_same(mem.retrieve(q["query"], plan=plan),
                            db.retrieve(q["query"], plan=plan))
    finally:
        drv.close()


def test_name_token_index_equals_brute_force(tmp_path) -> None:
    # postings == the nodes whose Tok(name) holds the token (C2RAG's tokenizer), any unicode
    import random

    import pytest

    from kgpath.backends.cypher.names import NameTokens, name_tokens, write_name_tokens
    from kgpath.errors import PersistenceError
    from kgpath.methods.c2rag.plan import tokens

    rnd = random.Random(7)
    words = ["Paris", "paris", "ΟΔΟΣ", "οδος", "Σοφία", "İstanbul", "Curie's", "lab", "a",
             "the", "n1", "n10", "x_y", "ß", "ǅ", "日本", "Ⅻ"]
    names = [" ".join(rnd.choices(words, k=rnd.randint(0, 4))) for _ in range(300)]
    names[5] = None  # type: ignore[call-overload]  # the id names the node
    ids = [f"id{i}" for i in range(len(names))]
    write_name_tokens(tmp_path, ids, names, chunk=37)
    idx = NameTokens(tmp_path)
    vocab = {t for i, n in zip(ids, names) for t in tokens(i if n is None else n)}
    assert idx.count == 300 and idx.tokens == len(vocab)
    for t in sorted(vocab) + ["zzz", "", "pari"]:
        want = [j for j, (i, n) in enumerate(zip(ids, names))
                if t in tokens(i if n is None else n)]
        assert idx.lookup(t).tolist() == want, t
    assert idx.ids([0, 299, 5]) == ["id0", "id299", "id5"]
    assert all(name_tokens(n) == tokens(n) for n in words + names[:5])
    next(tmp_path.glob("names-*.post")).write_bytes(b"")
    with pytest.raises(PersistenceError, match="disagree"):
        NameTokens(tmp_path)
