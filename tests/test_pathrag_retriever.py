"""PathRAG retriever: bad input, keyword extraction, orderings (Eq. 6 + ablations), token budget."""

from __future__ import annotations

import math

import pytest

from kgpath import (
    ConfigError,
    HashingEmbedder,
    KnowledgeGraph,
    NodeNotFoundError,
    QueryError,
    ScriptedLLM,
)
from kgpath.data import load_demo_graph
from kgpath.methods.pathrag import (
    PATHRAG_LT,
    AscendingReliability,
    PathOrdering,
    PathRAGConfig,
    PathRAGRetriever,
    extract_keywords,
    get_ordering,
    offline_keywords,
    parse_keywords,
)
from kgpath.tokens import count_tokens

CHAIN = KnowledgeGraph.from_triples([("a", "to", "b"), ("b", "to", "c"), ("c", "to", "d")])
ALL = ["a", "b", "c", "d"]


#: The literal Eq. (4) reading (kgpath's default before issue 12), as per-call overrides.
LITERAL = {
    "reliability": "literal_eq4",
    "direction": "directed",
    "max_hops": None,
    "eq3_at_start": True,
    "min_similarity": None,
    "min_similarity_z": None,
    "keyword_split": False,
}


@pytest.fixture
def chain() -> PathRAGRetriever:
    return PathRAGRetriever(CHAIN, embedder=HashingEmbedder())


# ---------------------------------------------------------------- config validation
@pytest.mark.parametrize("alpha", [0, 0.0, -0.1, 1.0001, 2, float("nan"), True, "0.8", None])
def test_alpha_outside_open_closed_unit_interval(alpha):
    with pytest.raises(ConfigError, match="alpha"):
        PathRAGConfig(alpha=alpha)


@pytest.mark.parametrize("alpha", [1e-9, 0.5, 1, 1.0])
def test_alpha_inside_interval_accepted(alpha):
    assert PathRAGConfig(alpha=alpha).alpha == alpha


@pytest.mark.parametrize("theta", [0, 0.0, -0.05, float("nan"), float("inf"), "x", False])
def test_theta_must_be_positive(theta):
    with pytest.raises(ConfigError, match="theta"):
        PathRAGConfig(theta=theta)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("num_nodes", 1),
        ("num_nodes", 2.5),
        ("top_k", 0),
        ("paths_per_pair", 0),
        ("direction", "both"),
        ("max_hops", 0),
        ("ordering", "sideways"),
        ("token_budget", 0),
        ("node_match", "embedding"),
        ("seed", 1.5),
    ],
)
def test_other_config_errors_name_the_value(field, value):
    with pytest.raises(ConfigError, match=field):
        PathRAGConfig(**{field: value})


def test_config_is_frozen_and_keyword_only():
    c = PathRAGConfig()
    with pytest.raises(AttributeError):
        c.alpha = 0.5  # type: ignore[misc]
    with pytest.raises(TypeError):
        PathRAGConfig(40)  # type: ignore[misc]


def test_lite_preset():
    assert (PATHRAG_LT.num_nodes, PATHRAG_LT.top_k) == (20, 5)
    assert PathRAGConfig.lite(alpha=0.6).alpha == 0.6


def test_unknown_override_and_bad_override(chain):
    with pytest.raises(ConfigError, match="unknown PathRAG option"):
        chain.retrieve_from_nodes("q", ALL, topk=3)
    with pytest.raises(ConfigError, match="alpha"):
        chain.retrieve_from_nodes("q", ALL, alpha=0)


# ---------------------------------------------------------------- bad input
def test_fewer_than_two_retrieved_nodes_gives_documented_empty_result():
    g = KnowledgeGraph()
    g.add_node("only", name="only node")
    r = PathRAGRetriever(g, embedder=HashingEmbedder())
    res = r.retrieve("only node?")
    assert res.empty_reason == "fewer_than_two_nodes"
    assert res.paths == () and len(res.nodes) == 1
    assert "only node?" in res.prompt and "(no relational paths were found)" in res.prompt
    res2 = PathRAGRetriever(CHAIN, embedder=HashingEmbedder()).retrieve_from_nodes("q", ["a", "a"])
    assert res2.empty_reason == "fewer_than_two_nodes"


def test_no_path_between_any_pair():
    g = KnowledgeGraph.from_triples([("a", "r", "b"), ("c", "r", "d")])
    r = PathRAGRetriever(g, embedder=HashingEmbedder())
    res = r.retrieve_from_nodes("q", ["b", "d"])  # b and d are sinks in separate components
    assert res.empty_reason == "no_path"
    assert res.paths == () and res.trace["pool_size"] == 0
    assert res.trace["pairs_with_path"] == 0


def test_k_larger_than_pool_returns_whole_pool(chain):
    res = chain.retrieve_from_nodes("q", ALL, top_k=100)
    assert len(res.paths) == 6 and res.trace["k_shortfall"] == 94
    assert res.empty_reason is None


