"""Updating a retriever's prompt: where the core keeps it and how its variables map back.

Framework-free helpers of :mod:`llama_index.retrievers.kgpath.prompts` (the retrievers'
``update_prompts`` use them), checked on hand-made inputs.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from llama_index.retrievers.kgpath.prompts import attr_owner, to_core_template

from kgpath import ConfigError


def test_attr_owner_and_to_core_template() -> None:
    root = SimpleNamespace(decomposer=SimpleNamespace(prompt="P"))
    owner, attr = attr_owner(root, "decomposer.prompt")
    assert owner is root.decomposer and attr == "prompt"
    assert attr_owner(root, "decomposer") == (root, "decomposer")
    names = {"query_str": "query", "context_str": "paths"}
    assert to_core_template("Q {query_str} P {paths}", names, "qa") == "Q {query} P {paths}"
    with pytest.raises(ConfigError, match=r"qa must use.*missing \['paths'\]"):
        to_core_template("Q {query_str}", names, "qa")
