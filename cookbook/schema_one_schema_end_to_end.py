"""One schema for extraction, decomposition and retrieval - end to end, fully offline.

The same ``Schema`` object (saved to and reloaded from JSON on the way) is used to

1. bound LLM extraction of typed triples from the demo corpus' raw passages (with schema
   evolution on, behind strict thresholds, every decision logged in the schema's history);
2. tell the decomposer which node/relation/attribute types exist;
3. filter retrieval to the types the plan involves, sub-questions retrieved concurrently.

THE LLM HERE IS SCRIPTED (``kgpath.ScriptedLLM``), so the script runs without an API key:
its extraction replies are the corpus' own hand-written annotations (plus one deliberately
off-schema triple and a few type proposals), its decomposition and its final answer are
fixed strings. Replace ``llm`` by ``kgpath.OpenAILLM(...)`` (or any ``kgpath.llm.LLM``) for
real model output. Embeddings are the bundled offline ``LocalEmbedder`` (``--hashing`` uses the
instant, non-semantic ``HashingEmbedder`` instead).

Run: python cookbook/schema_one_schema_end_to_end.py [--hashing]
"""

from __future__ import annotations

import json
import sys
import tempfile
import warnings
from pathlib import Path

from kgpath import GraphIndex, HashingEmbedder, ScriptedLLM
from kgpath.data import demo_corpus
from kgpath.demo.schema import demo_schema
from kgpath.ingest.extract import ExtractionConfig, SchemaExtractor
from kgpath.ingest.schema import EvolutionPolicy, Schema, SchemaWarning
from kgpath.methods.schema import SchemaGuidedRetriever, format_evidence
from kgpath.prompts.schema import SCHEMA_ANSWER_PROMPT

QUESTION = ("Which award did the discoverers of radium receive, "
            "and where was the ore of radium mined?")
CORPUS = demo_corpus()
TYPES = {name: typ for name, (typ, _desc) in CORPUS["nodes"].items()}
DESCRIPTIONS = {name: desc for name, (_typ, desc) in CORPUS["nodes"].items()}

# --------------------------------------------------------------------- the scripted LLM
EXTRA = {  # what the scripted "model" adds on top of the hand-written annotations
    "p4": {"triples": [{"head": "Irene Joliot-Curie", "head_type": "Person",
                        "relation": "daughter of", "tail": "Marie Curie",
                        "tail_type": "Person", "confidence": 0.9}],   # not a schema relation
           "proposals": [{"kind": "entity", "name": "Particle", "confidence": 0.9}]},
    "p5": {"proposals": [{"kind": "entity", "name": "Particle", "confidence": 0.85}]},
    "p7": {"proposals": [{"kind": "entity", "name": "Particle", "confidence": 0.9},
                         {"kind": "entity", "name": "Isotope", "confidence": 0.95}]},
}


def extraction_reply(passage_id: str) -> str:
    triples = [
        {"head": h, "head_type": TYPES[h], "relation": r, "tail": t, "tail_type": TYPES[t],
         "confidence": 1.0}
        for h, r, t, prov in CORPUS["triples"] if passage_id in prov
    ]
    names = {x["head"] for x in triples} | {x["tail"] for x in triples}
    entities = [{"name": n, "type": TYPES[n], "description": DESCRIPTIONS[n]}
                for n in sorted(names)]
    extra = EXTRA.get(passage_id, {})
    return json.dumps({"entities": entities, "triples": triples + extra.get("triples", []),
                       "proposals": extra.get("proposals", [])})


PLAN = {
    "sub_questions": [
        "Who discovered radium?",
        "Which award did the discoverers of radium receive?",
        "Where was the ore that radium was isolated from mined?",
    ],
    "involved_types": {
        "nodes": ["Person", "Element", "Award", "Material", "Place", "Mine"],  # Mine: unknown
        "relations": ["discovered", "received", "isolated from", "mined at"],
        "attributes": [],
    },
}
ANSWER = ("(scripted) Marie and Pierre Curie discovered radium; both received the 1903 Nobel "
          "Prize in Physics and Marie the 1911 Nobel Prize in Chemistry. The pitchblende was "
          "mined at Joachimsthal.")
