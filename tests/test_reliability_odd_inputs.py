"""Issue 23, odd but legal inputs: paths, plain option values, long passages, metadata keys.

Each case either works as a user would expect or raises a typed kgpath error naming the
value; none escapes as a bare ``ValueError`` / ``FileExistsError`` or is silently changed.
"""

from __future__ import annotations

import json
import os

import pytest

from kgpath import ConfigError, HashingEmbedder, KnowledgeGraph, PersistenceError
from kgpath.index import GraphIndex
from kgpath.ingest import ChunkingConfig, SpacyExtractor, graph_from_documents
from kgpath.ingest.assemble import as_extractor
from kgpath.ingest.checkpoint import ExtractionCheckpoint
from kgpath.ingest.chunking import as_chunking, chunk_document, passage_document, user_metadata
from kgpath.ingest.documents import SourceDocument
from kgpath.ingest.llm_extractor import LLMExtractor
from kgpath.llm import ScriptedLLM

REPLY = json.dumps({"entities": [{"name": "Marie Curie", "type": "Person"},
                                 {"name": "Paris", "type": "Place"}],
                    "triples": [["Marie Curie", "lived in", "Paris"]]})


def small_graph() -> KnowledgeGraph:
    return KnowledgeGraph.from_triples([("a", "r", "b"), ("b", "s", "c")])


def llm() -> ScriptedLLM:
    return ScriptedLLM(lambda prompt: REPLY)


# ------------------------------------------------------------------ save / load paths
def test_save_to_the_current_directory_works_and_stays_a_graph(tmp_path, monkeypatch):
    """Issue 23: ``g.save(".")`` was refused (the temporary folder landed inside ".")."""
    here = tmp_path / "kg"
    here.mkdir()
    monkeypatch.chdir(here)
    g = small_graph()
    g.save(".")
    assert KnowledgeGraph.load(".").num_edges == 2  # "." is the saved graph afterwards
    g.add_edge("c", "a", relation="t")
    g.save(".")  # replacing the saved graph in place works too
    assert KnowledgeGraph.load(".").num_edges == 3
    assert KnowledgeGraph.load(here).num_edges == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kg"]  # no leftovers


def test_save_to_relative_and_home_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    small_graph().save("sub/kg")
    assert KnowledgeGraph.load(tmp_path / "sub" / "kg").num_nodes == 3
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    small_graph().save("~/kg")
    assert (tmp_path / "home" / "kg" / "manifest.json").is_file()
    assert KnowledgeGraph.load("~/kg").num_nodes == 3
    assert not (tmp_path / "~").exists()


def test_index_save_to_the_current_directory(tmp_path, monkeypatch):
    here = tmp_path / "ix"
    here.mkdir()
    monkeypatch.chdir(here)
    index = GraphIndex(small_graph(), HashingEmbedder(dim=16))
    index.save(".")
    assert GraphIndex.load(".", embedder=HashingEmbedder(dim=16)).graph.num_nodes == 3


@pytest.mark.parametrize("bad", ["", "   "])
def test_empty_paths_are_refused_by_name(bad, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="must not be empty"):
        small_graph().save(bad)
    with pytest.raises(ConfigError, match="must not be empty"):
        KnowledgeGraph.load(bad)
    with pytest.raises(ConfigError, match="must not be empty"):
        ExtractionCheckpoint(bad, "llm")
    with pytest.raises(ConfigError, match="cache_dir must not be empty"):
        LLMExtractor(llm(), cache_dir=bad)
    with pytest.raises(ConfigError, match="must not be empty"):
        GraphIndex(small_graph(), HashingEmbedder(dim=16)).save(bad)
    assert os.listdir(tmp_path) == []  # nothing written in the current directory


def test_save_over_an_existing_file_is_refused(tmp_path):
    f = tmp_path / "notes.txt"
    f.write_text("mine")
    with pytest.raises(PersistenceError, match="not a directory"):
        small_graph().save(f)
    assert f.read_text() == "mine"


# ------------------------------------------------------------------ cache and checkpoint dirs
def test_llm_cache_dir_that_is_a_file_is_a_typed_error(tmp_path):
    """Issue 23: a ``cache_dir`` that is a file escaped as ``FileExistsError`` mid-build."""
    f = tmp_path / "cache"
    f.write_text("x")
    with pytest.raises(PersistenceError, match=r"cache_dir .*cache.* not a directory"):
        LLMExtractor(llm(), cache_dir=f)


