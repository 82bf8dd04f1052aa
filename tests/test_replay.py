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
