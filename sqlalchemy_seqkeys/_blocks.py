"""What pooled and bit-reversed sequences share besides their blocks.

Their blocks live in ``_allocator`` (one store per pool and tenant, the
lock-free hot path); here: :func:`batch_counter` (their sequences-table row
where the engine has no native sequence), :func:`begin` and :func:`connect`
(what a sync method does with an Engine or a Connection). See
docs/architecture.md.
"""

from __future__ import annotations

from sqlalchemy_seqkeys.sequences._aio import begin, connect
from sqlalchemy_seqkeys.sequences.generators import TableSequence

__all__ = ["batch_counter", "begin", "connect"]


def batch_counter(name: str, size: int, start: int, table: str) -> TableSequence:
    """The sequences-table row that stands in where the engine has no native sequence.

    ``size`` counters per UPDATE, committed in a transaction of their own
    (``batch`` mode): a block handed out across transactions must not come
    back with a rollback.
    """
    return TableSequence(name, mode="batch", batch_size=size, start=start, table=table)
