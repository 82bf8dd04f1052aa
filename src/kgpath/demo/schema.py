"""Demo section: schema-guided retrieval on the bundled radioactivity corpus, fully offline.

Everything here runs without an LLM and says so: extraction uses the LLM-free
:class:`~kgpath.ingest.extract.PatternExtractor` (scored against the corpus' hand-written
triples), decomposition uses the LLM-free heuristic, and community summaries are keyword
summaries. With an LLM, pass ``llm=`` to the same classes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kgpath.data import demo_corpus
from kgpath.ingest.extract import PatternExtractor
from kgpath.ingest.hierarchy import CommunityRouter, HierarchyConfig, build_hierarchy
from kgpath.ingest.schema import AttributeType, EntityType, RelationType, Schema
from kgpath.methods.schema import SchemaGuidedRetriever

if TYPE_CHECKING:
    from kgpath.demo import DemoContext

__all__ = ["demo_schema", "run", "DEMO_QUESTIONS"]

#: Questions shown by the demo (the first two are compound, to show decomposition).
DEMO_QUESTIONS = (
    "Which award did the discoverers of radium receive, and where was the ore of radium mined?",
    "Who explained nuclear fission and which element does fission split?",
    "What model of the atom did Rutherford's visitor propose?",
)


def demo_schema() -> Schema:
    """Return the seed schema of the demo corpus (hand-written for kgpath).

    Aliases double as cue words for the LLM-free decomposer; the question words "who" and
    "where" are deliberately listed as cues for ``Person`` and ``Place``.
    """
    attrs = (AttributeType(name="year", entities=("Award", "Experiment", "Phenomenon"),
                           description="year of the award or discovery"),)
    return Schema(name="radioactivity-demo", entities=_entity_types(),
                  relations=_relation_types(), attributes=attrs)


def _entity_types() -> tuple[EntityType, ...]:
    """The demo's entity types, with aliases as decomposer cue words."""
    return (
        EntityType(name="Person", description="a scientist or other human",
                   aliases=("scientist", "physicist", "chemist", "who")),
        EntityType(name="Phenomenon", description="a physical phenomenon or kind of radiation",
                   aliases=("effect", "radiation", "rays")),
        EntityType(name="Element", description="a chemical element",
                   aliases=("chemical element",)),
        EntityType(name="Material", description="an ore or other material",
                   aliases=("ore", "mineral")),
        EntityType(name="Place", description="a city, town or country",
                   aliases=("city", "town", "where")),
        EntityType(name="Organization", description="a university or institute",
                   aliases=("university", "institute")),
        EntityType(name="Award", description="a prize", aliases=("prize", "Nobel prize")),
        EntityType(name="Experiment", description="an experiment"),
        EntityType(name="Theory", description="a model or theory", aliases=("model",)),
        EntityType(name="Application", description="a practical use",
                   aliases=("therapy", "treatment")),
    )


def _relation_types() -> tuple[RelationType, ...]:
    """The demo's relation types with their allowed head and tail types."""
    R = RelationType
    return (
        R(name="discovered", head=("Person",), tail=("Element", "Phenomenon"),
          aliases=("isolated",)),
        R(name="emitted by", head=("Phenomenon",), tail=("Element",), aliases=("emit",)),
        R(name="inspired research of", head=("Phenomenon",), tail=("Person",)),
        R(name="born in", head=("Person",), tail=("Place",), aliases=("birthplace",)),
        R(name="studied at", head=("Person",), tail=("Organization",)),
        R(name="married", head=("Person",), tail=("Person",), aliases=("husband", "wife")),
        R(name="coined", head=("Person",), tail=("Phenomenon",)),
        R(name="isolated from", head=("Element",), tail=("Material",)),
        R(name="mined at", head=("Material",), tail=("Place",), aliases=("mined",)),
        R(name="contains", head=("Material",), tail=("Element",), aliases=("rich",)),
        R(name="received", head=("Person",), tail=("Award",), aliases=("won", "earned")),
        R(name="awarded for", head=("Award",), tail=("Element", "Phenomenon")),
        R(name="parent of", head=("Person",), tail=("Person",), aliases=("daughter", "son")),
        R(name="worked at", head=("Person",), tail=("Organization",), aliases=("working at",)),
        R(name="worked in", head=("Person",), tail=("Place",)),
        R(name="produced with", head=("Phenomenon",), tail=("Phenomenon",)),
        R(name="classified", head=("Person",), tail=("Phenomenon",)),
        R(name="proposed", head=("Person",), tail=("Theory",)),
        R(name="supported", head=("Experiment",), tail=("Theory",)),
        R(name="used", head=("Experiment",), tail=("Phenomenon",)),
        R(name="visited", head=("Person",), tail=("Organization",), aliases=("visitor",)),
        R(name="refines", head=("Theory",), tail=("Theory",)),
        R(name="founded institute in", head=("Person",), tail=("Place",), aliases=("founded",)),
        R(name="explained", head=("Person",), tail=("Phenomenon",)),
        R(name="observed", head=("Person",), tail=("Phenomenon",), aliases=("detected",)),
        R(name="splits", head=("Phenomenon",), tail=("Element",), aliases=("split",)),
        R(name="formulated", head=("Person",), tail=("Theory",)),
        R(name="explains energy of", head=("Theory",), tail=("Phenomenon",)),
        R(name="used in", head=("Element",), tail=("Application",)),
        R(name="organised", head=("Person",), tail=("Application",)),
    )


