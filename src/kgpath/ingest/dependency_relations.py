"""Relations between entity mentions from the shortest dependency path (Bunescu & Mooney 2005).

R. C. Bunescu and R. J. Mooney, "A Shortest Path Dependency Kernel for Relation Extraction",
HLT/EMNLP 2005: the information about the relation between two entity mentions of one
sentence is concentrated on the shortest path between them in the dependency graph. Their
kernel *learns* from the path; here, offline and without training data, the path is read by
rules (a kgpath heuristic built on that observation):

* a relation is emitted for two mentions of one sentence when the path between them has at
  most ``max_path`` edges (4, chosen on passages 0-24 of the hand labels among 3/4/5) and at
  most :data:`MAX_PREDICATES` verbs, passes through a *trigger* (a verb, a preposition, a
  copula, an apposition, or one name possessing the other) and through no other entity
  mention (that mention would be the one related);
* not emitted (each filter measured on passages 0-24): two adjuncts of one verb ("played on
  Sunday at Wrigley Field"), two clauses with subjects of their own, appositions other than
  "City, State" and "X, <noun> of Y" (the small model parses name lists as appositions), the
  subject and an adjunct of a verb with a named object (the adjunct is about the object),
  and the pairs of two lists ("stars A and B as C and D");
* free hops (a kgpath extension, from the misses of passages 25-49, :func:`_free_edges`): the
  subject -> copula -> predicate noun hops ("X is a game developed by Y" relates X and Y as
  "the game developed by Y"), verb -> "as" -> role noun ("competed as members of Y"), and the
  hops between coordinated verbs ("directed and written by Y") do not count towards
  ``max_path``; a relative clause whose subject is "which/that/who" is not a second clause;
  "Wakefield, West Yorkshire" with no "and"/"or" in the chain is an address, not a list;
* coordination is transparent: the path starts at the first conjunct, so "X and Y founded Z"
  gives ``X -[founded]-> Z`` and ``Y -[founded]-> Z`` (conjunction distribution), and two
  conjuncts of one list are not related to each other by their coordination;
* the label is the verb phrase, nouns and prepositions on the path in sentence order
  ("is album by", "was played at"); the head is the subject's side (the passive agent's side
  when there is one), else the earlier mention.

Mentions are named entities (NER, proper-noun runs), the document's topic (see
:mod:`kgpath.ingest.spacy_extractor`) and, optionally, *concepts*: a bare singular common
noun (no determiner, possessive or number: "polonium"), or "the" with classifying modifiers
("the Bohr model", "the photoelectric effect": :func:`_named_kind`), that is a verb's
object, related only to that verb's subject. A relation needs at least one named end.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from kgpath.ingest.extraction import ExtractedRelation

__all__ = [
    "Mention", "concept_mentions", "path_relations", "shortest_path", "span_root",
    "term_mentions",
]

_ARG_DEPS = ("nsubj", "nsubjpass", "dobj", "pobj", "attr", "appos", "conj", "dative", "oprd")
_SUBJ_DEPS = ("nsubj", "csubj", "agent")
_DETERMINERS = ("det", "poss", "nummod", "predet")
_ADJUNCT_DEPS = ("prep", "npadvmod", "advmod", "advcl", "tmod")
MAX_PAIR_SPAN = 32
"""Mentions after a mention (in sentence order) it is paired with (:func:`path_relations`);
a kgpath bound on the work of a run-on sentence, reached by no sentence of the labelled
HotpotQA passages."""
MAX_PREDICATES = 2
"""Most verbs/copulas inside a path (2 beat 1 on passages 0-24: recall 0.57 vs 0.48 at
precision 0.66 vs 0.67)."""
CONCEPT_TAGS = ("NN",)
"""Fine-grained tags a concept may have (singular: plurals were mostly generic, "fans")."""


@dataclass(frozen=True)
class Mention:
    """One mention in a parsed sentence: display name, node type, token span and root."""

    name: str
    type: str
    start: int
    end: int
    """Token indices (document), ``end`` exclusive."""
    root: int
    named: bool = True
    """False for a concept (a bare common-noun phrase)."""


def span_root(doc: Any, start: int, end: int) -> int:
    """The token of ``doc[start:end]`` whose head lies outside the span."""
    for t in doc[start:end]:
        if t.head.i < start or t.head.i >= end or t.head.i == t.i:
            return t.i
    return end - 1


def concept_mentions(sent: Any, taken: set[int], noun_phrase: Any) -> list[Mention]:
    """Bare singular common nouns that are a verb's object ("discovered polonium").

    Bare: no determiner, possessive or number, so the noun names a kind of thing (a
    substance, a field) rather than one referent of the text ("the album", "two games").
    Object: the direct object of a verb, or the passive subject when an agent names the
    doer ("Polonium was discovered by Marie Curie"), or a conjunct of one.
    ``noun_phrase(token)`` gives the display name; ``taken`` are the tokens of other
    mentions.
    """
    first = next((t.i for t in sent if not t.is_space), sent.start)
    out = []
    for tok in sent:
        if (tok.pos_ != "NOUN" or tok.tag_ not in CONCEPT_TAGS or tok.i in taken
                or (tok.text[:1].isupper() and tok.i != first)
                or not (_bare(tok) or _named_kind(tok))
                or _object_of(tok) is None):
            continue
        out.append(Mention(noun_phrase(tok), "Concept", tok.i, tok.i + 1, tok.i, named=False))
    return out


def _bare(tok: Any) -> bool:
    """No determiner, possessive or number."""
    return not any(c.dep_ in _DETERMINERS for c in tok.children)


def _named_kind(tok: Any) -> bool:
    """"the Bohr model", "the photoelectric effect": "the" and classifying modifiers only.

    A definite noun with a noun-noun compound names a kind; so does one with adjectives when
    its noun is new to the document and no adjective is part of an entity (a date or
    ordinal: "the entire season", "the 27th consecutive time"). A definite noun alone, or
    one whose noun came before, refers back ("the season", "the album"). Chosen on the demo
    corpus (typed-only recall 0.30 -> 0.38) with no change on the 50 HotpotQA passages.
    """
    dets = [c for c in tok.children if c.dep_ in _DETERMINERS]
    mods = [c for c in tok.children if c.i < tok.i and c.dep_ not in _DETERMINERS]
    if not (len(dets) == 1 and dets[0].lower_ == "the" and mods):
        return False
    if all(c.dep_ == "compound" for c in mods):
        return True
    return (all(c.dep_ == "compound" or (c.dep_ == "amod" and not c.ent_type_) for c in mods)
            and all(t.lemma_ != tok.lemma_ for t in tok.doc[:tok.i]))


def term_mentions(sent: Any, taken: set[int], noun_phrase: Any) -> list[Mention]:
    """Bare common-noun arguments, singular or plural ("alpha particles", "nuclear fission").

    Wider than :func:`concept_mentions`: these only take part in co-occurrence edges.
    """
    first = next((t.i for t in sent if not t.is_space), sent.start)
    return [Mention(noun_phrase(t), "Concept", t.i, t.i + 1, t.i, named=False) for t in sent
            if t.pos_ == "NOUN" and t.i not in taken and t.dep_ in _ARG_DEPS
            and not (t.text[:1].isupper() and t.i != first)
            and not any(c.dep_ in _DETERMINERS for c in t.children)]


def _object_of(tok: Any) -> Any:
    """The verb ``tok`` is the object of (through conjuncts), else None."""
    while tok.dep_ == "conj" and tok.head.pos_ == "NOUN":
        tok = tok.head
    verb = tok.head
    if verb.pos_ != "VERB":
        return None
    if tok.dep_ == "dobj" or (tok.dep_ == "nsubjpass"
                              and any(c.dep_ == "agent" for c in verb.children)):
        return verb
    return None


def _concept_path(path: Sequence[Any]) -> bool:
    """A concept is related only to the subject (or agent) of the verb it is the object of.

    subject -> verb -> object, or agent -> by -> verb -> passive subject; the verb may be a
    conjunct of the subject's verb ("Bohr spent a year in Manchester and proposed the Bohr
    model").
    """
    inner = [t for t in path[1:-1]]
    verbs = [t for t in inner if t.pos_ == "VERB"]  # a verb coordinated with the subject's
    on = {x.i for x in path}
    main = [t for t in verbs if not _verb_conj(t, path, on)]  # verb shares its subject
    return (len(main) == 1 and all(t in verbs or t.dep_ == "agent" for t in inner)
            and any(t.dep_ in ("nsubj", "pobj") for t in (path[0], path[-1])))


def _strip_conj(path: list[Any]) -> list[Any]:
    """Drop the climb up a coordination at either end of the path.

    "X and Y founded Z": the path Y -conj-> X -nsubj-> founded -> Z starts, once stripped,
    at X (the first conjunct), so Y is related to Z as X is (conjunction distribution).
    """
    while len(path) > 2 and path[0].dep_ == "conj" and path[0].head.i == path[1].i:
        path = path[1:]
    while len(path) > 2 and path[-1].dep_ == "conj" and path[-1].head.i == path[-2].i:
        path = path[:-1]
    return path


def shortest_path(a: Any, b: Any, depth: dict[int, int] | None = None) -> list[Any]:
    """Tokens on the dependency-tree path from ``a`` to ``b`` (both included).

    Both ends climb to their lowest common ancestor, the deeper first, so the cost is the
    path's length, not the tree's depth (``depth``: a memo of token depths, shared by the
    calls of one document; ``[]`` when the two are in different trees).
    """
    memo = {} if depth is None else depth
    left, right = [a], [b]
    x, y = a, b
    dx, dy = _depth(x, memo), _depth(y, memo)
    while dx > dy:
        x = x.head
        left.append(x)
        dx -= 1
    while dy > dx:
        y = y.head
        right.append(y)
        dy -= 1
    while x.i != y.i:
        if x.head.i == x.i:  # two roots: not one tree
            return []
        x, y = x.head, y.head
        left.append(x)
        right.append(y)
    return left + right[-2::-1]


def _depth(tok: Any, memo: dict[int, int]) -> int:
    """Edges from ``tok`` up to its root (memoised: linear over a whole document)."""
    chain = []
    while tok.i not in memo and tok.head.i != tok.i:
        chain.append(tok.i)
        tok = tok.head
    d = memo.setdefault(tok.i, 0)
    for i in reversed(chain):
        d += 1
        memo[i] = d
    return memo[chain[0]] if chain else d


def _conjuncts(path: Sequence[Any]) -> bool:
    """Every edge of the path is a coordination: two members of one list."""
    return all((x.dep_ == "conj" and x.head.i == y.i) or (y.dep_ == "conj" and y.head.i == x.i)
               for x, y in zip(path, path[1:]))


def _in_list(tok: Any) -> bool:
    """The token is one member of a coordination of nouns."""
    return (tok.dep_ == "conj" and tok.head.pos_ in ("NOUN", "PROPN")) or any(
        c.dep_ == "conj" and c.pos_ in ("NOUN", "PROPN") for c in tok.children)


def _object_adjunct(path: Sequence[Any], named_objects: set[int]) -> bool:
    """Subject and an adjunct of a verb that has a named direct object.

    "The Raptors acquired Murray from the Cavaliers": the adjunct is about the object (Murray
    came from the Cavaliers), so the subject is not related to it; the object is.
    """
    top = _top(path)
    verb = path[top]
    if verb.pos_ not in ("VERB", "AUX") or not 0 < top < len(path) - 1:
        return False
    sides = {path[top - 1].dep_, path[top + 1].dep_}
    return ("prep" in sides and sides & {"nsubj", "nsubjpass", "csubj"} != set()
            and any(c.dep_ == "dobj" and c.i in named_objects for c in verb.children))


def _trigger(path: Sequence[Any]) -> bool:
    """A verb, preposition or apposition on the path, or one name possessing the other."""
    inner = path[1:-1]
    return (any(t.pos_ in ("VERB", "AUX", "ADP") for t in inner)
            or any(t.dep_ == "appos" for t in path) or _possessive(path))


def _possessive(path: Sequence[Any]) -> bool:
    """"Brazil's Marta": the possessor is the path's one edge."""
    return len(path) == 2 and any(t.dep_ == "poss" for t in path)


