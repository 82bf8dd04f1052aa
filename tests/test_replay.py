"""assemble_open (the lifecycle's one-pass merge) equals OpenExtractor.add_to_graph."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kgpath.graph import KnowledgeGraph
from kgpath.ingest import IngestReport
from kgpath.ingest.chunking import TextPassage
from kgpath.ingest.extraction import (
    ExtractedEntity,
    ExtractedRelation,
    Extraction,
    OpenExtractor,
)
from kgpath.ingest.replay import assemble_open

# surface forms that share keys ("Curie" / "curie" / "The Curie"), short forms of one
# longer name per document, ambiguous ones ("Curie": Marie or Pierre), an empty key
NAMES = ["Marie Curie", "Curie", "curie", "The Curie", "Curie's", "Pierre Curie", "Bohr",
         "Niels Bohr", "Paris", "PARIS", "Warsaw", "!!", " Bohr "]
TYPES = ["Person", "Place", "Concept", "Entity", ""]
KINDS = ["svo", "prep", "cooccurrence", "llm"]


class _Named(OpenExtractor):
    name = "scripted"

    def extract_passage(self, passage_id: str, text: str) -> Extraction:
        raise AssertionError("records are given")


entity = st.builds(ExtractedEntity, st.sampled_from(NAMES), st.sampled_from(TYPES),
                   st.sampled_from(["s1.", "s2.", ""]))
relation = st.builds(ExtractedRelation, st.sampled_from(NAMES), st.sampled_from(["r", "s"]),
                     st.sampled_from(NAMES), st.sampled_from(KINDS),
                     st.sampled_from(["s1.", "s3.", ""]))
passage = st.tuples(st.sampled_from(["A", "B", "C"]),
                    st.lists(entity, max_size=4), st.lists(relation, max_size=4))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(items=st.lists(passage, min_size=1, max_size=7))
def test_one_pass_merge_equals_add_to_graph(items) -> None:
    passages, records = [], []
    for i, (doc, ents, rels) in enumerate(items):
        pid = f"{doc}#{i}"
        passages.append(TextPassage(pid, f"text {i}", doc, {"doc_id": doc}))
        records.append(Extraction(pid, tuple(ents), tuple(rels)))
    ref = KnowledgeGraph()
    for p in passages:
        ref.add_passage(p.id, p.text, p.metadata)
    _Named().add_to_graph(ref, passages, records, IngestReport())
    got = assemble_open(passages, records, "scripted")
    assert list(got.nodes) == list(ref.nodes)
    assert list(got.edges) == list(ref.edges)
    assert list(got.passages.items()) == list(ref.passages.items())


def test_a_short_form_colliding_with_another_documents_name_gets_a_prime() -> None:
    # in doc A "Curie" abbreviates "Marie Curie" and comes first, so that node's id is
    # "Curie"; in doc B "Curie" is a name of its own and gets "Curie'"
    passages = [TextPassage("a", "x", "A"), TextPassage("b", "y", "B")]
    records = [
        Extraction("a", (ExtractedEntity("Curie", "Person"),
                         ExtractedEntity("Marie Curie", "Person"))),
        Extraction("b", (ExtractedEntity("Curie", "Place"),)),
    ]
    g = assemble_open(passages, records, "x")
    assert [(n.id, n.name, n.type, n.provenance) for n in g.nodes] == [
        ("Curie", "Curie", "Person", ("a",)), ("Curie'", "Curie", "Place", ("b",))]


document = st.lists(st.tuples(st.lists(entity, max_size=3), st.lists(relation, max_size=3)),
                    min_size=1, max_size=2)


def _reference(state: list[tuple[str, list]]) -> tuple[list, list, KnowledgeGraph]:
    passages, records = [], []
    for doc, chunks in state:
        for j, (ents, rels) in enumerate(chunks):
            pid = f"{doc}#{j}"
            passages.append(TextPassage(pid, f"{doc} {j}", doc, {"doc_id": doc}))
            records.append(Extraction(pid, tuple(ents), tuple(rels)))
    ref = KnowledgeGraph()
    for p in passages:
        ref.add_passage(p.id, p.text, p.metadata)
    _Named().add_to_graph(ref, passages, records, IngestReport())
    return passages, records, ref


@settings(max_examples=200, deadline=None, derandomize=True)
@given(start=st.lists(st.tuples(st.sampled_from("ABCD"), document), min_size=1, max_size=4,
                      unique_by=lambda d: d[0]),
       steps=st.lists(st.tuples(st.sampled_from(["delete", "replace", "append"]),
                                st.sampled_from("ABCDE"), document), min_size=1, max_size=5))
def test_incremental_updates_equal_a_merge_from_scratch(start, steps) -> None:
    from kgpath.ingest.replay import OpenAssembly

    asm = OpenAssembly("scripted")
    state = list(start)
    seq: dict[str, int] = {}  # stable places, as the ledger gives them
    records_of: dict[tuple[str, int], Extraction] = {}  # the same objects while unchanged
    for i, step in enumerate([None, *steps]):
        if step is not None:
            kind, doc, chunks = step
            ids = [d for d, _ in state]
            if kind == "delete" and doc in ids:
                state = [s for s in state if s[0] != doc]
            elif kind == "replace" and doc in ids:
                state = [(d, chunks if d == doc else c) for d, c in state]
            elif doc not in ids:
                state.append((doc, chunks))
        passages, records, ref = _reference(state)
        records = [records_of.setdefault((p.id, hash(repr(r))), r)
                   for p, r in zip(passages, records)]
        for d in [d for d in seq if d not in dict(state)]:
            del seq[d]
        places = [(seq.setdefault(p.doc_id, len(seq) + 100 * i), int(p.id.split("#")[1]))
                  for p in passages]
        got = assemble_open(passages, records, "scripted", assembly=asm,
                            places=places if i % 2 else None)
        assert list(got.nodes) == list(ref.nodes), i
        assert list(got.edges) == list(ref.edges), i