def test_unknown_node_and_bad_query(chain):
    with pytest.raises(NodeNotFoundError, match="zzz"):
        chain.retrieve_from_nodes("q", ["a", "zzz"])
    with pytest.raises(QueryError):
        chain.retrieve("   ")
    with pytest.raises(QueryError):
        chain.retrieve(42)  # type: ignore[arg-type]


# ---------------------------------------------------------------- keywords (4.1)
def test_offline_keywords_finds_names_and_content_words():
    kws = offline_keywords("What did Marie Curie discover in Paris with Pierre?")
    assert kws[:3] == ["Marie Curie", "Paris", "Pierre"]
    assert "discover" in kws and "What" not in kws
    kws = offline_keywords("Which award did the discoverers of radium receive for it?")
    assert kws[0] == "award" and "radium" in kws and "Which" not in kws
    assert offline_keywords("what is it?") == ["what is it?"]  # nothing survives -> query
    assert offline_keywords('the "half life" of radon')[0] == "half life"


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"entities": ["radium", "Nobel"], "concepts": ["award"]}', ["radium", "Nobel", "award"]),
        ("```json\n{'entities': ['radium',],}\n```", ["radium"]),  # fence, quotes, comma
        (
            'Sure! {"high_level_keywords": ["prize"], "low_level_keywords": ["Curie"]} hope',
            ["Curie", "prize"],
        ),
        ('["a", "b", "a", 3, ""]', ["a", "b"]),
        ('{"keywords": "radium"}', ["radium"]),
    ],
)
def test_parse_keywords_repairs_and_normalises(reply, expected):
    assert parse_keywords(reply) == expected


@pytest.mark.parametrize("reply", ["no json here", '{"entities": []}', "[1, 2]", "{"])
def test_malformed_llm_json_falls_back_to_offline(reply):
    llm = ScriptedLLM([reply])
    out = extract_keywords("Where was radium ore mined?", llm)
    assert out.source == "offline-fallback" and out.error
    assert out.keywords == tuple(offline_keywords("Where was radium ore mined?"))
    assert out.raw_reply == reply


def test_retriever_survives_malformed_llm_reply_and_records_it():
    r = PathRAGRetriever(load_demo_graph(), embedder=HashingEmbedder(), llm=ScriptedLLM(["oops"]))
    res = r.retrieve("Where was the ore for radium mined?")
    assert res.keyword_source == "offline-fallback"
    assert res.trace["keyword_error"] and res.paths


def test_custom_keyword_prompt_string_and_callable():
    llm = ScriptedLLM(['["x"]', '["y"]'])
    extract_keywords("q1", llm, prompt="KW for {query} please")
    extract_keywords("q2", llm, prompt=lambda q: f"call:{q}")
    assert llm.prompts == ["KW for q1 please", "call:q2"]


async def test_aretrieve_equals_retrieve():
    g = load_demo_graph()
    reply = '{"entities": ["radium", "Marie Curie"], "concepts": ["Nobel Prize"]}'
    r = PathRAGRetriever(g, embedder=HashingEmbedder(), llm=ScriptedLLM(lambda p: reply))
    q = "Which award did the discoverers of radium receive for it?"
    a, b = r.retrieve(q), await r.aretrieve(q)
    assert a.keyword_source == b.keyword_source == "llm"
    assert [p.ids for p in a.paths] == [p.ids for p in b.paths]
    assert [p.reliability for p in a.paths] == [p.reliability for p in b.paths]
    assert a.prompt == b.prompt


# ---------------------------------------------------------------- orderings (4.3, D)
def blocks(res) -> list[str]:
    return res.context.splitlines()


def test_ascending_puts_query_first_and_most_reliable_path_last(chain):
    res = chain.retrieve_from_nodes("Where does a lead?", ALL)
    rel = [p.reliability for p in res.prompt_paths]
    assert rel == sorted(rel)
    assert res.prompt_paths[-1] is res.paths[0] or res.prompt_paths[-1] == res.paths[0]
    # Eq. 6: q, then t_PK ... t_P1 ; nothing but the paths follows the question
    q_at = res.prompt.index("Where does a lead?")
    last = res.prompt.rindex(res.paths[0].text)
    first = res.prompt.index(res.paths[-1].text)
    assert q_at < first < last
    assert res.prompt.rstrip().endswith(res.paths[0].text)
    assert blocks(res)[0].startswith("Path 1: ")


def test_descending_and_random_and_seed(chain):
    desc = chain.retrieve_from_nodes("q", ALL, ordering="descending")
    assert [p.rank for p in desc.prompt_paths] == [1, 2, 3, 4, 5, 6]
    orders = {
        tuple(
            p.rank
            for p in chain.retrieve_from_nodes("q", ALL, ordering="random", seed=s).prompt_paths
        )
        for s in range(8)
    }
    assert len(orders) > 1 and all(sorted(o) == [1, 2, 3, 4, 5, 6] for o in orders)
    again = chain.retrieve_from_nodes("q", ALL, ordering="random", seed=3)
    assert [p.rank for p in again.prompt_paths] == [
        p.rank for p in chain.retrieve_from_nodes("q", ALL, ordering="random", seed=3).prompt_paths
    ]


