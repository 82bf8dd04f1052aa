"""Small policies usable on any retriever and by both adapters (one hook each).

* :mod:`~kgpath.policies.sufficiency`: C2RAG's sufficiency gate (Eq. 7-9) and a fallback.
* :mod:`~kgpath.policies.path_order`: PathRAG's prompt order (Eq. 6) over any scored list.
"""

from kgpath.policies.path_order import ascending_order, checked_score
from kgpath.policies.sufficiency import (
    GATE_FIELDS,
    GateDecision,
    SufficiencyGate,
    SufficiencyGateConfig,
    gate_metadata,
    make_gate,
)

__all__ = [
    "GATE_FIELDS",
    "GateDecision",
    "SufficiencyGate",
    "SufficiencyGateConfig",
    "ascending_order",
    "checked_score",
    "gate_metadata",
    "make_gate",
]
