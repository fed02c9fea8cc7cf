"""An executemany's keys, taken at its first row and kept on its execution context.

A default that hands out many keys for less than one at a time (a pooled sequence's
blocks, a COMB or UUIDv7 minter) takes every row's key at the first row with
:class:`RowsAhead`; the other rows pop theirs.

Design: docs/architecture.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from sqlalchemy_seqkeys import _fork

__all__ = ["RowsAhead"]

T = TypeVar("T")


class RowsAhead(Generic[T]):
    """Where one default keeps an executemany's keys on the execution context.

    SQLAlchemy calls a column default once per row; the context lives for that
    one execution. The kept keys carry the token of the process that took them,
    so a child forked in the middle of a statement never pops its parent's. A
    list found empty (two columns on one default) means one key at a time from
    then on::

        >>> rows = RowsAhead("doc")
        >>> class Context:  # what SQLAlchemy hands a default during a 3-row executemany
        ...     compiled_parameters = [{}, {}, {}]
        >>> context = Context()
        >>> rows.pop(context) is None  # the first row: nothing kept yet
        True
        >>> rows.take(context, lambda k: list(range(10, 10 + k)))
        10
        >>> rows.pop(context), rows.pop(context), rows.pop(context)
        (11, 12, None)
    """

    __slots__ = ("_attr",)

    def __init__(self, name: str) -> None:
        self._attr = f"_seqkeys_rows_{name}"

    def pop(self, context: Any) -> T | None:
        """The key of this row, taken at the executemany's first row; None if none is kept."""
        kept: tuple[int, list[T]] | None = context.__dict__.get(self._attr)
        if kept is not None and kept[1] and kept[0] == _fork.process_token():
            return kept[1].pop()
        return None

    def take(self, context: Any, many: Callable[[int], list[T]]) -> T | None:
        """At an executemany's first row: ``many(rows)`` keys, the first returned, the rest
        kept for :meth:`pop`. None where this is no first row (one row, a default executed
        on its own, or the rows' keys already taken): the caller takes one key itself."""
        if self._attr in context.__dict__:
            return None
        # a default executed on its own (conn.scalar(column.default)) has no rows
        rows = len(getattr(context, "compiled_parameters", ()))
        if rows < 2:
            return None
        token = _fork.process_token()  # of the process the keys are taken in
        ahead = many(rows)
        ahead.reverse()  # popped from the end: the rows get them in order
        first = ahead.pop()
        context.__dict__[self._attr] = (token, ahead)
        return first
