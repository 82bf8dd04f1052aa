"""LlamaIndex PathRAG adapters: retriever, PathOrderPostprocessor, prompts, query engine.

Under ``PathRAGConfig.literal_eq4()`` (the literal Eq. 4 reading; the core's default
edge-flow reliability is tested against an oracle in ``tests/test_pathrag_edgeflow.py``),
truth is hand-computed on the chain a -> b -> c -> d (alpha 0.8, theta 0.05):
S along a chain from its start is 1, 0.8, 0.64, 0.512, so every 1-hop path has Eq. 4
reliability (1 + 0.8) / 1 = 1.8, every 2-hop path (1 + 0.8 + 0.64) / 2 = 1.22 and the 3-hop
path 2.952 / 3 = 0.984. N = 40 exceeds the 4 nodes, so all of them are retrieved.
"""

from __future__ import annotations

from typing import Any

import pytest
from llama_index.core.base.llms.types import (
    CompletionResponse,
    CompletionResponseGen,
    LLMMetadata,
)
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.llms.custom import CustomLLM
from llama_index.core.prompts import PromptTemplate
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode
from llama_index.retrievers.kgpath import (
    PATHRAG_KEYWORD_TEMPLATE,
    PATHRAG_QA_TEMPLATE,
    PathOrderPostprocessor,
    PathRAGRetriever,
    pathrag_query_engine,
)

from kgpath import ConfigError, HashingEmbedder, KnowledgeGraph, ScriptedLLM
from kgpath.methods.pathrag import PathRAGConfig
from kgpath.methods.pathrag import PathRAGRetriever as CorePathRAG

EXPECTED = [
    (("a", "b"), 1.8),
    (("b", "c"), 1.8),
    (("c", "d"), 1.8),
    (("a", "b", "c"), 1.22),
    (("b", "c", "d"), 1.22),
    (("a", "b", "c", "d"), 0.984),
]
QUERY = "Where does a lead to?"
LITERAL = PathRAGConfig.literal_eq4()
#: The literal Eq. 4 reading as keyword options (the hand-computed values below use it).
LIT = {f: getattr(LITERAL, f) for f in (
    "reliability", "direction", "max_hops", "eq3_at_start", "min_similarity",
    "min_similarity_z", "keyword_split")}


def chain() -> KnowledgeGraph:
    return KnowledgeGraph.from_triples(
        [("a", "to", "b"), ("b", "to", "c"), ("c", "to", "d")],
        passages={"p1": "a to b to c to d"},
        provenance=[["p1"], ["p1"], ["p1"]],
    )


@pytest.fixture
def retriever() -> PathRAGRetriever:
    return PathRAGRetriever.from_graph(chain(), embed_model=HashingEmbedder(), output="native",
                                       similarity_top_k=None, **LIT)  # all six paths


def snapshot(nodes: list[NodeWithScore]) -> list[tuple[str, float | None, dict[str, Any]]]:
    return [(n.node.node_id, n.score, dict(n.node.metadata)) for n in nodes]


# ---------------------------------------------------------------- retriever
def test_each_path_is_a_node_scored_by_reliability(retriever):
    nodes = retriever.retrieve(QUERY)
    got = [(tuple(n.node.metadata["kgpath_node_ids"]), n.score) for n in nodes]
    assert [p for p, _ in got] == [p for p, _ in EXPECTED]
    assert [s for _, s in got] == pytest.approx([s for _, s in EXPECTED])
    assert all(isinstance(n.score, float) for n in nodes)
    last = nodes[-1].node
    assert last.text == "a | a to b | b | b to c | c | c to d | d"  # Eq. 5
    md = last.metadata
    assert md["kgpath_hops"] == 3 and md["kgpath_rank"] == 6
    assert md["kgpath_method"] == "pathrag" and md["kgpath_kind"] == "path"
    assert md["kgpath_reliability"] == pytest.approx(0.984)
    assert md["kgpath_relations"] == ["to", "to", "to"]
    assert md["kgpath_path"] == "a -[to]-> b -[to]-> c -[to]-> d"
    assert md["kgpath_passage_ids"] == ["p1"]
    result = retriever.result(QUERY)  # the native result keeps what the trace does not
    assert result.paths[-1].resources == pytest.approx([1.0, 0.8, 0.64, 0.512])
    assert result.keyword_source == "offline"
    # metadata never leaks into the LLM context or the embedding text
    assert last.get_content(MetadataMode.LLM) == last.text
    assert last.get_content(MetadataMode.EMBED) == last.text
    assert len({n.node.node_id for n in nodes}) == 6


