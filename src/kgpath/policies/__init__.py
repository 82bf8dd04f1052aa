"""Small policies used by several methods and both adapters (one hook each)."""

from kgpath.policies.sufficiency import GateDecision, SufficiencyGate, SufficiencyGateConfig

__all__ = ["GateDecision", "SufficiencyGate", "SufficiencyGateConfig"]