def _adjuncts_of_one_head(path: Sequence[Any]) -> bool:
    """Both ends hang off the path's top as adjuncts ("played on Sunday at Wrigley Field")."""
    top = _top(path)
    sides = [path[k] for k in (top - 1, top + 1) if 0 <= k < len(path)]
    return len(sides) == 2 and all(t.dep_ in _ADJUNCT_DEPS for t in sides)


def _top(path: Sequence[Any]) -> int:
    """Index of the path's highest token (the two ends' lowest common ancestor).

    On a tree path it is the one token whose head is not on the path (or the root): found
    in the path's length, not the tree's depth per token.
    """
    on = {t.i for t in path}
    return next((k for k, t in enumerate(path) if t.head.i == t.i or t.head.i not in on), 0)


def _crosses_clause(path: Sequence[Any]) -> bool:
    """A predicate below the path's top has a subject of its own: the ends are in two clauses.

    "Mullin missed 20 games and Hardaway missed 16" relates neither Mullin to Hardaway nor
    Mullin to the 16; a subjectless lower clause (shared subject of a coordinated verb, a
    participle, an infinitive) keeps the upper subject ("relocated from", "traded X to Y").
    A relative clause whose subject is the relative pronoun ("Act of Aggression, which is
    considered a successor to Act of War") is about the noun it modifies: no second clause.
    """
    top = _top(path)
    for k, t in enumerate(path):
        if k != top and (t.pos_ == "VERB" or t.pos_ == "AUX") and any(
                c.dep_ in ("nsubj", "nsubjpass", "csubj") and not _relative_subject(c)
                for c in t.children):
            return True
    return False


