"""Alembic operations and autogenerate for pooled sequences (:class:`PooledSequence`).

``op.create_pooled_sequence(name, allocation_size, start=1)`` creates the sequence (``CREATE
SEQUENCE ... INCREMENT BY allocation_size``; the sequences-table row on SQLite, MySQL and
Spanner), its reverse ``op.drop_pooled_sequence`` drops it; ``op.resync_pooled_sequence(name,
table_name, column)`` moves the sequence past ``MAX(column)``, never back, and has no reverse.
Online, each checks first and raises ``MigrationError`` before changing anything.
:func:`compare_pooled_sequences` proposes the pooled sequences the models declare and the
database lacks.

User guide: docs/strategies/pooled.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import sqlalchemy as sa
from alembic.operations import Operations
from alembic.operations import ops as alembic_ops
from alembic.util import PriorityDispatchResult

from sqlalchemy_seqkeys._dialect import incrementing_sequences
from sqlalchemy_seqkeys.alembic.autogen import (
    by_place,
    declared_pooled,
    keep_tables,
    metadatas_of,
    native_resyncs,
    row_exists,
    sequences_tables_needed,
)
from sqlalchemy_seqkeys.alembic.ops import (
    CreateSequencesTableOp,
    NativeResyncOp,
    SequenceOp,
    create_sequence,
    drop_sequence,
    implements,
    migration_connection,
    require_source,
)
from sqlalchemy_seqkeys.dialects import sequence_schema
from sqlalchemy_seqkeys.errors import MigrationError
from sqlalchemy_seqkeys.pooled import PooledSequence, resync_pooled_statements
from sqlalchemy_seqkeys.sequences.table import DEFAULT_TABLE

if TYPE_CHECKING:  # not at run time: Alembic loads the plugin while importing this
    from alembic.autogenerate.api import AutogenContext

__all__ = [
    "CreatePooledSequenceOp",
    "DropPooledSequenceOp",
    "ResyncPooledSequenceOp",
    "compare_pooled_sequences",
    "declared_pooled_sequences",
]


@dataclass(eq=False)
class _PooledOp(SequenceOp):
    name: str
    allocation_size: int = 50
    start: int = 1
    schema: str | None = None
    table: str = DEFAULT_TABLE
    sequence: PooledSequence = field(init=False, repr=False)

    positional = 2
    always = ("allocation_size",)
    keyword_only = ("schema", "table")
    native = incrementing_sequences
    first_value = "start"

    @classmethod
    def run(
        cls,
        operations: Operations,
        name: str,
        allocation_size: int = 50,
        start: int = 1,
        *,
        schema: str | None = None,
        table: str = DEFAULT_TABLE,
    ) -> None:
        """``op.create_pooled_sequence(name, ...)`` and ``op.drop_pooled_sequence(name, ...)``.

        :param name: the sequence's name.
        :param allocation_size: ``PooledSequence``'s ``batch_size``: keys per ``nextval``,
            the native sequence's ``INCREMENT BY``.
        :param start: the first key.
        :param schema: the native sequence's schema.
        :param table: the sequences table where the engine has no such sequence.
        """
        operations.invoke(cls(name, allocation_size, start, schema, table))

    def __post_init__(self) -> None:
        # validates like the column default does, with the same messages
        self.sequence = PooledSequence(
            self.name,
            allocation_size=self.allocation_size,  # its errors name allocation_size
            start=self.start,
            schema=self.schema,
            table=self.table,
        )


class CreatePooledSequenceOp(_PooledOp, op_name="create_pooled_sequence"):
    """Create what :class:`~sqlalchemy_seqkeys.PooledSequence` needs on this engine.

    A native ``INCREMENT BY allocation_size`` sequence where the engine has
    one, else a sequences-table row. ``allocation_size`` is the sequence's
    ``batch_size`` (given positionally, as autogenerate renders it).

    Example::

        op.create_pooled_sequence("order_id", 50, start=1000)
    """


class DropPooledSequenceOp(
    _PooledOp, op_name="drop_pooled_sequence", reverses=CreatePooledSequenceOp
):
    """Drop a pooled sequence (its arguments are what a downgrade recreates).

    Example::

        op.drop_pooled_sequence("order_id", 50)
    """


implements(CreatePooledSequenceOp)(create_sequence)
implements(DropPooledSequenceOp)(drop_sequence)


@dataclass(eq=False)
class ResyncPooledSequenceOp(NativeResyncOp, op_name="resync_pooled_sequence"):
    """Move a pooled sequence to ``MAX(column) + 1`` of a table, never backwards.

    For a migration that imports rows with their keys, and after creating a
    sequence for a table that has rows. See
    :func:`~sqlalchemy_seqkeys.resync_pooled_sequence`; on PostgreSQL it locks
    the sequence against ``nextval`` until the migration's transaction ends.
    Online it refuses (``MigrationError``, nothing changed) a missing table or
    column, and a ``MAX(column)`` of 2**63 - 1; offline its statements change
    nothing there. It has no reverse: a sequence is never moved back.

    Example::

        op.resync_pooled_sequence("order_id", "orders", "id")
    """


@implements(ResyncPooledSequenceOp)
def _resync_pooled(operations: Operations, operation: ResyncPooledSequenceOp) -> None:
    dialect = operations.get_context().dialect
    if not incrementing_sequences(dialect):  # a sequences-table row: as a table sequence
        operations.invoke(operation.as_row)
        return
    source = (operation.name, operation.table_name, operation.column)
    conn = migration_connection(operations)
    # the connection's schema_translate_map (a tenant's) makes the sequence's schema
    translate = None if conn is None else conn.get_execution_options().get("schema_translate_map")
    statements = resync_pooled_statements(  # refuses engines it cannot resync on
        dialect,
        *source,
        schema=operation.schema,
        sequence_schema=operation.sequence_schema,
        schema_translate_map=translate,
    )
    if conn is not None:
        schema = sequence_schema(
            conn, sa.Sequence(operation.name, schema=operation.sequence_schema)
        )
        if not sa.inspect(conn).has_sequence(operation.name, schema):
            raise MigrationError(
                f"there is no sequence {operation.name!r} to resync; create it with "
                f"op.create_pooled_sequence({operation.name!r}, ALLOCATION_SIZE) first"
            )
        require_source(conn, *source, operation.schema)
    for statement in statements:
        operations.execute(statement)


# -- autogenerate --------------------------------------------------------------------


def declared_pooled_sequences(metadatas: Iterable[sa.MetaData]) -> dict[str, PooledSequence]:
    """The pooled sequences the models declare, by name.

    Found in the column defaults of every table, alone or in ``BitReversed(...)``, and in
    what ``PooledSequence(..., metadata=...)`` attached. Of two of one name in two
    schemas, the last found (autogenerate proposes both).

    :param metadatas: the models' ``MetaData`` objects.

    Example::

        >>> import sqlalchemy as sa
        >>> from sqlalchemy_seqkeys import PooledSequence
        >>> md = sa.MetaData()
        >>> order_id = PooledSequence("order_id", batch_size=20, metadata=md)  # no column uses it
        >>> declared_pooled_sequences([md])
        {'order_id': PooledSequence('order_id', batch_size=20)}
    """
    return {found.name: found for found in declared_pooled(metadatas)}


def _tables_created(upgrade_ops: alembic_ops.UpgradeOps) -> set[str]:
    created: set[str] = set()
    for op in upgrade_ops.ops:
        if isinstance(op, CreateSequencesTableOp):
            created.add(op.name)
        elif isinstance(op, alembic_ops.CreateTableOp) and op.schema is None:
            created.add(op.table_name)
    return created


def compare_pooled_sequences(
    autogen_context: AutogenContext,
    upgrade_ops: alembic_ops.UpgradeOps,
    schemas: set[str | None],
) -> PriorityDispatchResult:
    """Autogenerate: ``op.create_pooled_sequence(...)`` for each one the database lacks.

    Part of the seqkeys plugin. Sequences that exist are left alone, also when
    their increment differs: the column default refuses those at run time,
    and altering a live pooled sequence is not a change to generate. A new
    one that is the default of a column of a table the database has is
    followed by ``op.resync_pooled_sequence(...)`` (the table may hold rows),
    or, where the default is ``BitReversed`` of it, by the bit-reversed resync
    (past the largest ``reverse_bits(key)``); the sequences table the sequences
    use is never proposed for dropping. Two of one name in two schemas are two
    native sequences, but one sequences-table row.

    :param autogen_context: Alembic's context of the autogenerate run.
    :param upgrade_ops: the operations found so far; ``op.create_pooled_sequence(...)``
        (and ``op.create_sequences_table()`` where needed) are appended.
    :param schemas: the schemas compared; it runs where they include the default one (None).

    Example (``env.py``)::

        context.configure(..., autogenerate_plugins=["alembic.autogenerate.*", "seqkeys"])
    """
    metadatas = metadatas_of(autogen_context)
    conn = autogen_context.connection
    if not metadatas or conn is None or None not in schemas:
        return PriorityDispatchResult.CONTINUE
    inspector = autogen_context.inspector
    native = incrementing_sequences(conn.dialect)
    # one of each counter: a native sequence per (schema, name), a row per (table, name)
    declared = by_place(declared_pooled(metadatas), native)
    if not declared:
        return PriorityDispatchResult.CONTINUE
    keep_tables(upgrade_ops, sequences_tables_needed(metadatas, conn.dialect))
    existing_tables = set(inspector.get_table_names())
    if not native:
        needed = {sequence.table for sequence in declared}
        for table in sorted(needed - existing_tables - _tables_created(upgrade_ops)):
            upgrade_ops.ops.append(CreateSequencesTableOp(table))
    names: dict[str | None, set[str]] = {}
    for sequence in declared:
        name = sequence.name
        if native:
            if sequence.schema not in names:
                names[sequence.schema] = set(inspector.get_sequence_names(schema=sequence.schema))
            exists = name in names[sequence.schema]
        else:
            exists = row_exists(conn, existing_tables, sequence.table, name)
        if not exists:
            create = CreatePooledSequenceOp(
                name, sequence.batch_size, sequence.start, sequence.schema, sequence.table
            )
            # a plain key's resync, and a BitReversed(...) key's bit-reversed one
            create.followed_by = native_resyncs(autogen_context, sequence, ResyncPooledSequenceOp)
            upgrade_ops.ops.append(create)
    return PriorityDispatchResult.CONTINUE