def test_hop_first_selects_fewest_hops_from_the_pool_and_places_them_last(chain):
    # pool hops: 1,1,1,2,2,3 ; with K=4 the three 1-hop paths and one 2-hop path are chosen
    res = chain.retrieve_from_nodes("q", ALL, ordering="hop_first", top_k=4)
    hops = [p.hops for p in res.prompt_paths]
    assert hops[0] == 2 and hops[1:] == [1, 1, 1]
    # with fewer hops than K, paths beyond the top-K by reliability can be chosen
    res = chain.retrieve_from_nodes("q", ALL, ordering="hop_first", top_k=1)
    assert res.prompt_paths[0].hops == 1


def test_flat_format_lists_distinct_nodes_and_edges_without_paths(chain):
    res = chain.retrieve_from_nodes("q", ALL, ordering="flat")
    lines = blocks(res)
    assert all(line.startswith("- ") for line in lines)
    assert sorted(lines) == sorted(["- a", "- b", "- c", "- d", "- a to b", "- b to c", "- c to d"])
    assert "Path 1" not in res.prompt


def test_custom_ordering_policy(chain):
    class LongestFirst(PathOrdering):
        name = "longest_first"

        def arrange(self, pool, k, rng):
            return sorted(range(min(k, len(pool))), key=lambda i: -pool[i].hops)

    res = chain.retrieve_from_nodes("q", ALL, ordering=LongestFirst())
    assert res.prompt_paths[0].hops == 3 and res.trace["ordering"] == "longest_first"
    assert get_ordering("ascending") == AscendingReliability()


# ---------------------------------------------------------------- token budget
def test_token_budget_drops_least_reliable_first(chain):
    full = chain.retrieve_from_nodes("q", ALL)
    n = count_tokens(full.prompt)
    res = chain.retrieve_from_nodes("q", ALL, token_budget=n - 1)
    assert res.trace["budget"]["prompt_tokens"] <= n - 1
    assert count_tokens(res.prompt) == res.trace["budget"]["prompt_tokens"]
    assert res.trace["budget"]["dropped_paths"] == [full.paths[-1].describe()]
    assert len(res.prompt_paths) == 5 and full.paths[-1].ids not in [
        p.ids for p in res.prompt_paths
    ]
    assert len(res.paths) == 6  # the ranking itself is unchanged


def test_token_budget_smaller_than_query(chain):
    res = chain.retrieve_from_nodes("q", ALL, token_budget=5)
    assert res.prompt_paths == () and res.trace["budget"]["over_budget"] is True


# ---------------------------------------------------------------- result structure
def test_result_carries_paths_resources_and_trace(chain):
    res = chain.retrieve_from_nodes("q", ALL, **LITERAL)
    p = res.paths[-1]
    assert p.ids == ("a", "b", "c", "d") and p.hops == 3 and p.rank == 6
    assert p.resources == pytest.approx((1.0, 0.8, 0.64, 0.512))
    assert [e.relation for e in p.edges] == ["to"] * 3
    d = p.to_dict()
    assert d["path_node_ids"] == ["a", "b", "c", "d"] and math.isclose(d["reliability"], 0.984)
    assert {"propagations", "pool_size", "timings_ms", "ordering"} <= set(res.trace)
    assert [c.ids for c in res.candidates()] == [q.ids for q in res.paths]


def test_demo_graph_lite_saves_tokens_and_paths():
    g = load_demo_graph()
    r = PathRAGRetriever(g, embedder=HashingEmbedder())
    q = "Which award did the discoverers of radium receive for it?"
    # no similarity floor: the preset must take its full N = 20 nodes
    full = r.retrieve(q, min_similarity_z=None)
    lt = r.retrieve(q, num_nodes=20, top_k=5, min_similarity_z=None)
    assert len(full.paths) == 15 and len(lt.paths) == 5 and len(lt.nodes) == 20
    assert lt.token_count() < full.token_count()



def test_path_provenance_and_stable_id():
    g = KnowledgeGraph()
    g.add_passage("p1", "a")
    g.add_passage("p2", "b")
    g.add_node("a", provenance=["p1"])
    g.add_node("b", provenance=["p1"])
    g.add_node("c")
    g.add_edge("a", "b", "r", provenance=["p2"])
    g.add_edge("b", "c", "s", provenance=["p1", "p2"])

    def run():
        pr = PathRAGRetriever(g, embedder=HashingEmbedder(dim=32))
        return pr.retrieve_from_nodes("q", ["a", "c"])

    path = next(p for p in run().paths if p.ids == ("a", "b", "c"))
    assert path.provenance == ("p1", "p2")  # nodes first, then edges, first-seen order
    again = next(p for p in run().paths if p.ids == ("a", "b", "c"))
    assert path.stable_id == again.stable_id
    assert path.stable_id.startswith("pathrag-") and len(path.stable_id) == len("pathrag-") + 16
