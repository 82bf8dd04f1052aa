"""Bounded work and typed errors in the methods (issue 13, the items outside graph/index)."""

from __future__ import annotations

import numpy as np
import pytest

from kgpath import ConfigError, HashingEmbedder, KnowledgeGraph
from kgpath.errors import PersistenceError
from kgpath.ingest.schema import Schema
from kgpath.methods.c2rag import ConstraintCheckedRetriever
from kgpath.methods.c2rag.plan import parse_plan
from kgpath.methods.pathrag import edgeflow, flow
from kgpath.methods.pathrag.keywords import offline_keywords


def test_offline_keywords_work_is_bounded_by_the_keyword_cap() -> None:
    words = [f"term{i}" for i in range(8000)]
    long = offline_keywords(" ".join(words))
    assert len(long) == 12
    # the result depends only on a short prefix: the extraction stops once 12 are found
    assert long == offline_keywords(" ".join(words[:40]))


def test_offline_keywords_dedup_is_case_insensitive() -> None:
    # "radium RADIUM" repeats "Radium radium" casefolded, so only three bigrams survive
    assert offline_keywords("Radium radium RADIUM decay") == [
        "Radium", "Radium radium", "RADIUM decay", "decay"]


def test_parse_plan_cycle_check_is_linear_and_still_finds_cycles() -> None:
    cons = [{"head": "Alice", "relation": "r", "tail": "?v0"}]
    cons += [{"head": f"?v{i}", "relation": "r", "tail": f"?v{i + 1}"} for i in range(3000)]
    plan = parse_plan({"constraints": cons})
    assert len(plan.constraints) == 3001
    cyc = parse_plan({"constraints": [
        {"head": "Alice", "relation": "r", "tail": "?a"},
        {"head": "?a", "relation": "r", "tail": "?b"},
        {"head": "?b", "relation": "r", "tail": "?a"},
    ]})
    assert len(cyc.constraints) == 2
    assert any("cycle ?b -> ?a -> ?b" in r for _, r in cyc.rejected)


def test_propagation_memory_is_bounded_up_front(monkeypatch: pytest.MonkeyPatch) -> None:
    g = KnowledgeGraph.from_triples([(f"n{i}", "r", f"n{i + 1}") for i in range(9)])
    adj = flow.flow_adjacency(g)
    monkeypatch.setattr(flow, "MAX_FLOW_STATES", 20)
    with pytest.raises(ConfigError, match="lower num_nodes"):
        flow.propagate_resources(adj, list(range(3)))  # 3 starts x 10 nodes = 30 > 20
    flow.propagate_resources(adj, [0, 1])  # 20 states: allowed


def test_path_enumeration_is_bounded_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    # a complete graph on 8 nodes has many 3-hop simple paths between any two nodes
    nodes = [f"n{i}" for i in range(8)]
    g = KnowledgeGraph.from_triples([(a, "r", b) for a in nodes for b in nodes if a != b])
    adj = flow.flow_adjacency(g, "undirected")
    full = edgeflow.edge_flow_pool(adj, np.arange(8))
    assert full.stats["truncated"] is False
    monkeypatch.setattr(edgeflow, "MAX_ENUMERATED_PATHS", 10)
    paths = edgeflow.bounded_simple_paths(adj, list(range(8)), 3, max_paths=10)
    assert sum(len(v) for v in paths.values()) == 10


def test_schema_file_that_is_not_utf8_names_the_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "schema.json"
    bad.write_bytes(b'{"entities": ["\xff\xfe"]}')
    with pytest.raises(PersistenceError, match="schema.json.*not UTF-8"):
        Schema.load(bad)


def test_c2rag_checks_its_embedder_at_construction() -> None:
    g = KnowledgeGraph.from_triples([("a", "r", "b")])
    with pytest.raises(ConfigError, match="HashingEmbedder"):
        ConstraintCheckedRetriever(g, embedder=HashingEmbedder)  # the class, not an instance


def test_config_errors_name_the_argument_with_a_short_value() -> None:
    from kgpath import PathRAGConfig

    class Huge:
        def __repr__(self) -> str:
            return "Huge(" + "x" * 5000 + ")"

    with pytest.raises(ConfigError) as err:
        PathRAGConfig(alpha=Huge())  # type: ignore[arg-type]
    assert "alpha" in str(err.value) and len(str(err.value)) < 300


def test_cypher_identifier_rejects_a_trailing_newline() -> None:
    from kgpath.backends.cypher.identifiers import quote_identifier

    assert quote_identifier("Entity") == "`Entity`"
    with pytest.raises(ConfigError, match="Entity"):
        quote_identifier("Entity\n")