def _relative_subject(tok: Any) -> bool:
    """A relative pronoun (which/that/who) subject of a relative clause."""
    return tok.head.dep_ == "relcl" and tok.lower_ in ("which", "that", "who")


def _bad_appos(path: Sequence[Any], a: Mention, b: Mention) -> bool:
    """Appositions kept: "City, State" and a name in apposition to a noun with a preposition.

    The noun's preposition leads on: "X, <noun> of Y" and "the <noun> X by Y".

    Apposition is identity, so the noun's prepositional phrase is about the name ("Bert Bell,
    co-founder of the Philadelphia Eagles"; "the novel A Christmas Carol by Charles Dickens",
    the second form added from the held-out misses of passages 25-49). Other appositions
    between names are mostly lists ("David, Hiorns, Skaer") that the small model parses as
    appositions.
    """
    appos = [k for k in range(len(path) - 1) if _appos_edge(path[k], path[k + 1])]
    if not appos and not any(t.dep_ == "appos" for t in path):
        return False
    if len(path) == 2:
        return not (a.type == b.type == "Place")
    if len(appos) != 1 or appos[0] not in (0, len(path) - 2):
        return True
    ends = path if appos[0] == 0 else list(reversed(path))  # the apposition first
    return not (ends[1].pos_ == "NOUN" and ends[2].pos_ == "ADP")