def test_path_passage_rule_cites_every_path():
    # passages="paths": the rule before issue 12 (the default is the authors' text units,
    # tests/test_pathrag_sources.py)
    r = PathRAGRetriever.from_graph(chain(), embed_model=HashingEmbedder(), passages="paths",
                                    **LIT)
    (p1,) = r.retrieve(QUERY)
    paths = PathRAGRetriever.from_graph(chain(), embed_model=HashingEmbedder(),
                                        output="native", similarity_top_k=None,
                                        **LIT).retrieve(QUERY)
    assert (p1.node.node_id, p1.node.text) == ("p1", "a to b to c to d")
    assert p1.score == pytest.approx(1.8)  # the most reliable path citing it (literal Eq. 4)
    assert p1.node.metadata["kgpath_supporting"] == [n.node.node_id for n in paths]


async def test_sync_equals_async(retriever):
    assert snapshot(retriever.retrieve(QUERY)) == snapshot(await retriever.aretrieve(QUERY))


@pytest.mark.parametrize("k", [1, 2, 5])
def test_top_k_honoured(k):
    paper = PathRAGConfig.paper()  # the paths themselves: the paper's node retrieval
    r = PathRAGRetriever.from_graph(chain(), embed_model=HashingEmbedder(), top_k=k,
                                    output="native", config=paper)
    assert len(r.retrieve(QUERY)) == k and r.config.top_k == k
    r = PathRAGRetriever.from_graph(chain(), embed_model=HashingEmbedder(),
                                    similarity_top_k=k, output="native", config=paper)
    assert len(r.retrieve(QUERY)) == k


def test_prompt_order_from_the_postprocessor():
    r = PathRAGRetriever.from_graph(chain(), embed_model=HashingEmbedder(), top_k=4,
                                    output="native", **LIT)
    scores = [n.score for n in PathOrderPostprocessor().postprocess_nodes(r.retrieve(QUERY))]
    assert len(scores) == 4
    assert scores == sorted(scores) and scores[-1] == pytest.approx(1.8)


def test_wraps_an_existing_core_retriever_and_llamaindex_llm_and_embedding():
    class JsonLLM(CustomLLM):
        prompts: list[str] = []

        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata()

        def complete(self, prompt: str, formatted: bool = False, **kw: Any) -> CompletionResponse:
            self.prompts.append(prompt)
            return CompletionResponse(text='{"entities": ["a", "d"], "concepts": []}')

        def stream_complete(
            self, prompt: str, formatted: bool = False, **kw: Any
        ) -> CompletionResponseGen:
            raise NotImplementedError

    llm = JsonLLM()
    r = PathRAGRetriever.from_graph(chain(), embed_model=MockEmbedding(embed_dim=8), llm=llm)
    result = r.result(QUERY)
    assert list(result.keywords) == ["a", "d"]
    assert result.keyword_source == "llm"
    assert QUERY in llm.prompts[0]
    core = CorePathRAG(chain(), embedder=HashingEmbedder())
    assert PathRAGRetriever(core).kgpath_retriever is core


def test_bad_construction():
    with pytest.raises(ConfigError, match="KnowledgeGraph"):
        PathRAGRetriever("graph")
    core = CorePathRAG(chain(), embedder=HashingEmbedder())
    with pytest.raises(ConfigError, match="only used when building"):
        PathRAGRetriever(core, embed_model=HashingEmbedder())
    with pytest.raises(ConfigError, match="top_k"):
        PathRAGRetriever(core, top_k=0)
    with pytest.raises(ConfigError, match=r"\['order'\].*accepted"):
        PathRAGRetriever(core, order="random")
    with pytest.raises(ConfigError, match="llm"):
        PathRAGRetriever(chain(), embed_model=HashingEmbedder(), llm=object())


def test_no_path_gives_no_nodes():
    g = KnowledgeGraph.from_triples([("a", "r", "b"), ("c", "r", "d")])
    r = PathRAGRetriever(CorePathRAG(g, embedder=HashingEmbedder()), output="native")
    # every node is retrieved; the only flow paths are a->b and c->d
    assert {tuple(n.node.metadata["kgpath_node_ids"]) for n in r.retrieve("x")} == {
        ("a", "b"),
        ("c", "d"),
    }
    g2 = KnowledgeGraph.from_triples([("a", "r", "b")])
    g2.add_node("z", name="z")
    r2 = PathRAGRetriever(CorePathRAG(g2, embedder=HashingEmbedder()), output="native")
    assert len(r2.retrieve("x")) == 1


# ---------------------------------------------------------------- prompts
def test_prompts_exposed_and_formatted_with_llamaindex_variables(retriever):
    prompts = retriever.get_prompts()
    assert set(prompts) == {"keyword_prompt", "path_qa_prompt"}
    text = prompts["path_qa_prompt"].format(query_str="Q?", context_str="P1\nP2")
    assert text.index("Q?") < text.index("P1") < text.index("P2")
    assert text.rstrip().endswith("P2")  # nothing follows the most reliable path
    assert "Q?" in PATHRAG_KEYWORD_TEMPLATE.format(query_str="Q?")