TEXT_TO_PID = {text: pid for pid, text in CORPUS["passages"].items()}


def scripted(prompt: str) -> str:
    """Route each prompt to its scripted reply (extraction, decomposition or answer)."""
    if "Passage:\n" in prompt:
        text = prompt.rsplit("Passage:\n", 1)[1].strip()
        return extraction_reply(TEXT_TO_PID[text])
    if "Split the question" in prompt:
        return json.dumps(PLAN)
    if "Evidence:" in prompt:
        return ANSWER
    raise ValueError(f"unscripted prompt: {prompt[:80]!r}")


def main(argv: list[str]) -> None:
    llm = ScriptedLLM(scripted)
    embedder = HashingEmbedder() if "--hashing" in argv else None  # None = LocalEmbedder

    # 0. the one schema, persisted as JSON and reloaded
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "schema.json"
        demo_schema().save(path)
        schema = Schema.load(path)
    print(f"Schema {schema.name!r} v{schema.version}: {len(schema.entities)} entity, "
          f"{len(schema.relations)} relation, {len(schema.attributes)} attribute types")

    # 1. schema-bounded extraction (evolution on, strict thresholds)
    cfg = ExtractionConfig(evolution=EvolutionPolicy(min_support=3, min_confidence=0.8))
    res = SchemaExtractor(schema, llm, config=cfg).extract(CORPUS["passages"])
    g = res.graph
    print(f"\n1. Extraction (SCRIPTED LLM): {g.num_nodes} nodes, {g.num_edges} edges, "
          f"{len(g.passages)} passages; {len(res.rejected)} item(s) rejected by the schema:")
    for rej in res.rejected:
        print(f"   - {rej.reason}")
    print(f"   Schema evolution -> v{res.schema.version}; history:")
    for ch in res.schema.history:
        print(f"   - {ch.action:8s} {ch.kind} {ch.name!r}: {ch.reason}")
    e = next(x for x in g.edges if x.relation == "mined at")
    print(f"   e.g. edge {e.source} -[{e.relation}]-> {e.target}: schema_type={e.type!r}, "
          f"provenance={list(e.provenance)}")
    schema = res.schema  # the evolved schema drives everything that follows

    # 2. + 3. decomposition with the same schema, typed parallel retrieval
    retriever = SchemaGuidedRetriever(GraphIndex(g, embedder), schema=schema, llm=llm)
    with warnings.catch_warnings(record=True) as caught:  # the scripted plan names "Mine"
        warnings.simplefilter("always", SchemaWarning)     # on purpose: shown below
        result = retriever.retrieve(QUESTION, k=3, k_triples=3, k_passages=2)
    plan = result.plan
    print(f"\n2. Decomposition (SCRIPTED LLM, validated against the schema): {QUESTION!r}")
    for i, sq in enumerate(plan.sub_questions, 1):
        print(f"   {i}. {sq.text}")
    print(f"   involved types: {plan.involved_types.to_dict()}")
    print(f"   dropped (not in the schema): {list(plan.dropped)}")
    for w in caught:
        print(f"   {w.category.__name__}: {w.message}")
    print("\n3. Typed retrieval (filter mode), sub-questions run concurrently "
          f"on {result.trace['concurrency']}; merged evidence "
          f"({result.trace['evidence_before_merge']} items -> "
          f"{result.trace['evidence_after_merge']} after de-duplication):")
    print(format_evidence(result))

    # 4. answer over the merged evidence
    prompt = SCHEMA_ANSWER_PROMPT.format(
        question=QUESTION,
        sub_questions="\n".join(f"{i}. {s.text}" for i, s in enumerate(plan.sub_questions, 1)),
        evidence=format_evidence(result),
    )
    print("\n4. Answer (SCRIPTED LLM):", llm.complete(prompt))


if __name__ == "__main__":
    main(sys.argv[1:])
