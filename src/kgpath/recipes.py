"""What both adapters' base classes share: ``from_texts``, document checks, pickling.

Pickling is by value. A retriever is pickled as its construction recipe: the graph it
searches (with the node vectors stored in it), its models, the method's effective config
and the options it was given; loading builds the retriever again from them. The bundled
embedder is pickled as "the bundled embedder" and reloaded (it holds a loaded engine, not
data). By value because a pickle must work in another process (multiprocessing, Ray, a
cache layer) where no reference to this process's graph exists; a graph too large to
copy is better saved once (``KnowledgeGraph.save``) and loaded in each worker.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kgpath.embed_cache import portable_embedder
from kgpath.errors import EmptyGraphError
from kgpath.facade import EvidenceRetriever, is_built
from kgpath.graph import KnowledgeGraph

__all__ = ["FromTextsMixin", "check_documents", "picklable", "rebuild", "recipe"]


class FromTextsMixin:
    """``from_texts(texts, **kwargs)``: the retriever's ``from_documents`` for strings."""

    @classmethod
    def from_texts(cls, texts: Iterable[str], **kwargs: Any) -> Any:
        """:meth:`from_documents` for plain strings."""
        return cls.from_documents(list(texts), **kwargs)  # type: ignore[attr-defined]


def check_documents(documents: Any) -> Any:
    """``documents`` as a list (a string stays); :class:`EmptyGraphError` when there are none.

    Raised before any model is loaded or any text extracted.
    """
    if isinstance(documents, (str, bytes)) or documents is None:
        return documents
    docs = list(documents)
    if not docs:
        raise EmptyGraphError("from_documents got no documents: pass at least one document "
                              "(or use from_graph with a KnowledgeGraph)")
    return docs


def recipe(er: EvidenceRetriever, graph: Any, models: Mapping[str, Any],
           options: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any] | str:
    """The keyword arguments that build the retriever again (see the module docstring).

    ``models`` maps the adapter's model argument names (embedder first) to what was given;
    ``extra`` holds the adapter's own arguments. The options' config fields are replaced by
    ``config=`` (the core's effective config, so later prompt updates are kept). A reason
    string instead when the retriever cannot be rebuilt (a prebuilt core retriever).
    """
    if is_built(graph):
        return f"it wraps a prebuilt {er.spec.name} core retriever"
    given = dict(models)
    if not isinstance(graph, KnowledgeGraph):  # a GraphIndex: its graph and its embedder
        given[next(iter(given))] = graph.embedder
    config = getattr(er.core, "config", None)
    opts = {n: v for n, v in options.items() if n not in er.spec.config_fields}
    if isinstance(config, er.spec.config_cls):
        opts["config"] = config
    else:
        opts = dict(options)
    return {"graph": er.graph, **given, **extra, **opts}


def picklable(kwargs: dict[str, Any] | str, name: str) -> dict[str, Any]:
    """``kwargs`` with the bundled embedder as a recipe; ``TypeError`` for a reason string."""
    if isinstance(kwargs, str):
        raise TypeError(f"cannot pickle {name}: {kwargs}; build it with from_graph(graph, ...) "
                        "to pickle it")
    return {n: portable_embedder(v) for n, v in kwargs.items()}


def rebuild(cls: type, kwargs: dict[str, Any]) -> Any:
    """Unpickle: build ``cls`` again from its recipe."""
    return cls(**kwargs)