def test_checkpoint_dir_that_is_a_file_is_a_typed_error(tmp_path):
    f = tmp_path / "ckpt"
    f.write_text("x")
    with pytest.raises(PersistenceError, match=r"ckpt.* not a directory"):
        GraphIndex.from_documents([("d", "Marie Curie lived in Paris.")], llm=llm(),
                                  embedder=HashingEmbedder(dim=16), checkpoint=f)


def test_cache_and_checkpoint_under_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    ex = LLMExtractor(llm(), cache_dir="~/replies")
    GraphIndex.from_documents([("d", "Marie Curie lived in Paris.")], extractor=ex,
                              embedder=HashingEmbedder(dim=16), checkpoint="~/ckpt")
    assert len(list((tmp_path / "replies").glob("*.json"))) == 1
    assert len(list((tmp_path / "ckpt").glob("part-*.json"))) == 1


def test_hierarchy_and_schema_save_to_a_directory_or_empty_path(tmp_path):
    from kgpath.ingest import Schema

    schema = Schema(entities=["Person"])
    with pytest.raises(PersistenceError):
        schema.save(tmp_path)  # a directory: refused, nothing left behind
    assert os.listdir(tmp_path) == []
    with pytest.raises(ConfigError, match="must not be empty"):
        schema.save("")


# ------------------------------------------------------------------ plain option values
def test_chunking_plain_forms_read_as_the_config():
    want = ChunkingConfig(max_chars=100)
    assert as_chunking({"max_chars": 100}) == as_chunking(100) == want
    assert as_chunking(None) is None and as_chunking(want) is want


@pytest.mark.parametrize(("bad", "match"), [
    ("big", "chunking must be a kgpath ChunkingConfig.*got 'big'"),
    ({"max_char": 100}, r"unknown field\(s\) \['max_char'\]"),
    (True, "got True"),
    ({"max_chars": 10}, "max_chars must be an int >= 50"),
])
def test_chunking_bad_values_name_the_value(bad, match):
    with pytest.raises(ConfigError, match=match):
        as_chunking(bad)
    with pytest.raises(ConfigError, match=match):
        GraphIndex.from_documents([("d", "Marie Curie lived in Paris.")], llm=llm(),
                                  embedder=HashingEmbedder(dim=16), chunking=bad)


def test_from_documents_takes_a_chunking_dict_like_the_config():
    """Issue 23: ``chunking={"max_chars": 100}`` crashed (a dict has no ``max_chars``)."""
    docs = [("d", "Marie Curie lived in Paris. " * 12)]
    a = graph_from_documents(docs, llm=llm(), chunking={"max_chars": 100})
    b = graph_from_documents(docs, llm=llm(), chunking=ChunkingConfig(max_chars=100))
    assert sorted(a.passages) == sorted(b.passages) and len(a.passages) > 1
    ix = GraphIndex.from_documents(docs, llm=llm(), embedder=HashingEmbedder(dim=16),
                                   chunking={"max_chars": 100})
    assert sorted(ix.graph.passages) == sorted(b.passages)
    ix.add_documents([("e", "Pierre Curie lived in Paris. " * 12)], chunking={"max_chars": 100})
    assert "e#1" in ix.graph.passages


def test_extractor_names_read_as_extractors():
    assert isinstance(as_extractor("spacy"), SpacyExtractor)
    assert isinstance(as_extractor(" SpaCy "), SpacyExtractor)
    assert isinstance(as_extractor("llm", llm()), LLMExtractor)
    ex = SpacyExtractor()
    assert as_extractor(ex) is ex


@pytest.mark.parametrize(("bad", "match"), [
    ("nltk", r"one of the names \['spacy', 'llm'\], got 'nltk'"),
    ("schema", "need a schema"),
    ("llm", "extractor='llm' needs llm="),
    (42, "got int"),
])
def test_extractor_bad_values_name_the_value(bad, match):
    with pytest.raises(ConfigError, match=match):
        GraphIndex.from_documents([("d", "Marie Curie lived in Paris.")], extractor=bad,
                                  embedder=HashingEmbedder(dim=16))
    with pytest.raises(ConfigError, match=match):
        graph_from_documents([("d", "Marie Curie lived in Paris.")], extractor=bad)


