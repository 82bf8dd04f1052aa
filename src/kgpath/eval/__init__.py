"""Metrics, dataset loaders and the ``kgpath eval`` commands."""

__all__: list[str] = []