def _appos_edge(x: Any, y: Any) -> bool:
    """``x`` and ``y`` are joined by an apposition edge (either way)."""
    return (x.dep_ == "appos" and x.head.i == y.i) or (y.dep_ == "appos" and y.head.i == x.i)


def _objects_of_two_verbs(path: Sequence[Any]) -> bool:
    """Two predicates on the path and neither end is a subject.

    "signed Walker while acquiring Hunter from the Bucks": the verbs share a subject, and
    their objects are not related to each other; a shared *subject* is ("the Rams became
    ... relocated to Los Angeles").
    """
    verbs = sum(t.pos_ == "VERB" or (t.pos_ == "AUX" and t.dep_ not in ("aux", "auxpass"))
                for t in path[1:-1])  # coordinated verbs count apart here: "directed by
    if verbs < 2:  # A and produced by B" relates neither A to B (their arguments)
        return False
    return not any(t.dep_ in ("nsubj", "nsubjpass", "csubj") for t in (path[0], path[-1]))


def _predicates(path: Sequence[Any]) -> int:
    """Verbs and copulas inside the path (auxiliaries excluded); coordinated verbs count once.

    "directed, written and produced by X" is one predicate with a shared agent
    (:func:`_free_edges`).
    """
    on = {x.i for x in path}
    return sum((t.pos_ == "VERB" or (t.pos_ == "AUX" and t.dep_ not in ("aux", "auxpass")))
               and not _verb_conj(t, path, on) for t in path[1:-1])


def _verb_conj(t: Any, path: Sequence[Any], on: set[int] | None = None) -> bool:
    """``t`` is a verb coordinated with (the conjunct of) a verb on the path.

    ``on``: the path's token indices, when the caller asks for many tokens of one path.
    """
    if not (t.dep_ == "conj" and t.pos_ == "VERB" and t.head.pos_ == "VERB"):
        return False
    return t.head.i in ({x.i for x in path} if on is None else on)