def test_extractor_llm_name_with_an_llm_builds():
    g = graph_from_documents([("d", "Marie Curie lived in Paris.")], extractor="llm", llm=llm())
    assert {n.name for n in g.nodes} == {"Marie Curie", "Paris"}
    ix = GraphIndex.from_documents([("d", "Marie Curie lived in Paris.")], extractor="llm",
                                   llm=llm(), embedder=HashingEmbedder(dim=16))
    assert ix.graph.num_edges == 1


@pytest.mark.spacy
def test_extractor_spacy_string_equals_the_object():
    """Issue 23: ``extractor="spacy"`` was refused although it names the default."""
    docs = [("d", "Marie Curie discovered polonium in Paris.")]
    a = graph_from_documents(docs, extractor="spacy")
    b = graph_from_documents(docs, extractor=SpacyExtractor())
    triples = [sorted((e.source, e.relation, e.target) for e in g.edges) for g in (a, b)]
    assert triples[0] == triples[1] and triples[0]
    ix = GraphIndex.from_documents(docs, extractor="spacy", embedder=HashingEmbedder(dim=16))
    assert ix.graph.num_edges == b.num_edges


@pytest.mark.spacy
def test_index_load_takes_an_extractor_name(tmp_path):
    docs = [("d", "Marie Curie discovered polonium in Paris.")]
    ix = GraphIndex.from_documents(docs, extractor="spacy", embedder=HashingEmbedder(dim=16))
    ix.save(tmp_path / "ix")
    back = GraphIndex.load(tmp_path / "ix", embedder=HashingEmbedder(dim=16), extractor="spacy")
    assert isinstance(back.ledger.extractor, SpacyExtractor)
    with pytest.raises(ConfigError, match="got 'spcy'"):
        GraphIndex.load(tmp_path / "ix", embedder=HashingEmbedder(dim=16), extractor="spcy")


# ------------------------------------------------------------------ a 1 MB passage
class _LimitedNLP:
    """The real pipeline with spaCy's length check at ``max_length`` (as ``nlp(text)``)."""

    def __init__(self, max_length: int) -> None:
        from kgpath.ingest.spacy_extractor import load_pipeline

        self.nlp, self.max_length, self.longest = load_pipeline(), max_length, 0

    def _check(self, text: str) -> str:
        if len(text) > self.max_length:
            raise ValueError(f"[E088] Text of length {len(text)} exceeds maximum")
        self.longest = max(self.longest, len(text))
        return text

    def __call__(self, text: str):  # type: ignore[no-untyped-def]
        return self.nlp(self._check(text))

    def pipe(self, texts, batch_size=32):  # type: ignore[no-untyped-def]
        return self.nlp.pipe((self._check(t) for t in texts), batch_size=batch_size)


@pytest.mark.spacy
def test_a_passage_over_the_parser_limit_is_parsed_in_pieces(monkeypatch):
    """Issue 23: a 1 MB passage escaped as spaCy's ``ValueError`` (its length limit).

    Scaled down: the limit is 2,000 characters here, the pieces 1,000.
    """
    import kgpath.ingest.spacy_extractor as S

    monkeypatch.setattr(S, "PIECE_CHARS", 1000)
    nlp = _LimitedNLP(2000)
    ex = SpacyExtractor(nlp)
    text = " ".join(f"Marie Curie met Niels Bohr in Paris in {1900 + i}." for i in range(120))
    assert len(text) > 5000
    one = ex.extract_passage("p", text)
    assert nlp.longest <= 1000
    assert {e.name for e in one.entities} >= {"Marie Curie", "Niels Bohr", "Paris"}
    many = ex.extract([S.TextPassage("p", text, "p"), S.TextPassage("q", "Bohr met Curie.", "q")])
    assert many[0] == one and many[1].passage_id == "q"
    g = graph_from_documents([("d", text)], extractor=ex, chunking={"max_chars": 10**6})
    assert len(g.passages) == 1 and g.num_edges > 0


