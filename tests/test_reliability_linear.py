"""Issue 23, quadratic work on large input: the linear merges and checks give the results
of the quadratic ones they replaced.

Each fast function is compared with a brute-force reference (the code it replaced) on
random inputs, and run once at a size the quadratic code took minutes for, against a
result computed by hand from the input's structure. Timings are in
``benchmarks/bench_linear.py`` (ratios, not asserted here).
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping

import pytest

from kgpath.ingest import graph_from_documents
from kgpath.ingest.extraction import short_form_map
from kgpath.llm import ScriptedLLM
from kgpath.methods.c2rag.plan import parse_plan
from kgpath.methods.c2rag.plan_cycles import PlaceholderDag, cyclic_components


# ------------------------------------------------------------------ short forms
def short_form_reference(keys: list[str]) -> dict[str, str]:
    """The quadratic definition: every longer key scanned for every key."""
    uniq = list(dict.fromkeys(keys))
    toks = {k: k.split() for k in uniq}
    out = {}
    for short in uniq:
        st = toks[short]
        longer = [k for k in uniq if len(toks[k]) > len(st)
                  and (toks[k][: len(st)] == st or toks[k][-len(st):] == st)]
        if len(longer) == 1:
            out[short] = longer[0]
    return out


@pytest.mark.parametrize("seed", range(4))
def test_short_form_map_equals_the_scan_of_every_key(seed):
    rnd = random.Random(seed)
    for _ in range(1500):
        words = ["curie", "marie", "pierre", "bohr", "é"][: rnd.randint(1, 5)]
        keys = [rnd.choice([" ", "  "]).join(rnd.choice(words) for _ in range(rnd.randint(0, 5)))
                for _ in range(rnd.randint(0, 12))]
        got, want = short_form_map(keys), short_form_reference(keys)
        assert got == want and list(got) == list(want), keys


def test_short_form_map_of_20k_names_by_hand():
    """20k full names ``first<i> last<i mod m>`` (each last name shared by 3 of them), the
    lone last names (ambiguous: unmerged) and every other lone first name (unique)."""
    n, m = 20_000, 20_000 // 3 + 1
    keys = [f"first{i} last{i % m}" for i in range(n)]
    keys += [f"last{j}" for j in range(m)] + [f"first{i}" for i in range(0, n, 2)]
    assert short_form_map(keys) == {f"first{i}": f"first{i} last{i % m}"
                                    for i in range(0, n, 2)}


def test_extraction_of_one_reply_with_20k_triples():
    """Issue 23: one reply of 4k triples took 10 s, 15k over 120 s (the per-document merge)."""
    n = 20_000
    triples = [[f"Ann {i:x}", "r", f"{i:x}"] for i in range(n)]  # "ann 1f" and its "1f"
    reply = json.dumps({"triples": triples}, separators=(",", ":"))
    g = graph_from_documents([("d", "text")], llm=ScriptedLLM(lambda p: reply))
    # each lone "<hex>" is the last word of exactly one "Ann <hex>" -> merged into it, so
    # every triple is a self-loop and is dropped; one node per full name
    assert g.num_nodes == n and g.num_edges == 0
    assert {nd.name for nd in g.nodes} == {f"Ann {i:x}" for i in range(n)}


# ------------------------------------------------------------------ plan cycles
def cycles_reference(edges: list[tuple[str, str]]) -> list[list[str] | None]:
    """The quadratic definition: a sorted depth-first search of every kept edge per edge."""
    succ: dict[str, set[str]] = {}
    out: list[list[str] | None] = []
    for a, b in edges:
        path = _path(succ, b, a)
        out.append(path)
        if path is None:
            succ.setdefault(a, set()).add(b)
    return out


def _path(succ: Mapping[str, set[str]], src: str, dst: str) -> list[str] | None:
    parent: dict[str, str | None] = {src: None}
    stack = [src]
    while stack:
        node = stack.pop()
        if node == dst:
            out = [node]
            while parent[out[-1]] is not None:
                out.append(parent[out[-1]])  # type: ignore[arg-type]
            return out[::-1]
        for nxt in sorted(succ.get(node, ())):
            if nxt not in parent:
                parent[nxt] = node
                stack.append(nxt)
    return None


@pytest.mark.parametrize("seed", range(4))
def test_dynamic_order_rejects_the_edges_and_names_the_paths_of_the_full_search(seed):
    rnd = random.Random(seed)
    for _ in range(400):
        nodes = [f"?v{i}" for i in range(rnd.randint(1, 12))]
        edges = [(rnd.choice(nodes), rnd.choice(nodes)) for _ in range(rnd.randint(1, 40))]
        dag = PlaceholderDag()
        assert [dag.add(a, b) for a, b in edges] == cycles_reference(edges), edges


def test_cyclic_components_by_hand():
    edges = [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "e"), ("e", "d"),
             ("f", "f"), ("g", "a")]
    comp = cyclic_components(edges)
    assert set(comp) == {"a", "b", "c", "d", "e"}  # a self-loop is not a component
    assert comp["a"] == comp["b"] == comp["c"] != comp["d"] == comp["e"]


def c(h: str, t: str, r: str = "r") -> dict[str, object]:
    return {"head": h, "relation": r, "tail": t, "variants": ["v"]}


@pytest.mark.parametrize("seed", range(3))
def test_parse_plan_rejects_what_the_full_search_rejects(seed):
    rnd = random.Random(seed)
    for _ in range(300):
        ph = [f"?v{i}" for i in range(rnd.randint(1, 15))]
        edges = [(rnd.choice(ph), rnd.choice(ph)) for _ in range(rnd.randint(1, 50))]
        cs = [c("X", "?v0", "anchor")] + [c(a, b, f"r{i}") for i, (a, b) in enumerate(edges)]
        plan = parse_plan({"constraints": cs})
        want = {(i + 1, f"constraint closes a placeholder cycle {' -> '.join([a, *p])}")
                for i, ((a, _), p) in enumerate(zip(edges, cycles_reference(edges)))
                if p is not None}
        assert {(i, r) for i, r in plan.rejected if "cycle" in r} == want, edges


def test_parse_plan_of_20k_constraints_by_hand():
    """Issue 23: 3k constraints took 50 s (a whole-graph search per constraint)."""
    n = 20_000
    chain = [c(f"?v{i}", f"?v{i + 1}") for i in reversed(range(n))] + [c("X", "?v0")]
    plan = parse_plan({"constraints": chain})
    assert len(plan) == n + 1 and not plan.rejected
    rnd = random.Random(0)
    shuffled = chain[:-1]
    rnd.shuffle(shuffled)
    back = [c(f"?v{i + 1}", f"?v{i}", "back") for i in range(0, n, 2)]  # 2-cycles
    plan = parse_plan({"constraints": [chain[-1], *shuffled, *back]})
    assert len(plan) == n + 1 and len(plan.rejected) == n // 2
    assert {r for _, r in plan.rejected} == {
        f"constraint closes a placeholder cycle ?v{i + 1} -> ?v{i} -> ?v{i + 1}"
        for i in range(0, n, 2)}
    undeclared = [c("X", f"?u{i}", f"r{i}") for i in range(n)] + [c("X", "?v0")]
    plan = parse_plan({"placeholders": {f"?v{i}": "t" for i in range(n)},
                       "constraints": undeclared})
    assert len(plan) == 1 and len(plan.rejected) == n
    assert plan.rejected[0][1] == ("unknown placeholder '?u0' (declared: ['?v0', '?v1', "
                                   "'?v10', '?v100', '?v1000', '?v10000', '?v10001', "
                                   "'?v10002', '?v10003', '?v10004'] and 19990 more)")
    ungrounded = [c(f"?v{i}", f"?v{i + 1}") for i in reversed(range(n))] + [c("X", "?w")]
    plan = parse_plan({"constraints": ungrounded})
    assert len(plan) == 1 and len(plan.rejected) == n


# ------------------------------------------------------------------ the name merge
REPLY = json.dumps({"entities": [{"name": "Marie Curie", "type": "Person"},
                                 {"name": "Paris", "type": "Place"}],
                    "triples": [["Marie Curie", "lived in", "Paris"]]})


def test_an_entity_in_every_document_is_written_once(monkeypatch):
    """Issue 23 (found in the sweep): an entity and a triple named in each of ``P``
    documents were re-written with their whole provenance per document, ``P^2/2`` passage
    ids checked (10k documents: 28 s). Counted here, not timed."""
    import kgpath.graph.knowledge_graph as K

    checked = [0]
    real = K.as_provenance

    def counting(value, what):  # type: ignore[no-untyped-def]
        out = real(value, what)
        checked[0] += len(out)
        return out

    monkeypatch.setattr(K, "as_provenance", counting)
    n = 3000
    g = graph_from_documents([(f"d{i}", f"Text {i}.") for i in range(n)],
                             llm=ScriptedLLM(lambda p: REPLY), batch_size=n)
    ids = tuple(f"d{i}" for i in range(n))
    assert [(nd.name, nd.type, nd.provenance) for nd in g.nodes] == [
        ("Marie Curie", "Person", ids), ("Paris", "Place", ids)]
    (edge,) = g.edges
    assert (edge.relation, edge.provenance) == ("lived in", ids)
    assert checked[0] <= 10 * n  # each id checked a few times, not once per later document


def test_batch_merge_equals_one_passage_at_a_time():
    from kgpath.graph import KnowledgeGraph
    from kgpath.ingest.chunking import TextPassage
    from kgpath.ingest.extraction import ExtractedEntity, ExtractedRelation, Extraction
    from kgpath.ingest.extractor import IngestReport
    from kgpath.ingest.llm_extractor import LLMExtractor

    rnd = random.Random(3)
    names = ["Marie Curie", "Paris", "the Paris", "X", ""]  # no short forms: those merge
    # by what the graph holds, which differs between the two ways
    for _ in range(300):
        passages, records = [], []
        for i in range(rnd.randint(1, 8)):  # one passage per document: same short forms
            passages.append(TextPassage(f"d{i}", "text", f"d{i}"))
            records.append(Extraction(
                f"d{i}",
                tuple(ExtractedEntity(rnd.choice(names), rnd.choice(["Person", "Concept"]))
                      for _ in range(rnd.randint(0, 3))),
                tuple(ExtractedRelation(rnd.choice(names), rnd.choice("rq"), rnd.choice(names),
                                        rnd.choice(["svo", "cooccurrence"]),
                                        rnd.choice(["", "s"]))
                      for _ in range(rnd.randint(0, 4)))))
        ex = LLMExtractor(ScriptedLLM(lambda p: REPLY))
        graphs = []
        for batches in ([list(range(len(passages)))], [[i] for i in range(len(passages))]):
            g = KnowledgeGraph()
            for b in batches:
                ex.add_to_graph(g, [passages[i] for i in b], [records[i] for i in b],
                                IngestReport())
            graphs.append(([(n.id, n.provenance) for n in g.nodes],  # types: votes per call
                           [(e.source, e.target, e.relation, e.text, e.type, e.weight,
                             e.provenance) for e in g.edges]))
        assert graphs[0] == graphs[1]


def test_schema_family_writes_a_repeated_triple_once(monkeypatch):
    """Found in the sweep: the schema family's assembly checked provenance in a list and
    re-wrote a triple stated in each of ``P`` passages ``P`` times (20k: 17 s)."""
    import kgpath.graph.knowledge_graph as K
    from kgpath.ingest.extract.bound import assemble_graph
    from kgpath.ingest.extract.records import TypedEntity, TypedTriple
    from kgpath.ingest.schema import Schema

    checked = [0]
    real = K.as_provenance

    def counting(value, what):  # type: ignore[no-untyped-def]
        out = real(value, what)
        checked[0] += len(out)
        return out

    monkeypatch.setattr(K, "as_provenance", counting)
    n = 3000
    schema = Schema(entities=["Person", "Place"], relations=[("Person", "lived in", "Place")])
    res = assemble_graph(
        schema, [TypedEntity(name="Marie Curie", type="Person", source=f"p{i}") for i in range(n)],
        [TypedTriple(head="Marie Curie", head_type="Person", relation="lived in", tail="Paris",
                     tail_type="Place", source=f"p{i}", confidence=i / n) for i in range(n)])
    ids = tuple(f"p{i}" for i in range(n))
    (edge,) = res.graph.edges
    assert edge.provenance == ids and edge.metadata["confidence"] == (n - 1) / n  # the last
    assert res.graph.node("Marie Curie").provenance == ids and len(res.triples) == n
    assert checked[0] <= 10 * n


# ------------------------------------------------------------------ dependency paths
def _old_shortest_path(a, b):  # type: ignore[no-untyped-def]
    up_a, up_b = [a, *a.ancestors], [b, *b.ancestors]
    pos_b = {t.i: k for k, t in enumerate(up_b)}
    for k, t in enumerate(up_a):
        if t.i in pos_b:
            return up_a[:k + 1] + list(reversed(up_b[:pos_b[t.i]]))
    return []


@pytest.mark.spacy
def test_paths_and_tops_equal_the_ancestor_definitions():
    from kgpath.ingest import dependency_relations as D
    from kgpath.ingest.spacy_extractor import load_pipeline

    doc = load_pipeline()(
        "Bohr spent a year in Manchester and proposed the Bohr model. The film was "
        "directed, written and produced by John Smith and starred Anna Lee as Maria, a "
        "nurse from Boston, Massachusetts. X and Y founded Z.")
    memo: dict[int, int] = {}
    for a in doc:
        for b in doc:
            old = _old_shortest_path(a, b)
            assert [t.i for t in D.shortest_path(a, b, memo)] == [t.i for t in old]
            assert [t.i for t in D.shortest_path(a, b)] == [t.i for t in old]
            if old:
                want = min(range(len(old)), key=lambda k: len(list(old[k].ancestors)))
                assert D._top(old) == want


@pytest.mark.spacy
def test_a_run_on_sentence_pairs_each_mention_with_a_bounded_number(monkeypatch):
    """Found in the sweep: a 4,000-character sentence without a full stop took 6 s to read
    (every pair of its mentions, each path found through every token's ancestors)."""
    from kgpath.ingest import dependency_relations as D
    from kgpath.ingest.spacy_extractor import load_pipeline

    doc = load_pipeline()(" ".join(f"Anna{i} met Bob{i} in Rome and" for i in range(150)))
    mentions = [D.Mention(t.text, "Person", t.i, t.i + 1, t.i) for t in doc
                if t.text[:1] in "AB" and t.text[-1:].isdigit()]
    tried = [0]
    real = D.shortest_path

    def counting(a, b, depth=None):  # type: ignore[no-untyped-def]
        tried[0] += 1
        return real(a, b, depth)

    monkeypatch.setattr(D, "shortest_path", counting)
    list(D.path_relations(doc, mentions, doc.text))
    assert len(mentions) == 300 and tried[0] <= D.MAX_PAIR_SPAN * len(mentions)