def _copula_collapse(path: Sequence[Any]) -> bool:
    """The path runs subject -> copula -> predicate noun: "X is a game developed by Y".

    The predicate nominal of a copula names its subject, so the two hops through "is" say
    nothing of the relation (the copula is transparent, as in the collapsed dependencies of
    de Marneffe & Manning 2008, where the predicate nominal heads the clause). The subject
    and the attribute must be adjacent to the copula on the path.
    """
    for k in range(1, len(path) - 1):
        cop = path[k]
        sides = {path[k - 1].dep_, path[k + 1].dep_}
        if (cop.lemma_ == "be" and cop.pos_ == "AUX" and sides == {"nsubj", "attr"}
                and path[k - 1].head.i == path[k + 1].head.i == cop.i):
            return True
    return False


def _free_edges(path: Sequence[Any]) -> int:
    """Edges not counted against ``max_path`` (a kgpath extension of the path rule).

    The two hops subject -> copula -> predicate noun (:func:`_copula_collapse`), the two hops
    verb -> "as" -> role noun (:func:`_as_role`) and every hop between coordinated verbs
    ("directed and written by X": the agent is shared). Chosen from the held-out misses of
    passages 25-49 (issue 11, second helper): 9 of the 77 missed gold triples were "X is a
    <noun> <participle> ... Y" at 5-7 edges.
    """
    on = {x.i for x in path}
    conj = sum(_verb_conj(t, path, on) for t in path)
    return conj + (2 if _copula_collapse(path) else 0) + (2 if _as_role(path) else 0)


def _as_role(path: Sequence[Any]) -> bool:
    """The path runs verb -> "as" -> role noun -> preposition: "competed as members of Y".

    A predicative "as" phrase names a role of the verb's subject (a secondary predication),
    so, like a copula, its two hops are free: "Wilkens was let go as head coach of the
    Raptors", "she made her debut as part of the group Sunday Girls".
    """
    for k in range(1, len(path) - 2):
        prep, noun, nxt = path[k], path[k + 1], path[k + 2]
        if (prep.lower_ == "as" and prep.dep_ == "prep" and path[k - 1].pos_ in ("VERB", "AUX")
                and prep.head.i == path[k - 1].i and noun.dep_ == "pobj"
                and noun.pos_ == "NOUN" and nxt.pos_ == "ADP" and nxt.head.i == noun.i):
            return True
    return False


def _label(path: Sequence[Any]) -> str:
    """Verb phrases, nouns and prepositions of the path's inside, in sentence order."""
    words: list[str] = []
    active = any(t.dep_ == "agent" for t in path)  # "discovered by X" reads "X discovered"
    on = {x.i for x in path}
    conj_heads = {u.head.i for u in path if _verb_conj(u, path, on)}
    for t in sorted(path[1:-1], key=lambda t: t.i):
        if t.dep_ == "agent" or t.i in conj_heads:
            continue  # of coordinated verbs, the one the argument hangs from is the label
        if t.pos_ in ("VERB", "AUX"):
            aux = [c.text.lower() for c in t.children
                   if c.dep_ == "neg" or (c.dep_ == "auxpass" and not active)]
            prt = [c.text.lower() for c in t.children if c.dep_ == "prt"]
            words += [*aux, t.text.lower(), *prt]
        elif t.pos_ == "ADP":
            words.append(t.text.lower())
        elif t.pos_ in ("NOUN", "PROPN"):
            words.append(t.lemma_.lower())
    if not words and _possessive(path):
        return "of"
    return " ".join(words) or "related to"


def _kind(path: Sequence[Any]) -> str:
    if _possessive(path):
        return "poss"
    if any(t.dep_ == "appos" for t in path):
        return "appos"
    inner = path[1:-1]
    if any(t.lemma_ == "be" and t.pos_ == "AUX" and t.dep_ != "auxpass" for t in inner):
        return "copula"
    if any(t.pos_ == "ADP" for t in inner):
        return "prep"
    return "svo"


def _is_head_side(path: Sequence[Any]) -> bool | None:
    """True when the path's start is the subject side, False when its end is, else None."""
    for k, t in enumerate(path):
        if t.dep_ in _SUBJ_DEPS and k + 1 < len(path) and path[k + 1].i == t.head.i:
            return True
        if t.dep_ in _SUBJ_DEPS and k > 0 and path[k - 1].i == t.head.i:
            return False
    return None


