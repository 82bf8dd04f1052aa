"""Graph-augmented retrieval over FalkorDB equals the in-memory retriever.

Truth: :class:`~kgpath.methods.augmented.GraphAugmentedRetriever` on the same
``GraphIndex`` (hits with chain, base and seed scores, partners, linking entities,
question-entity flags, seeds, question links, evidence), on the demo graph for its sample
questions under every expansion / link rule, and on random corpora built to stress the
exactness argument of :mod:`kgpath.methods.augmented.cypher`: entities cited by about
``max_entity_passages`` passages, names sharing a linker key, duplicate passage texts
(tied scores), provenance naming passages the graph does not hold.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgpath import GraphIndex, HashingEmbedder, KnowledgeGraph
from kgpath.backends.cypher import CypherBackend, load_graph
from kgpath.data import demo_corpus, load_demo_graph
from kgpath.errors import CapabilityError, ConfigError
from kgpath.methods.augmented import GraphAugmentedRetriever
from kgpath.methods.augmented.cypher import CypherAugmented, query_keys

pytestmark = pytest.mark.falkordb

CONFIGS = [
    {},
    {"link_rule": "shared"},
    {"expansion": "neighbours"},
    {"expansion": "none", "k": 3},
    {"seeds": 1, "k": 4},
    {"max_entity_passages": 1, "question_bonus": 0.5},
    {"max_entity_passages": 8, "link_bonus": 0.4, "seeds": 3},
    {"use_query_entities": False},
]


def assert_same(a, b):
    assert b.passage_ids == a.passage_ids
    for x, y in zip(a.hits, b.hits):
        assert (y.partner, y.via, y.question_entity) == (x.partner, x.via, x.question_entity)
        assert (y.score, y.base_score, y.seed_score) == pytest.approx(
            (x.score, x.base_score, x.seed_score), abs=1e-5)
    assert b.seeds == a.seeds
    assert b.query_links == a.query_links
    ea, eb = a.evidence(), b.evidence()  # float32 sums over a part of the matrix: 1 ulp
    assert [(e.id, e.text, e.source_metadata, e.trace.keys()) for e in eb] == [
        (e.id, e.text, e.source_metadata, e.trace.keys()) for e in ea]
    for x, y in zip(ea, eb):
        assert y.trace == {k: pytest.approx(v, abs=1e-5) if isinstance(v, float) else v
                           for k, v in x.trace.items()}


def test_augmented_demo_graph_equals_in_memory(falkordb_driver):
    index = GraphIndex(load_demo_graph(), HashingEmbedder(64))
    schema = load_graph(falkordb_driver, index)
    db = CypherAugmented(falkordb_driver, embedder=index.embedder, schema=schema)
    mem = GraphAugmentedRetriever(index)
    queries = [q["query"] for q in demo_corpus()["queries"]] + [
        "Where did Marie Curie and Pierre Curie work?", "What did Niels Bohr propose?",
        "Which prize did Irene Joliot-Curie win with Frederic Joliot-Curie?",
        "How is Warsaw linked to Ernest Rutherford?"]
    assert len(queries) >= 7
    linked = 0
    for q in queries:
        for cfg in CONFIGS:
            a, b = mem.retrieve(q, **cfg), db.retrieve(q, **cfg)
            assert a.hits
            assert_same(a, b)
            linked += bool(a.query_links)
    assert linked  # the questions name entities: the linking path is exercised


def random_corpus(seed: int) -> KnowledgeGraph:
    rnd = random.Random(seed)
    names = ["Marie Curie", "marie  curie", "The Curie", "Curie's", "Paris", "PARIS",
             "Warsaw", "Bohr", "Niels Bohr", "radium", "polonium", "Sorbonne", "Einstein",
             "Copenhagen", "Lyon", "uranium", "Rutherford", "Manchester"]
    g = KnowledgeGraph()
    n_pass = rnd.randint(8, 60)
    ents = rnd.sample(names, rnd.randint(4, len(names)))
    texts = []
    for i in range(n_pass):
        if texts and rnd.random() < 0.15:
            text = rnd.choice(texts)  # a duplicate text: tied dense scores
        else:
            words = rnd.sample(ents, rnd.randint(1, 3)) + rnd.sample(
                ["met", "studied", "in", "the", "lab", "near", "ore"], 2)
            rnd.shuffle(words)
            text = " ".join(words) + "."
        texts.append(text)
        g.add_passage(f"p{i}", text, {"i": i})
    for j, name in enumerate(ents):
        cites = rnd.sample(range(n_pass), min(n_pass, rnd.choice([1, 2, 3, 4, 5, 6, 12])))
        prov = [f"p{i}" for i in cites] + (["gone"] if rnd.random() < 0.2 else [])
        g.add_node(f"e{j}", name=name, text=f"about {name}", provenance=prov)
    for _ in range(len(ents)):
        a, b = rnd.sample(range(len(ents)), 2)
        g.add_edge(f"e{a}", f"e{b}", relation="near")
    return g


@settings(max_examples=20, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), cfg=st.sampled_from(CONFIGS),
       words=st.lists(st.sampled_from(["Marie Curie", "Paris", "Bohr", "radium", "ore",
                                       "the lab", "Who", "Einstein", "Warsaw"]),
                      min_size=1, max_size=4))
def test_augmented_random_corpora_equal_in_memory(falkordb_driver, seed, cfg, words):
    index = GraphIndex(random_corpus(seed), HashingEmbedder(32))
    schema = load_graph(falkordb_driver, index, replace=True)
    db = CypherAugmented(CypherBackend(falkordb_driver, embedder=index.embedder,
                                       schema=schema))
    q = " ".join(words) + "?"
    assert_same(GraphAugmentedRetriever(index).retrieve(q, **cfg), db.retrieve(q, **cfg))


def test_augmented_needs_stored_passage_vectors(falkordb_driver):
    g = load_demo_graph()
    schema = load_graph(falkordb_driver, g)  # a bare graph: no passage vectors
    db = CypherAugmented(falkordb_driver, embedder=HashingEmbedder(16), schema=schema)
    with pytest.raises(ConfigError, match="without a stored vector"):
        db.retrieve("radium")


def test_augmented_query_keys_cover_every_span():
    keys = query_keys("Did Marie Curie's lab see The Beatles?")
    assert {"marie curie", "curie", "beatles", "marie curie s lab"} <= set(keys)
    assert "lab" not in keys  # an unmarked unigram: the linker never looks it up


def test_augmented_needs_the_capability():
    from kgpath.backends import InMemoryBackend

    backend = InMemoryBackend(GraphIndex(load_demo_graph(), HashingEmbedder(16)))
    with pytest.raises(CapabilityError, match="PassageEntityStore"):
        CypherAugmented(backend)