def test_text_pieces_cover_the_text_in_bounded_pieces():
    from kgpath.ingest.spacy_extractor import text_pieces

    text = "word " * 50_000 + "x" * 30
    pieces = text_pieces(text, 7_000)
    assert "".join(pieces) == text and max(map(len, pieces)) <= 7_000
    assert all(p.endswith(" ") for p in pieces[:-1])  # cut at spaces, never inside a word


# ------------------------------------------------------------------ user metadata keys
def test_user_doc_id_and_chunk_index_are_never_overwritten():
    """Issue 23: a document's own ``doc_id`` / ``chunk_index`` were replaced silently."""
    doc = SourceDocument("d", "", ("One sentence here, long enough to fill a passage.",
                                   "Two sentences here, long enough to need a second."),
                         {"doc_id": "parent-7", "chunk_index": 3, "source": "s.pdf"})
    ps = chunk_document(doc, ChunkingConfig(max_chars=50))
    assert [p.metadata["doc_id"] for p in ps] == ["parent-7", "parent-7"]
    assert [p.metadata["chunk_index"] for p in ps] == [3, 3]
    assert [p.metadata["kgpath_doc_id"] for p in ps] == ["d", "d"]
    assert [p.metadata["kgpath_chunk_index"] for p in ps] == [0, 1]
    assert [passage_document(p.metadata, p.id) for p in ps] == ["d", "d"]
    assert user_metadata(ps[1].metadata) == {"doc_id": "parent-7", "chunk_index": 3,
                                             "source": "s.pdf"}
    plain = chunk_document(SourceDocument("e", "", ("Hi there.",), {"a": 1}))
    assert plain[0].metadata == {"a": 1, "doc_id": "e", "chunk_index": 0}  # as before
    assert user_metadata(plain[0].metadata) == {"a": 1}


def test_index_with_user_doc_ids_updates_by_its_own_ids():
    docs = [{"id": "d1", "text": "Marie Curie lived in Paris.", "metadata": {"doc_id": "X"}},
            {"id": "d2", "text": "Marie Curie lived in Paris. Again.",
             "metadata": {"doc_id": "X"}}]
    ix = GraphIndex.from_documents(docs, llm=llm(), embedder=HashingEmbedder(dim=16))
    assert {p.metadata["doc_id"] for p in ix.graph.passages.values()} == {"X"}
    ix.delete_documents(["d1"])
    assert list(ix.graph.passages) == ["d2"]
    # a graph without a ledger groups passages by kgpath's document id too
    bare = GraphIndex(graph_from_documents(docs, llm=llm()), HashingEmbedder(dim=16))
    bare.delete_documents(["d2"])
    assert list(bare.graph.passages) == ["d1"]


def test_paths_are_path_objects_or_strings():
    with pytest.raises(ConfigError, match="str or os.PathLike"):
        small_graph().save(42)  # type: ignore[arg-type]


def test_chunk_graph_config_as_a_dict():
    from kgpath.ingest.chunk_graph import ChunkGraphConfig, build_chunk_graph

    docs = [("d", "Marie Curie lived in Paris. She won two prizes. Paris is in France.")]
    a = build_chunk_graph(docs, embedder=HashingEmbedder(dim=16), config={"window": 2})
    b = build_chunk_graph(docs, embedder=HashingEmbedder(dim=16),
                          config=ChunkGraphConfig(window=2))
    assert sorted(n.id for n in a.nodes) == sorted(n.id for n in b.nodes)
    with pytest.raises(ConfigError, match=r"unknown field\(s\) \['windows'\]"):
        build_chunk_graph(docs, embedder=HashingEmbedder(dim=16), config={"windows": 2})
    with pytest.raises(ConfigError, match="got 'big'"):
        build_chunk_graph(docs, embedder=HashingEmbedder(dim=16), config="big")


def test_schema_and_hierarchy_paths_under_home_and_directories(tmp_path, monkeypatch):
    from kgpath.ingest import Hierarchy, Schema

    monkeypatch.setenv("HOME", str(tmp_path))
    schema = Schema(entities=["Person"])
    schema.save("~/s.json")
    assert Schema.load("~/s.json") == schema
    with pytest.raises(PersistenceError):
        Hierarchy.load(tmp_path)  # a directory: typed, not IsADirectoryError