def run(ctx: DemoContext) -> None:
    """Print the schema-guided walkthrough."""
    ctx.heading("Schema-guided retrieval (one schema for extraction, planning and retrieval)")
    schema = demo_schema()
    ctx.print(f"Seed schema {schema.name!r}: {len(schema.entities)} entity types, "
              f"{len(schema.relations)} relation types, {len(schema.attributes)} attribute type.")
    _show_extraction(ctx, schema)
    retr = SchemaGuidedRetriever(ctx.index, schema=schema)
    _show_decomposition(ctx, retr)
    _show_typed_retrieval(ctx, retr)
    _show_hierarchy(ctx)


def _show_extraction(ctx: DemoContext, schema: Schema) -> None:
    """1. Extraction, LLM-free path, scored against the corpus' own triples."""
    from kgpath.demo import table

    data = demo_corpus()
    gold = {(h, r, t) for h, r, t, _ in data["triples"]}
    ext = PatternExtractor(schema, ctx.graph).extract(data["passages"])
    got = {(tr.head, tr.relation, tr.tail) for tr in ext.triples}
    tp = len(got & gold)
    ctx.print()
    ctx.print("1. Schema-bounded extraction - LLM-FREE PatternExtractor (known names + relation")
    ctx.print("   cue words; an LLM extractor would be far better). Scored against the 50")
    ctx.print("   hand-written triples of the corpus:")
    ctx.print(table([[len(got), tp, f"{tp / max(len(got), 1):.2f}", f"{tp / len(gold):.2f}",
                      len(ext.rejected)]],
                    ["triples", "correct", "precision", "recall", "rejected by schema"]))


def _show_decomposition(ctx: DemoContext, retr: SchemaGuidedRetriever) -> None:
    """2. Decomposition, LLM-free heuristic."""
    from kgpath.demo import table

    ctx.print()
    ctx.print("2. Decomposition - LLM-FREE heuristic (clause split + schema/alias/node-name")
    ctx.print("   matching; an LLM decomposer sees the same schema via the prompt):")
    rows = []
    for q in DEMO_QUESTIONS:
        plan = retr.decompose(q)
        for i, sq in enumerate(plan.sub_questions):
            rows.append([q[:38] + ("..." if len(q) > 38 else "") if i == 0 else "",
                         sq.text, ", ".join(sq.types.nodes) or "-",
                         ", ".join(sq.types.relations) or "-"])
    ctx.print(table(rows, ["question", "sub-question", "node types", "relation types"]))


def _show_typed_retrieval(ctx: DemoContext, retr: SchemaGuidedRetriever) -> None:
    """3. Typed retrieval: off vs filter vs boost, then the merged filter-mode evidence."""
    from kgpath.demo import table

    q = DEMO_QUESTIONS[0]
    ctx.print()
    ctx.print(f"3. Typed retrieval, top-4 nodes per sub-question, merged: {q!r}")
    rows = []
    for mode in ("off", "filter", "boost"):
        res = retr.retrieve(q, type_mode=mode, k=4)
        for rank, it in enumerate(res.nodes[:6]):
            tags = ",".join(str(i + 1) for i in it.sub_questions)
            rows.append([mode if rank == 0 else "", it.key, it.schema_type or "-",
                         f"{it.score:.3f}", tags])
    ctx.print(table(rows, ["type_mode", "node", "type", "score", "sub-q"]))
    res = retr.retrieve(q, k=4)
    ctx.print(f"   filter mode: {res.trace['evidence_before_merge']} evidence items before "
              f"merge, {res.trace['evidence_after_merge']} after de-duplication; "
              f"sub-questions ran on {res.trace['concurrency']}.")
    ctx.print("   Top triples:")
    for it in res.triples[:4]:
        ctx.print(f"   - {it.text}  [sub-q {','.join(str(i + 1) for i in it.sub_questions)}]")


def _show_hierarchy(ctx: DemoContext) -> None:
    """4. Hierarchy: communities + routing."""
    from kgpath.demo import table

    hier = build_hierarchy(ctx.graph, config=HierarchyConfig(seed=0))
    ctx.print()
    ctx.print(f"4. Hierarchy: {len(hier.communities)} Louvain communities (seed 0), "
              f"{len(hier.keywords)} keyword nodes; summaries by keywords (no LLM):")
    ctx.print(table([[c.id, len(c.members), c.summary[:70]] for c in hier.communities],
                    ["community", "size", "summary"]))
    router = CommunityRouter(hier, ctx.graph, ctx.embedder)
    rq = "Where did the Curies get their pitchblende?"
    for c, score in router.route(ctx.index.embed_query(rq), 2):
        more = " ..." if len(c.members) > 5 else ""
        ctx.print(f"   Routing {rq!r} -> {c.id} (cosine {score:.3f}): "
                  f"{', '.join(c.members[:5])}{more}")