def test_update_prompts_reaches_the_core():
    llm = ScriptedLLM(lambda p: '["a"]')
    r = PathRAGRetriever.from_graph(chain(), embed_model=HashingEmbedder(), llm=llm, **LIT)
    r.update_prompts(
        {
            "keyword_prompt": PromptTemplate("KEYWORDS OF: {query_str}"),
            "path_qa_prompt": PromptTemplate("Q={query_str}\n{context_str}\nEND"),
        }
    )
    res = r.kgpath_retriever.retrieve(QUERY)
    assert llm.prompts[-1] == f"KEYWORDS OF: {QUERY}"
    assert res.prompt.startswith(f"Q={QUERY}\nPath 1: ") and res.prompt.endswith("END")
    assert r.get_prompts()["path_qa_prompt"].get_template().startswith("Q=")
    r.update_prompts({"keyword_prompt": PromptTemplate("plain {query}")})
    r.kgpath_retriever.retrieve(QUERY)
    assert llm.prompts[-1] == f"plain {QUERY}"
    with pytest.raises(ConfigError, match="variables"):
        r.update_prompts({"path_qa_prompt": PromptTemplate("no variables")})


# ---------------------------------------------------------------- postprocessor
def nws(text: str, score: float | None, **meta: Any) -> NodeWithScore:
    return NodeWithScore(node=TextNode(id_=text, text=text, metadata=meta), score=score)


def test_postprocessor_reorders_any_scored_nodes_ascending():
    nodes = [nws("x", 0.2), nws("best1", 0.9), nws("none", None), nws("m", 0.5), nws("best2", 0.9)]
    out = PathOrderPostprocessor().postprocess_nodes(nodes)
    # unscored first; ties keep the earlier-ranked node later (closest to the end)
    assert [n.node.node_id for n in out] == ["none", "x", "m", "best2", "best1"]
    top2 = PathOrderPostprocessor(top_n=2).postprocess_nodes(nodes)
    assert [n.node.node_id for n in top2] == ["best2", "best1"]
    by_meta = PathOrderPostprocessor(score_key="rel").postprocess_nodes(
        [nws("p", 0.1, rel=3.0), nws("q", 0.9, rel=1.0)]
    )
    assert [n.node.node_id for n in by_meta] == ["q", "p"]
    assert PathOrderPostprocessor().postprocess_nodes([]) == []
    with pytest.raises(ConfigError, match="not a number"):
        PathOrderPostprocessor(score_key="rel").postprocess_nodes([nws("p", 1.0, rel="high")])


async def test_postprocessor_async_matches_sync():
    nodes = [nws("a", 0.3), nws("b", 0.1), nws("c", 0.2)]
    post = PathOrderPostprocessor()
    assert [n.node.node_id for n in await post.apostprocess_nodes(nodes)] == ["b", "c", "a"]


# ---------------------------------------------------------------- query engine
def assert_eq6_prompt(prompt: str) -> None:
    """Query first, then the paths in ascending reliability (most reliable last)."""
    texts = {" | ".join(_expand(path)): rel for path, rel in EXPECTED}
    lines = prompt.splitlines()
    q_line = next(i for i, line in enumerate(lines) if QUERY in line)
    found = [(i, texts[line]) for i, line in enumerate(lines) if line in texts]
    assert len(found) == len(EXPECTED)
    assert q_line < found[0][0]
    assert [r for _, r in found] == sorted(r for _, r in found)
    assert prompt.rstrip().endswith("a | a to b | b")  # P_1 = a->b (1.8, smallest sequence)


def _expand(path: tuple[str, ...]) -> list[str]:
    parts = [path[0]]
    for u, v in zip(path, path[1:], strict=False):
        parts += [f"{u} to {v}", v]
    return parts


def test_qa_template_swapped_into_retriever_query_engine(retriever):
    engine = RetrieverQueryEngine.from_args(
        retriever, llm=MockLLM(), node_postprocessors=[PathOrderPostprocessor()]
    )
    engine.update_prompts({"response_synthesizer:text_qa_template": PATHRAG_QA_TEMPLATE})
    swapped = engine.get_prompts()["response_synthesizer:text_qa_template"]
    assert swapped.get_template() == PATHRAG_QA_TEMPLATE.get_template()
    response = engine.query(QUERY)  # MockLLM echoes the formatted prompt
    assert_eq6_prompt(str(response))
    assert [n.score for n in response.source_nodes] == sorted(
        n.score for n in response.source_nodes
    )


async def test_pathrag_query_engine_helper_sync_and_async(retriever):
    engine = pathrag_query_engine(retriever, llm=MockLLM())
    assert_eq6_prompt(str(engine.query(QUERY)))
    assert_eq6_prompt(str(await engine.aquery(QUERY)))
