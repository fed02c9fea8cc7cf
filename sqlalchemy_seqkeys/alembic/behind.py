"""Autogenerate: the resync of a sequence that exists but is behind a table's keys.

A sequence becomes the default of a table that already holds rows, or rows are imported
with their keys: the sequence would hand those keys out again. :func:`compare_behind`
finds such counters as ``seqkeys doctor``'s ``behind`` check does (the same code) and
writes each one's resync, which moves it past the keys and never back; once it is past,
nothing is written. A sequence the migration creates gets its resync from the other
comparators (after its create).

User guide: docs/alembic.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from alembic.operations import ops
from alembic.util import PriorityDispatchResult

from sqlalchemy_seqkeys._dialect import dialect_key
from sqlalchemy_seqkeys.alembic.autogen import metadatas_of, render_op
from sqlalchemy_seqkeys.alembic.ops import (
    ResyncBitReversedSequenceOp,
    ResyncBitReversedTableSequenceOp,
    ResyncTableSequenceOp,
    SeqKeysOp,
)
from sqlalchemy_seqkeys.alembic.pooled_ops import ResyncPooledSequenceOp
from sqlalchemy_seqkeys.bitreverse import BitReversed, BitReversedSequence
from sqlalchemy_seqkeys.doctor import keys_behind
from sqlalchemy_seqkeys.pooled import PooledSequence
from sqlalchemy_seqkeys.sequences.generators import TableSequence
from sqlalchemy_seqkeys.sequences.table import DEFAULT_TABLE

if TYPE_CHECKING:
    from alembic.autogenerate.api import AutogenContext

__all__ = ["ResyncBehindOp", "compare_behind", "render", "resync_of"]


class ResyncBehindOp(ops.MigrateOperation):
    """A resync autogenerate found needed (:attr:`resync`); its reverse moves nothing back.

    In the upgrade it renders as the resync; in the downgrade as ``pass`` with a comment
    (a sequence is never moved back). ``alembic check`` lists it as the resync.

    :param resync: the resync operation.
    :param undo: whether this is the downgrade's side.
    """

    def __init__(self, resync: SeqKeysOp, undo: bool = False) -> None:
        self.resync = resync
        self.undo = undo

    def reverse(self) -> ResyncBehindOp:
        return ResyncBehindOp(self.resync, not self.undo)

    def to_diff_tuple(self) -> tuple[Any, ...]:
        return (type(self.resync).__name__, *self.resync.arguments().values())


def render(autogen_context: AutogenContext, op: ResyncBehindOp) -> str | list[str]:
    """Alembic's renderer of :class:`ResyncBehindOp`.

    :param autogen_context: Alembic's context; the script's import is added to it.
    :param op: the operation to render.
    """
    if op.undo:
        return f"pass  # {op.resync.render()}: not undone, a sequence never moves back"
    return render_op(autogen_context, op.resync)


def resync_of(column: sa.Column[Any], default: object) -> SeqKeysOp | None:
    """The operation that moves the counter behind ``column``'s keys past them.

    :param column: a key column of the models, its table in the database.
    :param default: its default (a ``TableSequence``, ``PooledSequence``,
        ``BitReversedSequence`` or ``BitReversed`` of a counter, a ``PooledSequence``'s
        too); None for another.
    """
    table = column.table
    where = (table.name, column.name, table.schema)
    if isinstance(default, TableSequence):
        return ResyncTableSequenceOp(default.name, *where, default.table)
    if isinstance(default, PooledSequence):
        return ResyncPooledSequenceOp(default.name, *where, default.schema, default.table)
    # keys the default never hands out (legacy keys it was adopted over) are no counter's
    skip = default.skip_range if isinstance(default, BitReversed) else None
    if isinstance(default, BitReversedSequence):  # its source is its native sa.Sequence
        return ResyncBitReversedSequenceOp(
            default.name, *where, default.schema, default.table, skip_range=skip
        )
    counter = default.source if isinstance(default, BitReversed) else default
    if isinstance(counter, TableSequence):
        return ResyncBitReversedTableSequenceOp(
            counter.name, *where, counter.table, skip_range=skip
        )
    if isinstance(counter, BitReversedSequence | PooledSequence):  # a pooled one's: its blocks
        return ResyncBitReversedSequenceOp(
            counter.name, *where, counter.schema, counter.table, skip_range=skip
        )
    if isinstance(counter, sa.Sequence):
        return ResyncBitReversedSequenceOp(
            counter.name, *where, counter.schema, DEFAULT_TABLE, skip_range=skip
        )
    return None


def compare_behind(
    autogen_context: AutogenContext, upgrade_ops: ops.UpgradeOps, schemas: set[str | None]
) -> PriorityDispatchResult:
    """Autogenerate: a resync for each existing counter behind its table's keys.

    Not on Spanner, whose native bit-reversed counter no operation moves (doctor
    names the statement to run by hand).

    :param autogen_context: Alembic's context of the autogenerate run.
    :param upgrade_ops: the operations found so far; the resyncs are appended.
    :param schemas: the schemas compared; it runs where they include the default one (None).
    """
    conn = autogen_context.connection
    if conn is None or None not in schemas or dialect_key(conn.dialect) == "spanner":
        return PriorityDispatchResult.CONTINUE
    written: set[tuple[object, ...]] = set()
    for metadata in metadatas_of(autogen_context):
        for column, default in keys_behind(conn, metadata):
            resync = resync_of(column, default)
            if resync is None:
                continue
            behind = ResyncBehindOp(resync)
            if behind.to_diff_tuple() not in written:  # a table two MetaData objects share
                written.add(behind.to_diff_tuple())
                upgrade_ops.ops.append(behind)
    return PriorityDispatchResult.CONTINUE
