"""What pooled and bit-reversed sequences share besides their blocks.

Their blocks live in ``_allocator`` (one store per pool and tenant, the
lock-free hot path); here: :func:`batch_counter` (their sequences-table row
where the engine has no native sequence), :func:`begin` and :func:`connect`
(what a sync method does with an Engine or a Connection). See
docs/architecture.md.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import sqlalchemy as sa

from sqlalchemy_seqkeys.sequences import _aio
from sqlalchemy_seqkeys.sequences.generators import TableSequence

__all__ = ["batch_counter", "begin", "connect"]


def batch_counter(name: str, size: int, start: int, table: str) -> TableSequence:
    """The sequences-table row that stands in where the engine has no native sequence.

    ``size`` counters per UPDATE, committed in a transaction of their own
    (``batch`` mode): a block handed out across transactions must not come
    back with a rollback.
    """
    return TableSequence(name, mode="batch", batch_size=size, start=start, table=table)


@contextlib.contextmanager
def _on(bind: sa.Engine | sa.Connection, what: str, *, begin: bool) -> Iterator[sa.Connection]:
    _aio.check_sync_bind(bind, what)
    if not isinstance(bind, sa.Engine):
        yield bind
        return
    with bind.begin() if begin else bind.connect() as conn:
        yield conn


def begin(
    bind: sa.Engine | sa.Connection, what: str
) -> contextlib.AbstractContextManager[sa.Connection]:
    """A transaction of its own with an Engine (committed at the end); a Connection as it is."""
    return _on(bind, what, begin=True)


def connect(
    bind: sa.Engine | sa.Connection, what: str
) -> contextlib.AbstractContextManager[sa.Connection]:
    """A connection of its own with an Engine (no transaction begun); a Connection as it is."""
    return _on(bind, what, begin=False)