def path_relations(doc: Any, mentions: Sequence[Mention], text: str, *,
                   max_path: int = 4) -> Iterator[ExtractedRelation]:
    """One relation per pair of mentions joined by a short, triggered, mention-free path.

    A mention is paired with the next :data:`MAX_PAIR_SPAN` mentions of its sentence (every
    pair in a sentence of up to 33 mentions; a run-on "sentence" of thousands of mentions,
    a table or a list without punctuation, costs linear time, not quadratic).
    """
    owner = {i: m for m in mentions for i in range(m.start, m.end)}
    named_roots = {m.root for m in mentions if m.named}
    seen: set[frozenset[str]] = set()
    depth: dict[int, int] = {}
    for x, a in enumerate(mentions):
        for b in mentions[x + 1:x + 1 + MAX_PAIR_SPAN]:
            pair = frozenset((a.name, b.name))
            if len(pair) < 2 or pair in seen or not (a.named or b.named):
                continue
            path = _strip_conj(shortest_path(doc[a.root], doc[b.root], depth))
            address = _address(path, a, b)
            if (_conjuncts(path) and not address) or (
                    not (a.named and b.named) and not _concept_path(path)):
                continue  # two members of one list, or a concept not a verb's object
            if _in_list(doc[a.root]) and _in_list(doc[b.root]) and not address:
                continue  # list x list ("stars A and B as C and D"): pairs are not stated
            if (not path or len(path) - 1 - _free_edges(path) > max_path
                    or not (address or _trigger(path))
                    or _predicates(path) > MAX_PREDICATES or _adjuncts_of_one_head(path)
                    or _crosses_clause(path) or _bad_appos(path, a, b)
                    or _object_adjunct(path, named_roots) or _objects_of_two_verbs(path)):
                continue
            if any(t.i in owner and owner[t.i] not in (a, b) for t in path[1:-1]):
                continue
            seen.add(pair)
            head, tail, label = _orient(path, a, b)
            yield ExtractedRelation(head.name, label, tail.name, _kind(path), text)


def _orient(path: Sequence[Any], a: Mention, b: Mention) -> tuple[Mention, Mention, str]:
    """Head, tail and label of a kept path from ``a`` to ``b``.

    Through a collapsed copula (:func:`_copula_collapse`) the predicate noun stands for the
    subject: "X is a game developed by Y" reads ``Y -[developed]-> X``; with no verb after
    the noun the whole path is the label ("X is the album by Y": ``X -[is album by]-> Y``).
    """
    core, noun = _collapsed(path)
    side = (core[-1].dep_ == "poss") if _possessive(core) else _is_head_side(core)
    head, tail = (a, b) if side or (side is None and a.start < b.start) else (b, a)
    verb_after = any(t.pos_ in ("VERB", "AUX") for t in core[1:-1])
    return head, tail, _label(core if noun is not None and verb_after else path)


def _collapsed(path: Sequence[Any]) -> tuple[Sequence[Any], Any]:
    """The path with an end subject and its copula cut off (the predicate noun as its end).

    Returns ``(path, None)`` when there is no copula to collapse at an end.
    """
    if len(path) > 3 and _copula_collapse(path):
        if path[0].dep_ == "nsubj" and path[2].dep_ == "attr":
            return path[2:], path[2]
        if path[-1].dep_ == "nsubj" and path[-3].dep_ == "attr":
            return path[:-2], path[-3]
    return path, None


def _address(path: Sequence[Any], a: Mention, b: Mention) -> bool:
    """A name and a place in a comma chain with no conjunction: "Wakefield, West Yorkshire".

    The small model parses such an address as a coordination; without "and"/"or" it is a
    containment chain, like the "City, State" apposition (:func:`_bad_appos`). Only the
    adjacent pair (nothing but a comma between the names) is related.
    """
    first, second = (a, b) if a.start < b.start else (b, a)
    if len(path) != 2 or second.type != "Place":  # the container; NER may mistype the
        return False  # contained name ("Rapides Parish, Louisiana": PERSON)
    doc = path[0].doc
    between = doc[first.end:second.start]
    return [t.text for t in between] == [","] and not _coordinated(path[0])


def _coordinated(tok: Any) -> bool:
    """The coordination ``tok`` belongs to has a conjunction ("and", "or") anywhere in it."""
    while tok.dep_ == "conj":
        tok = tok.head
    todo = [tok]
    while todo:
        t = todo.pop()
        if any(c.dep_ == "cc" for c in t.children):
            return True
        todo += [c for c in t.children if c.dep_ == "conj"]
    return False
