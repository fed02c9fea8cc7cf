"""Dialect names as this library's per-dialect tables key them."""

from __future__ import annotations

from sqlalchemy.engine.interfaces import Dialect

__all__ = ["dialect_key"]


def dialect_key(dialect: Dialect | str) -> str:
    """``"spanner"`` for sqlalchemy-spanner's ``"spanner+spanner"``; other names as they are."""
    name = dialect if isinstance(dialect, str) else dialect.name
    return name.partition("+")[0]
