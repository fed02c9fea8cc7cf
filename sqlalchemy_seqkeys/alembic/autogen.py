"""Autogenerate: find the seqkeys objects the models declare and the database lacks.

With the plugin in ``autogenerate_plugins``, :func:`compare_seqkeys` proposes the missing
sequences, lease tables, table-sequence rows and bit-reversed sequences (their own ops) and
the upgrades of older tables; it never drops a sequences table the declared sequences use,
nor a lease table, and follows a new sequence on a table with rows by its resync (a
bit-reversed key's counter: past the largest ``reverse_bits(key)``). A shard column is added
nullable, filled, then made ``NOT NULL`` (not on Spanner). :func:`render_item` renders shard
columns and ``server_uuid7()``/``server_uuid()`` defaults as themselves.

User guide: docs/alembic.md.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import sqlalchemy as sa
from alembic.operations import ops
from alembic.util import PriorityDispatchResult

from sqlalchemy_seqkeys._compat import declared_callable
from sqlalchemy_seqkeys._dialect import facts, has_sequences, incrementing_sequences
from sqlalchemy_seqkeys.alembic.ops import (
    CreateBitReversedSequenceOp,
    CreateSequencesTableOp,
    CreateTableSequenceOp,
    CreateWorkerLeaseTableOp,
    DropSequencesTableOp,
    FillShardColumnOp,
    MakeSequenceNamesCaseSensitiveOp,
    NativeResyncOp,
    ResyncBitReversedSequenceOp,
    ResyncBitReversedTableSequenceOp,
    ResyncTableSequenceOp,
    SeqKeysOp,
    UpgradeWorkerLeaseTableOp,
)
from sqlalchemy_seqkeys.bitreverse import BitReversed, BitReversedSequence, SkipRange
from sqlalchemy_seqkeys.pooled import PooledSequence
from sqlalchemy_seqkeys.sequences.generators import TableSequence
from sqlalchemy_seqkeys.sequences.table import inexact_collation, read_next_value, table_clause
from sqlalchemy_seqkeys.server_keys import ServerUuid
from sqlalchemy_seqkeys.shard import ShardComputed, hashed_column_names
from sqlalchemy_seqkeys.snowflake import Snowflake
from sqlalchemy_seqkeys.uuid7_sql import ServerUuid7
from sqlalchemy_seqkeys.workers import MARK_COLUMN

if TYPE_CHECKING:  # not at run time: Alembic loads the plugin while importing this
    from alembic.autogenerate.api import AutogenContext

__all__ = [
    "declared_objects",
    "declared_pooled",
    "declared_sequences",
    "native_resyncs",
    "render_item",
]

_SEQUENCES_COLUMNS = {"name", "next_value"}
_WORKERS_COLUMNS = {"worker_id", "owner", "expires_at"}  # and high_water_ms, from 0.2


def metadatas_of(autogen_context: AutogenContext) -> list[sa.MetaData]:
    """The models' MetaData objects autogenerate compares (``target_metadata``).

    :param autogen_context: Alembic's context of the autogenerate run.
    """
    metadata = autogen_context.metadata
    if metadata is None:
        return []
    if isinstance(metadata, sa.MetaData):
        return [metadata]
    return list(metadata)


def declared_objects(metadatas: Iterable[sa.MetaData], info_key: str) -> Iterator[object]:
    """What the models declare: per MetaData, what ``metadata.info[info_key]`` holds
    (sequences attached with ``metadata=``), then each column default's callable and argument.

    :param metadatas: the models' ``MetaData`` objects.
    :param info_key: the ``MetaData.info`` key under which ``metadata=`` attached the
        strategy's objects (``"seqkeys_pooled"``, ``"seqkeys_bit_reversed"``).

    Example::

        >>> md = sa.MetaData()
        >>> t = sa.Table("t", md, sa.Column("n", sa.Integer, default=7))
        >>> list(declared_objects([md], "seqkeys_pooled"))
        [7]
    """
    for metadata in metadatas:
        yield from metadata.info.get(info_key, {}).values()
        for _, _, found in column_defaults([metadata]):
            yield found


def column_defaults(
    metadatas: Iterable[sa.MetaData],
) -> Iterator[tuple[sa.Table, sa.Column[Any], object]]:
    """Each column's default as declared: ``(table, column, callable or argument)``.

    :param metadatas: the models' ``MetaData`` objects.

    Example::

        >>> md = sa.MetaData()
        >>> t = sa.Table("t", md, sa.Column("n", sa.Integer, default=7))
        >>> [(table.name, column.name, found) for table, column, found in column_defaults([md])]
        [('t', 'n', 7)]
    """
    for metadata in metadatas:
        for table in metadata.tables.values():
            for column in table.columns:
                for found in (
                    declared_callable(column.default),  # SQLAlchemy may wrap the callable
                    getattr(column.default, "arg", None),
                ):
                    if found is not None:
                        yield table, column, found


def existing_users(
    autogen_context: AutogenContext, uses: Callable[[object], bool]
) -> Iterator[tuple[sa.Table, sa.Column[Any]]]:
    """The columns whose default ``uses(default)`` accepts, of tables the database has.

    A sequence created for such a column must move past the keys the table
    holds (after a downgrade dropped it, or a default added to a table with
    rows), or it hands them out again: autogenerate writes a resync after it.

    :param autogen_context: Alembic's context of the autogenerate run.
    :param uses: whether a column's declared default is the sequence.
    """
    inspector = autogen_context.inspector
    seen: set[tuple[str | None, str, str]] = set()
    for table, column, found in column_defaults(metadatas_of(autogen_context)):
        key = (table.schema, table.name, column.name)
        if key in seen or not uses(found):
            continue
        seen.add(key)
        if inspector.has_table(table.name, schema=table.schema):
            yield table, column


def sequences_tables_needed(metadatas: list[sa.MetaData], dialect: sa.Dialect) -> set[str]:
    """The sequences tables that hold the declared sequences' rows on this engine.

    Whether the models declare those tables or not: such a table is never
    proposed for dropping (:func:`keep_tables`). A pooled sequence counts also
    where a column uses it in ``BitReversed(...)``.

    :param metadatas: the models' ``MetaData`` objects.
    :param dialect: the database's dialect.
    """
    table_sequences, bit_reversed = _declared(metadatas)
    needed = {table for table, _ in table_sequences}
    if not has_sequences(dialect):
        needed |= {sequence.table for sequence in bit_reversed}
    if not incrementing_sequences(dialect):
        needed |= {sequence.table for sequence in declared_pooled(metadatas)}
    return needed


def declared_pooled(metadatas: Iterable[sa.MetaData]) -> list[PooledSequence]:
    """Every pooled sequence the models declare, once each, in the order found.

    In what ``PooledSequence(..., metadata=...)`` attached and in the column
    defaults, alone or in ``BitReversed(...)``.

    :param metadatas: the models' ``MetaData`` objects.

    Example::

        >>> from sqlalchemy_seqkeys import BitReversed, PooledSequence
        >>> md = sa.MetaData()
        >>> t = sa.Table("t", md, sa.Column("id", sa.BigInteger, primary_key=True,
        ...              default=BitReversed(PooledSequence("t_ctr", batch_size=10))))
        >>> declared_pooled([md])
        [PooledSequence('t_ctr', batch_size=10)]
    """
    found = (_unwrapped(d) for d in declared_objects(metadatas, "seqkeys_pooled"))
    pooled = {id(s): s for s in found if isinstance(s, PooledSequence)}  # a default is seen twice
    return list(pooled.values())


def _unwrapped(found: object) -> object:
    """The counter of a ``BitReversed(...)`` default; any other default as it is."""
    return found.source if isinstance(found, BitReversed) else found


def native_counter(sequence: PooledSequence | BitReversedSequence, dialect: sa.Dialect) -> bool:
    """Whether ``sequence``'s counter is a native sequence on this engine (else a
    sequences-table row).

    :param sequence: a declared pooled or bit-reversed sequence.
    :param dialect: the database's dialect.
    """
    if isinstance(sequence, PooledSequence):
        return incrementing_sequences(dialect)
    return has_sequences(dialect)


_Counter = TypeVar("_Counter", PooledSequence, BitReversedSequence)

#: where a counter lives: ``(schema, name)`` of a native sequence, ``(table, name)`` of a row
Place = tuple[str | None, str]


def counter_place(sequence: PooledSequence | BitReversedSequence, native: bool) -> Place:
    """Where ``sequence``'s counter lives: ``(schema, name)`` of its native sequence, or
    ``(table, name)`` of its sequences-table row, of which the schema is no part.

    Two declarations of one place are one counter: ``PooledSequence("ids")`` and
    ``PooledSequence("ids", schema="billing")`` are two native sequences, but one row.

    :param sequence: a declared pooled or bit-reversed sequence.
    :param native: whether its counter is a native sequence on this engine
        (:func:`native_counter`).
    """
    return (sequence.schema, sequence.name) if native else (sequence.table, sequence.name)


def by_place(sequences: Iterable[_Counter], native: bool) -> list[_Counter]:
    """One declaration of each counter (the first found), in the order of their places
    (the default schema's first).

    :param sequences: declared sequences of one kind, with repeats.
    :param native: whether their counters are native sequences on this engine.
    """
    found: dict[Place, _Counter] = {}
    for sequence in sequences:
        found.setdefault(counter_place(sequence, native), sequence)
    return [found[place] for place in sorted(found, key=_place_order)]


def _place_order(place: Place) -> tuple[bool, str, str]:
    return (place[0] is not None, place[0] or "", place[1])


def keep_tables(upgrade_ops: ops.UpgradeOps, tables: set[str]) -> None:
    """Remove the proposed drops of ``tables`` (sequences tables the models' sequences use).

    The models need not declare a sequences table to use it (autogenerate
    proposes it then), so Alembic's comparison takes it for one the models
    dropped; dropping it, and creating it again at the next run, would hand
    every key out again.

    :param upgrade_ops: the operations found so far.
    :param tables: the names of the tables to keep (in the default schema).
    """
    upgrade_ops.ops[:] = [
        op
        for op in upgrade_ops.ops
        if not (
            (isinstance(op, DropSequencesTableOp) and op.name in tables)
            or (isinstance(op, ops.DropTableOp) and op.schema is None and op.table_name in tables)
        )
    ]


def is_lease_table(table: sa.Table) -> bool:
    """Whether ``table`` has the columns of a worker-lease table (with ``high_water_ms`` or,
    made by version 0.1, without).

    :param table: a table, as Alembic reflected it.

    Example::

        >>> from sqlalchemy_seqkeys import workers_table
        >>> is_lease_table(workers_table(sa.MetaData()))
        True
    """
    return {c.name for c in table.columns} - {MARK_COLUMN} == _WORKERS_COLUMNS


def lease_tables_used(metadatas: Iterable[sa.MetaData]) -> set[str]:
    """The tables of the leases the models' ``Snowflake`` defaults are bound to.

    A process that runs Alembic rarely has them (a ``Snowflake()`` declared with the
    models is bound at the application's start): :func:`keep_lease_tables` keeps
    every table of the lease table's shape as well.

    :param metadatas: the models' ``MetaData`` objects.
    """
    found: set[str] = set()
    for _, _, default in column_defaults(metadatas):
        if isinstance(default, Snowflake):
            table = getattr(default.lease, "table", None)
            if isinstance(table, sa.Table):
                found.add(table.name)
    return found


def keep_lease_tables(upgrade_ops: ops.UpgradeOps, tables: set[str]) -> None:
    """Remove the proposed drops of worker-lease tables: ``tables``, and any of their shape.

    A :class:`~sqlalchemy_seqkeys.WorkerLease` creates its table itself, so the
    models need not declare it, and Alembic's comparison takes it for one the
    models dropped. Dropping it while a process holds a lease lets the next
    process create it again, empty, and claim the worker id still in use: both
    mint the same snowflake ids. Nothing here can tell whether a lease is held
    (a holder may run on another host), so such a table is never proposed for
    dropping; ``op.drop_worker_lease_table(name)`` written by hand drops it.

    :param upgrade_ops: the operations found so far.
    :param tables: the names of lease tables to keep (in the default schema) whatever
        their columns: those of the leases the models' ``Snowflake`` defaults use.
    """
    upgrade_ops.ops[:] = [
        op
        for op in upgrade_ops.ops
        if not (
            isinstance(op, ops.DropTableOp)
            and ((op.schema is None and op.table_name in tables) or is_lease_table(op.to_table()))
        )
    ]


def row_exists(conn: sa.Connection, existing_tables: set[str], table: str, name: str) -> bool:
    """Whether sequence ``name`` has its row in the sequences table ``table``.

    :param conn: the database's connection.
    :param existing_tables: the tables the database has (``inspector.get_table_names()``).
    :param table: the sequences table.
    :param name: the sequence's name.

    Judged by the exact name also where the table compares names case-insensitively
    (a sequences table of version 0.1 on MySQL or MariaDB, which the migration makes
    case-sensitive first): ``inv`` beside ``Inv`` is a sequence of its own.
    """
    if table not in existing_tables:
        return False
    if inexact_collation(conn, table) is None:
        return read_next_value(conn, name, table=table) is not None
    rows = table_clause(table)
    return name in set(conn.scalars(sa.select(rows.c.name).where(rows.c.name == name)))


def declared_sequences(
    metadatas: Iterable[sa.MetaData],
) -> tuple[dict[tuple[str, str], int], dict[str, BitReversedSequence]]:
    """The table sequences ``{(table, name): start}`` and bit-reversed sequences declared.

    Found in the column defaults of every table, and in what
    ``TableSequence(..., metadata=...)`` and ``BitReversedSequence(..., metadata=...)``
    attached (with no column using them). The bit-reversed sequences are by name: of two
    of one name in two schemas, the last found (autogenerate proposes both).

    :param metadatas: the models' ``MetaData`` objects.

    Example::

        >>> import sqlalchemy as sa
        >>> from sqlalchemy_seqkeys import TableSequence
        >>> md = sa.MetaData()
        >>> t = sa.Table("t", md, sa.Column("id", sa.BigInteger, primary_key=True,
        ...              default=TableSequence("t_id", mode="batch", start=10)))
        >>> declared_sequences([md])
        ({('sequences', 't_id'): 10}, {})
    """
    table_sequences, bit_reversed = _declared(metadatas)
    return table_sequences, {sequence.name: sequence for sequence in bit_reversed}


def _declared(
    metadatas: Iterable[sa.MetaData],
) -> tuple[dict[tuple[str, str], int], list[BitReversedSequence]]:
    """:func:`declared_sequences`, with every bit-reversed sequence found (once per use)."""
    table_sequences: dict[tuple[str, str], int] = {}
    bit_reversed: list[BitReversedSequence] = []
    metadatas = list(metadatas)  # read twice
    attached_table_sequences = (
        sequence
        for metadata in metadatas
        for sequence in metadata.info.get("seqkeys_table_sequences", {}).values()
    )
    for found in itertools.chain(
        declared_objects(metadatas, "seqkeys_bit_reversed"), attached_table_sequences
    ):
        if isinstance(found, BitReversedSequence):
            bit_reversed.append(found)
            continue
        found = _unwrapped(found)
        if isinstance(found, TableSequence):
            table_sequences[(found.table, found.name)] = found.start
    return table_sequences, bit_reversed


def _kind(metadatas: list[sa.MetaData], name: str) -> str | None:
    for metadata in metadatas:
        table = metadata.tables.get(name)
        if table is not None:
            kind = table.info.get("seqkeys")
            return kind if isinstance(kind, str) else None
    return None


def _swap_table_ops(upgrade_ops: ops.UpgradeOps, metadatas: list[sa.MetaData]) -> None:
    """Render the seqkeys tables with their own operations, not a generic create_table."""
    swapped: list[ops.MigrateOperation] = []
    for op in upgrade_ops.ops:
        if isinstance(op, ops.CreateTableOp) and op.schema is None:
            kind = _kind(metadatas, op.table_name)
            if kind == "sequences":
                op = CreateSequencesTableOp(op.table_name)
            elif kind == "workers":
                op = CreateWorkerLeaseTableOp(op.table_name)
        elif (
            isinstance(op, ops.DropTableOp)
            and op.schema is None
            and {c.name for c in op.to_table().columns} == _SEQUENCES_COLUMNS
        ):
            # (a worker-lease table's drop is gone already: keep_lease_tables)
            op = DropSequencesTableOp(op.table_name)
        swapped.append(op)
    upgrade_ops.ops[:] = swapped


def _drop_generic_add_column(upgrade_ops: ops.UpgradeOps, table: str, column: str) -> None:
    """Remove Alembic's own ``op.add_column(table, column)``: a seqkeys op replaces it."""
    kept: list[ops.MigrateOperation] = []
    for op in upgrade_ops.ops:
        if isinstance(op, ops.ModifyTableOps) and op.table_name == table and op.schema is None:
            op.ops = [
                o
                for o in op.ops
                if not (isinstance(o, ops.AddColumnOp) and o.column.name == column)
            ]
            if not op.ops:
                continue
        kept.append(op)
    upgrade_ops.ops[:] = kept


def _is_shard_add(op: ops.MigrateOperation) -> bool:
    return isinstance(op, ops.AddColumnOp) and isinstance(op.column.computed, ShardComputed)


def fill_added_shard_columns(upgrade_ops: ops.UpgradeOps, dialect: sa.Dialect | None) -> None:
    """Write a shard column added to a table as: add it nullable, fill it, make it NOT NULL.

    Elsewhere than on Spanner the library fills the column on INSERT, so the rows the
    table holds have no shard id: a ``NOT NULL`` column without one is refused
    (PostgreSQL, SQLite) or gets 0 in every row (MySQL, MariaDB), which is not its
    shard id. Each such ``add_column`` leaves its table's block (the operations before
    and after it stay in their order) for ``op.add_column`` of the column made nullable,
    outside a batch block (SQLite's batch would copy the table into one that the INSERT
    filling refuses), then :class:`~.ops.FillShardColumnOp`, which
    :func:`render_op` follows by the ``alter_column`` to ``NOT NULL`` in a batch block
    (SQLite alters a column only there).

    :param upgrade_ops: the operations found so far; rewritten in place.
    :param dialect: the database's dialect; on Spanner nothing changes.
    """
    if dialect is None or facts(dialect).generates_shard_columns:
        return
    rewritten: list[ops.MigrateOperation] = []
    for op in upgrade_ops.ops:
        if not isinstance(op, ops.ModifyTableOps) or not any(map(_is_shard_add, op.ops)):
            rewritten.append(op)
            continue
        pending: list[ops.MigrateOperation] = []
        for sub in op.ops:
            if not _is_shard_add(sub):
                pending.append(sub)
                continue
            if pending:
                rewritten.append(ops.ModifyTableOps(op.table_name, pending, schema=op.schema))
                pending = []
            assert isinstance(sub, ops.AddColumnOp)
            rewritten.extend(_added_and_filled(sub))
        if pending:
            rewritten.append(ops.ModifyTableOps(op.table_name, pending, schema=op.schema))
    upgrade_ops.ops[:] = rewritten


def _added_and_filled(add: ops.AddColumnOp) -> list[ops.MigrateOperation]:
    """The shard column's ``add_column``, nullable, and its fill."""
    column = add.column
    computed = column.computed
    assert isinstance(computed, ShardComputed)
    shard = computed.shard
    # a copy in a copy of its table: the model's column stays as it is, and the
    # column still finds the names of the columns it hashes (render_item)
    table = column.table.to_metadata(sa.MetaData())
    nullable = table.c[column.key]
    nullable.nullable = True
    fill = FillShardColumnOp(
        add.table_name,
        column.name,
        hashed_column_names(column, shard),
        shard.shards,
        shard.non_negative,
        add.schema,
    )
    fill.then_not_null, fill.comment = not column.nullable, column.comment
    return [ops.AddColumnOp(add.table_name, nullable, schema=add.schema), fill]


def compare_seqkeys(
    autogen_context: AutogenContext, upgrade_ops: ops.UpgradeOps, schemas: set[str | None]
) -> PriorityDispatchResult:
    """Autogenerate: the seqkeys tables, rows and sequences the database lacks (see above).

    :param autogen_context: Alembic's context of the autogenerate run.
    :param upgrade_ops: the operations found so far; the seqkeys ones are appended,
        Alembic's own ``create_table`` of a seqkeys table is replaced by its operation, and
        its drops of worker-lease tables and used sequences tables are taken out.
    :param schemas: the schemas compared; it runs where they include the default one (None).
    """
    metadatas = metadatas_of(autogen_context)
    # in every schema compared: a lease table is never dropped (each run's models may lack it)
    keep_lease_tables(upgrade_ops, lease_tables_used(metadatas))
    fill_added_shard_columns(upgrade_ops, autogen_context.dialect)
    conn = autogen_context.connection
    if not metadatas or conn is None or None not in schemas:
        return PriorityDispatchResult.CONTINUE
    _swap_table_ops(upgrade_ops, metadatas)
    inspector = autogen_context.inspector
    existing = set(inspector.get_table_names())
    dialect = conn.dialect
    native = has_sequences(dialect)
    table_sequences, declared_bit_reversed = _declared(metadatas)
    bit_reversed = by_place(declared_bit_reversed, native)

    keep_tables(upgrade_ops, sequences_tables_needed(metadatas, dialect))
    needed_tables = {table for table, _ in table_sequences}
    if not native:
        needed_tables |= {s.table for s in bit_reversed}
    created = {op.name for op in upgrade_ops.ops if isinstance(op, CreateSequencesTableOp)}
    for table in sorted(needed_tables - existing - created):
        # the emulation needs the table even where the models do not declare it
        upgrade_ops.ops.append(CreateSequencesTableOp(table))

    declared_tables = {
        name
        for metadata in metadatas
        for name, table in metadata.tables.items()
        if table.info.get("seqkeys") == "sequences" and table.schema is None
    }
    for table in sorted((needed_tables | declared_tables) & existing):
        if inexact_collation(conn, table) is not None:
            upgrade_ops.ops.append(MakeSequenceNamesCaseSensitiveOp(table))

    for (table, name), start in sorted(table_sequences.items()):
        if not row_exists(conn, existing, table, name):
            create = CreateTableSequenceOp(name, start, table)
            create.followed_by = _table_sequence_resyncs(autogen_context, table, name)
            upgrade_ops.ops.append(create)

    declared_workers = {
        name
        for metadata in metadatas
        for name, table in metadata.tables.items()
        if table.info.get("seqkeys") == "workers" and table.schema is None
    }
    for table in sorted(declared_workers & existing):
        if MARK_COLUMN not in {c["name"] for c in inspector.get_columns(table)}:
            _drop_generic_add_column(upgrade_ops, table, MARK_COLUMN)
            upgrade_ops.ops.append(UpgradeWorkerLeaseTableOp(table))

    sequence_names: dict[str | None, set[str]] = {}
    for sequence in bit_reversed:
        name = sequence.name
        if native:
            if sequence.schema not in sequence_names:
                found = inspector.get_sequence_names(schema=sequence.schema)
                sequence_names[sequence.schema] = set(found)
            exists = name in sequence_names[sequence.schema]
        else:
            exists = row_exists(conn, existing, sequence.table, name)
        if not exists:
            create_bit_reversed = CreateBitReversedSequenceOp(
                name,
                sequence.start_with_counter,
                sequence.skip_range,
                sequence.table,
                sequence.schema,
            )
            create_bit_reversed.followed_by = native_resyncs(
                autogen_context, sequence, ResyncBitReversedSequenceOp
            )
            upgrade_ops.ops.append(create_bit_reversed)
    return PriorityDispatchResult.CONTINUE


def _is_table_sequence(found: object, key: tuple[str, str]) -> bool:
    """Whether a column default is the plain TableSequence ``(table, name)`` (its keys count)."""
    return isinstance(found, TableSequence) and (found.table, found.name) == key


def _table_sequence_resyncs(
    autogen_context: AutogenContext, table: str, name: str
) -> tuple[SeqKeysOp, ...]:
    """The resyncs after a new table sequence's row, for each column of a table the
    database has whose default uses it: past ``MAX(column)`` for a plain default, past
    the largest ``reverse_bits(key)`` for ``BitReversed(TableSequence(...))``."""
    key = (table, name)
    plain = existing_users(autogen_context, functools.partial(_is_table_sequence, key=key))
    reversed_ = existing_users(
        autogen_context, functools.partial(_is_bit_reversed_counter, key=key)
    )
    return (
        *(
            ResyncTableSequenceOp(name, users.name, column.name, users.schema, table)
            for users, column in plain
        ),
        *(
            ResyncBitReversedTableSequenceOp(
                name,
                users.name,
                column.name,
                users.schema,
                table,
                skip_range=declared_skip_range(column),
            )
            for users, column in reversed_
        ),
    )


def native_resyncs(
    autogen_context: AutogenContext,
    sequence: PooledSequence | BitReversedSequence,
    op_class: type[NativeResyncOp],
) -> tuple[SeqKeysOp, ...]:
    """The resyncs after a new pooled or bit-reversed sequence, for each column of a table
    the database has whose default uses its counter (:func:`counter_place`: the same
    native sequence, or the same sequences-table row).

    A column whose default is the sequence gets ``op_class``; one whose default is
    ``BitReversed`` of a pooled sequence gets the bit-reversed resync, past the largest
    ``reverse_bits(key)``: ``op.resync_bit_reversed_sequence``, or where the engine has
    native sequences but the pooled counter is a row (Spanner)
    ``op.resync_bit_reversed_table_sequence``.

    :param autogen_context: Alembic's context of the autogenerate run.
    :param sequence: the sequence the migration creates.
    :param op_class: its resync: past ``MAX(column)`` for a pooled sequence, past the
        largest ``reverse_bits(key)`` for a bit-reversed one.
    """
    dialect = autogen_context.dialect
    assert dialect is not None  # autogenerate compares against a database
    native = native_counter(sequence, dialect)
    name, schema, rows = sequence.name, sequence.schema, sequence.table
    uses = functools.partial(_uses_counter, sequence=sequence, native=native)

    def skip_of(column: sa.Column[Any]) -> dict[str, Any]:
        # keys the column's default never hands out (legacy keys) are no counter's
        if issubclass(op_class, ResyncBitReversedSequenceOp):
            return {"skip_range": declared_skip_range(column)}
        return {}

    resyncs: list[SeqKeysOp] = [
        op_class(name, users.name, column.name, users.schema, schema, rows, **skip_of(column))
        for users, column in existing_users(autogen_context, uses)
    ]
    if isinstance(sequence, PooledSequence):
        wrapped = functools.partial(_uses_counter, sequence=sequence, native=native, wrapped=True)
        for users, column in existing_users(autogen_context, wrapped):
            where = (name, users.name, column.name, users.schema)
            if not native and has_sequences(dialect):  # the native op would seek a sequence
                resyncs.append(
                    ResyncBitReversedTableSequenceOp(
                        *where, rows, skip_range=declared_skip_range(column)
                    )
                )
            else:
                resyncs.append(
                    ResyncBitReversedSequenceOp(
                        *where, schema, rows, skip_range=declared_skip_range(column)
                    )
                )
    return tuple(resyncs)


def declared_skip_range(column: sa.Column[Any]) -> SkipRange | None:
    """The ``skip_range`` of ``column``'s ``BitReversed`` default (a ``BitReversedSequence``
    is one): its keys are never handed out, so a resync leaves them out. None for another
    default, or none declared.

    :param column: a column of the models.
    """
    for found in (declared_callable(column.default), getattr(column.default, "arg", None)):
        if isinstance(found, BitReversed):
            return found.skip_range
    return None


def _is_bit_reversed_counter(found: object, key: tuple[str, str]) -> bool:
    """Whether a column default is ``BitReversed`` of the TableSequence ``(table, name)``."""
    source = getattr(found, "source", None) if isinstance(found, BitReversed) else None
    return isinstance(source, TableSequence) and (source.table, source.name) == key


def _uses_counter(
    found: object,
    sequence: PooledSequence | BitReversedSequence,
    native: bool,
    wrapped: bool = False,
) -> bool:
    """Whether a column default is ``sequence`` (with ``wrapped``: ``BitReversed`` of it):
    its class, and the counter it takes its values from (:func:`counter_place`)."""
    if wrapped:
        if not isinstance(found, BitReversed):
            return False
        found = found.source
    if not isinstance(found, PooledSequence | BitReversedSequence):
        return False
    if type(found) is not type(sequence):
        return False
    return counter_place(found, native) == counter_place(sequence, native)


_Check = Callable[[sa.Column[Any], sa.Column[Any]], bool]


def _server_defaults_alike(check: _Check) -> Callable[..., PriorityDispatchResult]:
    """A ``("column", "server_default")`` comparator: no change where ``check(conn, model)``."""

    def compare(
        autogen_context: AutogenContext,
        alter_column_op: ops.AlterColumnOp,
        schema: str | None,
        tname: str,
        cname: str,
        conn_col: sa.Column[Any],
        metadata_col: sa.Column[Any],
    ) -> PriorityDispatchResult:
        if check(conn_col, metadata_col):
            return PriorityDispatchResult.STOP
        return PriorityDispatchResult.CONTINUE

    return compare


def _is_shard_column(conn_col: sa.Column[Any], metadata_col: sa.Column[Any]) -> bool:
    # generated on Spanner, plain elsewhere, and never altered: nothing to compare
    return isinstance(metadata_col.computed, ShardComputed)


#: what servers report for a uuidv7() default, normalised by _default_text
_UUIDV7_DEFAULTS = {"uuidv7()", "uuid_v7()"}


def _default_text(default: Any) -> str | None:
    """A reflected server default as lower-case text without outer parentheses."""
    arg = getattr(default, "arg", None)
    text = arg if isinstance(arg, str) else getattr(arg, "text", None)
    if text is None:
        return None
    text = text.strip().lower()
    while text.startswith("(") and text.endswith(")"):
        text = text[1:-1].strip()
    return re.sub(r"^pg_catalog\.", "", text)


#: what servers report for a server_uuid() default, without whitespace
_SERVER_UUID_DEFAULTS = _UUIDV7_DEFAULTS | {
    "uuid()",  # MariaDB 10.7-11.6
    "uuid_to_bin(uuid(),1)",  # MySQL
    "newsequentialid()",  # SQL Server
    "generate_uuid()",  # Spanner
}


def _both_uuidv7(conn_col: sa.Column[Any], metadata_col: sa.Column[Any]) -> bool:
    # MariaDB reports UUID_v7() as uuid_v7(), and Alembic compares the default
    # of a CHAR column as a quoted string: a false change without this.
    default = metadata_col.server_default
    if isinstance(default, sa.DefaultClause) and isinstance(default.arg, ServerUuid):
        text = _default_text(conn_col.server_default)
        return text is not None and "".join(text.split()) in _SERVER_UUID_DEFAULTS
    if not (isinstance(default, sa.DefaultClause) and isinstance(default.arg, ServerUuid7)):
        return False
    return _default_text(conn_col.server_default) in _UUIDV7_DEFAULTS


shard_columns_are_not_compared = _server_defaults_alike(_is_shard_column)
uuidv7_defaults_match_by_name = _server_defaults_alike(_both_uuidv7)


# -- rendering ---------------------------------------------------------------------


#: what a script needs for the names autogenerate writes (``sqlalchemy_seqkeys.types.CombGuid()``)
IMPORT = "import sqlalchemy_seqkeys"

#: the server defaults of this library, and the call that makes each in a script
_SERVER_DEFAULT_CALLS: tuple[tuple[type[Any], str], ...] = (
    (ServerUuid7, "sqlalchemy_seqkeys.server_uuid7()"),
    (ServerUuid, "sqlalchemy_seqkeys.server_uuid()"),
)


def render_op(autogen_context: AutogenContext, op: SeqKeysOp) -> str | list[str]:
    """Alembic's renderer of every seqkeys operation: ``op.create_table_sequence(...)``.

    Then, each line, what :attr:`~.ops.SeqKeysOp.followed_by` holds (a new sequence's resync).

    :param autogen_context: Alembic's context; the script's import is added to it.
    :param op: the operation to render.
    """
    autogen_context.imports.add(IMPORT)
    lines = [op.render(), *(then.render() for then in op.followed_by)]
    if isinstance(op, FillShardColumnOp) and op.then_not_null:
        lines += _not_null_lines(autogen_context, op)
    return lines[0] if len(lines) == 1 else lines


def _not_null_lines(autogen_context: AutogenContext, op: FillShardColumnOp) -> list[str]:
    """The filled shard column made ``NOT NULL``, in a batch block (SQLite needs one)."""
    prefix = autogen_context.opts.get("sqlalchemy_module_prefix", "sa.") or ""
    comment = "" if op.comment is None else f", existing_comment={op.comment!r}"
    return [
        f"with op.batch_alter_table({op.table_name!r}, schema={op.schema!r}) as batch_op:",
        f"batch_op.alter_column({op.column_name!r}, existing_type={prefix}BigInteger(), "
        f"nullable=False{comment})",
        "",
    ]


def render_item(type_: str, obj: Any, autogen_context: AutogenContext) -> str | bool:
    """Alembic's ``render_item`` hook: shard columns render as ``spanner_shard_column(...)``,
    ``server_default=server_uuid7()`` as itself (not as the SQL text of one dialect).

    A column type of this library (``sqlalchemy_seqkeys.types.CombGuid()``)
    gets its import. Everything else is left to Alembic (returns False).

    :param type_: what Alembic renders (``"column"``, ``"server_default"``, ``"type"``, ...).
    :param obj: the object to render.
    :param autogen_context: Alembic's context; the needed import is added to it.

    Example::

        context.configure(..., render_item=sqlalchemy_seqkeys.alembic.render_item)
    """
    if type_ == "server_default" and isinstance(obj, sa.DefaultClause):
        for function, call in _SERVER_DEFAULT_CALLS:
            if isinstance(obj.arg, function):
                autogen_context.imports.add(IMPORT)
                return call
    if type_ == "type" and type(obj).__module__.startswith("sqlalchemy_seqkeys."):
        autogen_context.imports.add(IMPORT)
        return False
    if type_ == "column" and isinstance(obj, sa.Column):
        computed = obj.computed
        if isinstance(computed, ShardComputed):
            autogen_context.imports.add(IMPORT)
            shard = computed.shard
            # the script's columns are written by name (a key is not rendered)
            args = ", ".join(repr(c) for c in (obj.name, *hashed_column_names(obj, shard)))
            extra = ", non_negative=True" if shard.non_negative else ""
            return (
                f"sqlalchemy_seqkeys.spanner_shard_column({args}, shards={shard.shards}{extra}, "
                f"nullable={obj.nullable!r})"
            )
    return False
