"""Vectors keyed by the model that made them: keys, trusted records, bundled models.

Every vector set kgpath keeps for a graph (node, passage and relation vectors) is stored
under its model's record (:func:`kgpath.embeddings.embedder_record`: name, dimension, probe
text, probe fingerprint), never under an embedder *object*: :func:`embedder_key` is that key,
:func:`trust_record` lets an embedder stand for a record without embedding its probe (a
reopened index's bundled model, :func:`bundled_embedder`).
"""

from __future__ import annotations

from typing import Any

from kgpath.embeddings import Embedder, HashingEmbedder, LocalEmbedder, _remember

__all__ = ["bundled_embedder", "embedder_key", "trust_record"]


def embedder_key(record: dict[str, Any]) -> str:
    """The key vectors are stored under: model name, dimension and probe fingerprint.

    Two embedder objects with the same key make the same vectors (a new
    ``LocalEmbedder()``, a :class:`~kgpath.embed_cache.CachedEmbedder` over it); a
    different model never has the same key (:func:`embedder_record`).
    """
    return f"{record.get('name')}|{record.get('dim')}|{record.get('fingerprint')}"


def trust_record(embedder: Any, record: dict[str, Any]) -> None:
    """Take ``embedder`` to be the maker of ``record``'s vectors without embedding its probe.

    Used when reopening a saved index with the bundled model it was saved with (rebuilt by
    name and dimension, :func:`bundled_embedder`) or after a caller's embedder was checked
    against another record of the same saved index.
    """
    probe, fp = record.get("probe"), record.get("fingerprint")
    if isinstance(probe, str) and isinstance(fp, str):
        _remember(embedder, probe, fp)


def _class_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def bundled_embedder(record: dict[str, Any]) -> Embedder | None:
    """The bundled embedder a record names (``LocalEmbedder``, ``HashingEmbedder(dim)``).

    ``None`` for any other model: only a bundled model can be rebuilt from its name and
    dimension (``HashingEmbedder`` is deterministic; ``LocalEmbedder`` ships its weights).
    """
    name, dim = record.get("name"), record.get("dim")
    if name == _class_name(HashingEmbedder) and isinstance(dim, int) \
            and not isinstance(dim, bool) and dim >= 8:
        return HashingEmbedder(dim)
    if name == _class_name(LocalEmbedder) and dim == 384:
        return LocalEmbedder()
    return None
