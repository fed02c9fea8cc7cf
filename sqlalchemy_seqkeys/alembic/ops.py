"""Alembic operations on ``op``: the sequences table and its rows, bit-reversed sequences, leases,
the shard ids of the rows a table held before its shard column.

Every operation is one small dataclass whose fields are the arguments of ``op.<name>(...)``,
in order; :class:`SeqKeysOp` derives from them the reverse, ``alembic check``'s diff tuple
and the call autogenerate writes. An operation and its reverse share a base whose
``run(cls, operations, ...)`` writes those arguments out once (Alembic reads them from its
code). Online, each checks what it can and raises ``MigrationError`` before changing
anything; offline (``--sql``) it prints the same statements. The plugin registers them.

User guide: docs/alembic.md.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import MISSING, Field, dataclass, field, fields
from typing import Any, ClassVar

import sqlalchemy as sa
from alembic.operations import MigrateOperation, Operations
from alembic.operations import ops as alembic_ops
from sqlalchemy.schema import CreateSequence, DropSequence

from sqlalchemy_seqkeys._dialect import (
    check_identifier,
    check_sequence_start,
    create_refusals,
    drop_refusals,
    facts,
    has_sequences,
    identifier_text,
    natively_bit_reversed,
)
from sqlalchemy_seqkeys._dialect import native_sequences as native_sequences
from sqlalchemy_seqkeys._validate import check_int, check_name, shown
from sqlalchemy_seqkeys.bitreverse import (
    BitReversedSequence,
    SkipRange,
    check_skip_range,
    reverse_bits,
)
from sqlalchemy_seqkeys.dialects import sequence_schema
from sqlalchemy_seqkeys.errors import (
    InvalidSequenceError,
    InvalidShardError,
    MigrationError,
    NaiveDatetimeError,
)
from sqlalchemy_seqkeys.sequences.resync import (
    check_integer_key,
    check_source_names,
    resync_statement,
)
from sqlalchemy_seqkeys.sequences.table import (
    DEFAULT_TABLE,
    MAX_VALUE,
    NAME_LENGTH,
    block_holders,
    check_exact_names,
    forget_exact_names,
    forget_row,
    name_type,
    native_key,
    read_next_value,
    sequences_table,
    table_clause,
    wrote_row,
)
from sqlalchemy_seqkeys.sequences.table import (
    check_name as check_sequence_name,
)
from sqlalchemy_seqkeys.shard import ShardId
from sqlalchemy_seqkeys.workers import DEFAULT_TABLE as DEFAULT_WORKERS_TABLE
from sqlalchemy_seqkeys.workers import MARK_COLUMN, workers_table

__all__ = [
    "CreateBitReversedSequenceOp",
    "CreateSequencesTableOp",
    "CreateTableSequenceOp",
    "CreateWorkerLeaseTableOp",
    "DowngradeWorkerLeaseTableOp",
    "DropBitReversedSequenceOp",
    "DropSequencesTableOp",
    "DropTableSequenceOp",
    "DropWorkerLeaseTableOp",
    "FillShardColumnOp",
    "MakeSequenceNamesCaseInsensitiveOp",
    "MakeSequenceNamesCaseSensitiveOp",
    "ResyncBitReversedSequenceOp",
    "ResyncBitReversedTableSequenceOp",
    "ResyncTableSequenceOp",
    "UpgradeWorkerLeaseTableOp",
    "mark_column",
    "native_sequences",
]

_Implementation = Callable[[Operations, Any], None]

#: every operation with its implementation; the plugin registers them with Alembic
IMPLEMENTATIONS: dict[type[SeqKeysOp], _Implementation] = {}


def implements(*op_classes: type[SeqKeysOp]) -> Callable[[_Implementation], _Implementation]:
    """Record the decorated function as the implementation of ``op_classes``."""

    def record(implementation: _Implementation) -> _Implementation:
        for op_class in op_classes:
            IMPLEMENTATIONS[op_class] = implementation
        return implementation

    return record


class SeqKeysOp(MigrateOperation):
    """What every seqkeys operation shares, derived from its dataclass fields.

    A class statement names the operation and, for an undo, what it reverses:
    ``class DropXOp(_XOp, op_name="drop_x", reverses=CreateXOp)``; ``_XOp``
    (or the class) writes ``run(cls, operations, <the fields>)``, which
    becomes the class's ``drop_x`` classmethod and so ``op.drop_x(...)``.
    """

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]
    #: what the operation is called on ``op``
    op_name: ClassVar[str]
    #: the operation that undoes this one; None: it has no reverse
    reverse_op: ClassVar[type[SeqKeysOp] | None] = None
    #: how many leading arguments autogenerate writes without their names
    positional: ClassVar[int] = 1
    #: arguments autogenerate writes even at their default
    always: ClassVar[tuple[str, ...]] = ()
    #: arguments that ``op.<name>(...)`` takes by keyword only (the last ones)
    keyword_only: ClassVar[tuple[str, ...]] = ()
    #: what autogenerate writes right after this operation (a new sequence's resync); not
    #: an argument, and not reversed
    followed_by: tuple[SeqKeysOp, ...] = ()

    def __init_subclass__(
        cls, op_name: str = "", reverses: type[SeqKeysOp] | None = None, **kw: Any
    ) -> None:
        super().__init_subclass__(**kw)
        if op_name:
            cls.op_name = op_name
            run = getattr(cls, "run", None)
            if run is None:  # pragma: no cover - a class written wrong
                raise TypeError(
                    f"{cls.__name__} has no classmethod run(cls, operations, ...) to be "
                    f"op.{op_name}(...): write it in the class or in the base it shares with "
                    "its reverse, as every operation in alembic/ops.py does"
                )
            setattr(cls, op_name, classmethod(run.__func__))  # what Alembic looks up
        if reverses is not None:
            cls.reverse_op, reverses.reverse_op = reverses, cls

    def arguments(self) -> dict[str, Any]:
        """The arguments that make this operation again: ``type(op)(**op.arguments())``."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.init}

    def reverse(self) -> MigrateOperation:
        if self.reverse_op is None:
            return super().reverse()  # raises NotImplementedError: no reverse
        return self.reverse_op(**self.arguments())

    def to_diff_tuple(self) -> tuple[Any, ...]:
        return (type(self).__name__, next(iter(self.arguments().values())))

    def render(self) -> str:
        """The call autogenerate writes, arguments at their default left out."""
        parts = []
        for index, f in enumerate(f for f in fields(self) if f.init):
            value = getattr(self, f.name)
            if f.default is not MISSING and value == f.default and f.name not in self.always:
                continue
            parts.append(repr(value) if index < self.positional else f"{f.name}={value!r}")
        return f"op.{self.op_name}({', '.join(parts)})"

    @classmethod
    def op_method(cls) -> classmethod[Any, Any, None]:
        """The classmethod Alembic turns into ``op.<op_name>(...)``: ``run``, by that name.

        Alembic reads its arguments from the function's code, so ``run`` writes
        them out (``run(cls, operations, name, start=1, ...)``);
        tests/compile/test_alembic_ops_signatures.py checks them against the fields.
        """
        method: classmethod[Any, Any, None] = cls.__dict__[cls.op_name]
        return method


def _help_text(op_class: type[SeqKeysOp]) -> str:
    """What ``help(op.<name>)`` shows: the class docstring, then ``run``'s ``:param:`` fields."""
    run_doc = inspect.getdoc(op_class.op_method().__func__) or ""
    params = run_doc[run_doc.index(":param") :] if ":param" in run_doc else ""
    return f"{inspect.cleandoc(op_class.__doc__ or '')}\n\n{params}".strip()


def register_operations() -> None:
    """Make every operation ``op.<name>`` with its implementation (the plugin calls it once)."""
    for op_class, implementation in IMPLEMENTATIONS.items():
        run = op_class.op_method().__func__  # shared with the reverse: its docstring is restored
        run_doc, run.__doc__ = run.__doc__, _help_text(op_class)  # Alembic copies it to op.<name>
        Operations.register_operation(op_class.op_name)(op_class)
        run.__doc__ = run_doc  # Alembic wrote "This method is proxied ..." into it
        Operations.implementation_for(op_class)(implementation)


# -- checks shared by the implementations ----------------------------------------------


def migration_connection(operations: Operations) -> sa.Connection | None:
    """The live connection, or None offline (``--sql``), where nothing can be checked."""
    context = operations.get_context()
    if context.as_sql:
        return None
    conn = operations.get_bind()
    # Spanner's driver holds DDL back until the next DML; its reflection reads
    # past the driver, so apply what is pending before checking anything.
    run_pending_ddl = getattr(conn.connection.dbapi_connection, "run_prior_DDL_statements", None)
    if run_pending_ddl is not None:
        run_pending_ddl()
    return conn


def _translated_schema(conn: sa.Connection, schema: str | None) -> str | None:
    """``schema`` as the connection's ``schema_translate_map`` makes it (a tenant's).

    SQLAlchemy sends the statements there, while the inspector reads the schema it is
    told: every check of an operation asks about this one, and Alembic's own ``ALTER``
    (which does not follow the map) is given it. The same rule as the sequences' own.
    """
    return sequence_schema(conn, sa.Sequence("", schema=schema))


def _has_table(conn: sa.Connection, name: str, schema: str | None = None) -> bool:
    return bool(sa.inspect(conn).has_table(name, schema=_translated_schema(conn, schema)))


def _column_names(conn: sa.Connection, table: str, schema: str | None = None) -> list[str]:
    """The names of ``table``'s columns, in the schema the connection's statements go to."""
    inspector = sa.inspect(conn)
    return [c["name"] for c in inspector.get_columns(table, _translated_schema(conn, schema))]


def _check_table_name(operations: Operations, table: str, what: str) -> None:
    """Refuse a table name this engine cannot hold, online and offline (no I/O).

    PostgreSQL would cut a name past 63 bytes, silently: two long names would be one table.
    """
    check_identifier(operations.get_context().dialect, table, f"{what} name", MigrationError)


def _require_table(conn: sa.Connection | None, table: str, what: str) -> None:
    if conn is not None and not _has_table(conn, table):
        raise MigrationError(
            f"{what} needs the sequences table {table!r}, which does not exist; "
            f"run op.create_sequences_table({table!r}) first"
        )


def require_source(
    conn: sa.Connection,
    name: str,
    table: str,
    column: str,
    schema: str | None,
    *,
    skip_range: SkipRange | None = None,
) -> None:
    """A resync's table and column exist, and ``MAX(column)`` leaves a key after it.

    At ``MAX(column)`` = 2**63 - 1 the resync's statements would change nothing, and the
    sequence would go on handing out keys the table holds: refused, nothing changed.
    Keys inside ``skip_range`` (a bit-reversed sequence's, never handed out) are left out.
    """
    where = f"{schema}.{table}" if schema else table
    if not _has_table(conn, table, schema):
        raise MigrationError(f"there is no table {where!r} to resync sequence {name!r} with")
    # read before the query: a failed statement ends PostgreSQL's transaction
    names = _column_names(conn, table, schema)
    source = sa.Table(table, sa.MetaData(), sa.Column(column), schema=schema)
    try:
        largest = conn.execute(sa.select(sa.func.max(source.c[column]))).scalar()
    except sa.exc.DBAPIError as exc:
        # the names as reflected (MySQL's reflection doubles a backtick): asked only
        # where the server refused the column
        if column in names:
            raise
        raise MigrationError(
            f"table {where!r} has no column {column!r} to resync sequence {name!r} with; "
            f"nothing was changed. Its columns: {', '.join(names)}"
        ) from exc
    try:  # a text column's MAX is no key: refused as the resync functions refuse it
        largest = check_integer_key(largest, source, name)
        if largest is not None and skip_range is not None and in_range(largest, skip_range):
            # an integer column (its MAX is one): the largest key outside the range
            outside = sa.select(sa.func.max(source.c[column])).where(
                outside_range(source.c[column], skip_range)
            )
            largest = check_integer_key(conn.execute(outside).scalar(), source, name)
    except InvalidSequenceError as exc:
        raise MigrationError(str(exc)) from None
    if largest is not None and largest >= MAX_VALUE:
        raise MigrationError(
            f"the largest {column!r} in table {where!r} is {largest}, the BIGINT maximum: "
            f"sequence {name!r} cannot move past it, and would hand out keys the table "
            "holds; nothing was changed"
        )


def in_range(value: int, skip_range: SkipRange) -> bool:
    """Whether ``value`` lies in the inclusive ``skip_range``."""
    low, high = skip_range
    return low <= value <= high


def outside_range(column: sa.ColumnElement[Any], skip_range: SkipRange) -> sa.ColumnElement[bool]:
    """``NOT (column BETWEEN low AND high)``: the keys a skip range leaves to count."""
    low, high = (sa.literal(v, sa.BigInteger) for v in skip_range)
    return sa.not_(column.between(low, high))


def _insert_row(operations: Operations, table: str, name: str, start: int) -> None:
    _check_table_name(operations, table, "sequences table")
    conn = migration_connection(operations)
    _require_table(conn, table, f"sequence {name!r}")
    if conn is not None:
        check_exact_names(conn, table, MigrationError)
        if read_next_value(conn, name, table=table) is not None:
            raise MigrationError(
                f"sequence {name!r} already exists in table {table!r}; nothing was changed"
            )
    t = sequences_table(sa.MetaData(), table)
    operations.execute(sa.insert(t).values(name=name, next_value=start))
    if conn is not None:  # what this process holds of a former row
        forget_row(conn, table, name)
        wrote_row(conn, name)  # its values are taken in the migration's transaction


def _delete_row(operations: Operations, table: str, name: str) -> None:
    _check_table_name(operations, table, "sequences table")
    conn = migration_connection(operations)
    if conn is not None:
        if not _has_table(conn, table) or read_next_value(conn, name, table=table) is None:
            raise MigrationError(
                f"sequence {name!r} does not exist in table {table!r}, so there is nothing to drop"
            )
        # where names compare case-insensitively, the DELETE would take another case's row
        check_exact_names(conn, table, MigrationError)
    t = sequences_table(sa.MetaData(), table)
    operations.execute(sa.delete(t).where(t.c.name == name))
    if conn is not None:
        forget_row(conn, table, name)
        wrote_row(conn, name)  # the migration's transaction holds the row's lock


def _check_start(start: object, what: str) -> int:
    if not isinstance(start, int) or isinstance(start, bool) or not 0 <= start < 2**63:
        raise MigrationError(f"{what} must be an int from 0 to 2**63 - 1, not {start!r}")
    return start


def _check_table(table: object, what: str, argument: str = "table") -> str:
    hint = f"it names the {what}"
    return check_name(table, argument, MigrationError, hint=hint)  # type: ignore[no-any-return]


# -- the sequences table and the worker-lease table ----------------------------------------


class _TableOp(SeqKeysOp):
    """Creates or drops one of the library's tables, called ``name``."""

    name: str
    #: what the table is, in messages
    what: ClassVar[str]
    #: what to do instead when the name is taken
    instead: ClassVar[str]

    def __post_init__(self) -> None:
        self.name = _check_table(self.name, self.what, "name")

    def schema_table(self) -> sa.Table:
        raise NotImplementedError


@dataclass(eq=False)
class _SequencesTableOp(_TableOp):
    name: str = DEFAULT_TABLE

    what = "sequences table"
    instead = "keep the sequences in another table: op.create_sequences_table('other_name')"

    @classmethod
    def run(cls, operations: Operations, name: str = DEFAULT_TABLE) -> None:
        """``op.create_sequences_table(name)`` and ``op.drop_sequences_table(name)``.

        :param name: the sequences table's name.
        """
        operations.invoke(cls(name))

    def schema_table(self) -> sa.Table:
        return sequences_table(sa.MetaData(), self.name)


class CreateSequencesTableOp(_SequencesTableOp, op_name="create_sequences_table"):
    """Create the sequences table ``name``: ``sequences(name, next_value)``.

    Example::

        op.create_sequences_table()            # or op.create_sequences_table("my_sequences")
    """


class DropSequencesTableOp(
    _SequencesTableOp, op_name="drop_sequences_table", reverses=CreateSequencesTableOp
):
    """Drop the sequences table ``name``, and with it every table sequence.

    Example::

        op.drop_sequences_table()
    """


@dataclass(eq=False)
class _WorkerLeaseTableOp(_TableOp):
    name: str = DEFAULT_WORKERS_TABLE

    what = "worker-lease table"
    instead = (
        "pass another name: op.create_worker_lease_table('other_name') and "
        "WorkerLease(..., table=...)"
    )

    @classmethod
    def run(cls, operations: Operations, name: str = DEFAULT_WORKERS_TABLE) -> None:
        """``op.create_worker_lease_table(name)`` and ``op.drop_worker_lease_table(name)``.

        :param name: the worker-lease table's name.
        """
        operations.invoke(cls(name))

    def schema_table(self) -> sa.Table:
        return workers_table(sa.MetaData(), self.name)


class CreateWorkerLeaseTableOp(_WorkerLeaseTableOp, op_name="create_worker_lease_table"):
    """Create the worker-lease table ``name`` for :class:`~sqlalchemy_seqkeys.WorkerLease`.

    Example::

        op.create_worker_lease_table()
    """


class DropWorkerLeaseTableOp(
    _WorkerLeaseTableOp, op_name="drop_worker_lease_table", reverses=CreateWorkerLeaseTableOp
):
    """Drop the worker-lease table ``name``.

    Example::

        op.drop_worker_lease_table()
    """


@implements(CreateSequencesTableOp, CreateWorkerLeaseTableOp)
def _create_table(operations: Operations, operation: _TableOp) -> None:
    _check_table_name(operations, operation.name, operation.what)
    conn = migration_connection(operations)
    if conn is not None:
        if _has_table(conn, operation.name):
            raise MigrationError(
                f"a table {operation.name!r} already exists; nothing was created. Drop it, "
                f"or {operation.instead}"
            )
        forget_exact_names(conn, operation.name)  # a sequences table asks again at first use
    operations.impl.create_table(operation.schema_table())


@implements(DropSequencesTableOp, DropWorkerLeaseTableOp)
def _drop_table(operations: Operations, operation: _TableOp) -> None:
    _check_table_name(operations, operation.name, operation.what)
    conn = migration_connection(operations)
    if conn is not None and not _has_table(conn, operation.name):
        raise MigrationError(f"there is no {operation.what} {operation.name!r} to drop")
    operations.impl.drop_table(operation.schema_table())


# -- table sequences --------------------------------------------------------------


@dataclass(eq=False)
class _TableSequenceOp(SeqKeysOp):
    name: str
    start: int = 1
    table: str = DEFAULT_TABLE

    always = ("start",)

    @classmethod
    def run(
        cls, operations: Operations, name: str, start: int = 1, table: str = DEFAULT_TABLE
    ) -> None:
        """``op.create_table_sequence(name, ...)`` and ``op.drop_table_sequence(name, ...)``.

        :param name: the sequence's name.
        :param start: the first value it hands out (a drop's is what a downgrade recreates).
        :param table: the sequences table that holds its row.
        """
        operations.invoke(cls(name, start, table))

    def __post_init__(self) -> None:
        self.name = check_sequence_name(self.name)
        self.start = _check_start(self.start, "start")
        self.table = _check_table(self.table, "sequences table")


class CreateTableSequenceOp(_TableSequenceOp, op_name="create_table_sequence"):
    """Add sequence ``name`` to the sequences table ``table``, handing out ``start`` first.

    Example::

        op.create_table_sequence("invoice_no", start=1000)
    """


class DropTableSequenceOp(
    _TableSequenceOp, op_name="drop_table_sequence", reverses=CreateTableSequenceOp
):
    """Delete sequence ``name``'s row; ``start`` is only what a downgrade recreates it with.

    Example::

        op.drop_table_sequence("invoice_no", start=1000)
    """


@implements(CreateTableSequenceOp)
def _create_table_sequence(operations: Operations, operation: CreateTableSequenceOp) -> None:
    _insert_row(operations, operation.table, operation.name, operation.start)


@implements(DropTableSequenceOp)
def _drop_table_sequence(operations: Operations, operation: DropTableSequenceOp) -> None:
    _delete_row(operations, operation.table, operation.name)


# -- native sequences, or a row where the engine has none ----------------------------------


class SequenceOp(SeqKeysOp):
    """Creates or drops a native sequence, or its sequences-table row where there is none."""

    name: str
    table: str
    #: the column default it is for; its ``sequence`` is the native one
    sequence: Any
    #: whether the sequence is a native one on a dialect
    native: ClassVar[Callable[[sa.Dialect], bool]]
    #: the field whose value the row's ``next_value`` starts at
    first_value: ClassVar[str]


def _check_names(operations: Operations, sequence: sa.Sequence) -> None:
    # e.g. PostgreSQL would cut a name past 63 bytes into another sequence's
    dialect = operations.get_context().dialect
    check_identifier(dialect, sequence.name, "sequence name", MigrationError)
    if sequence.schema is not None:
        check_identifier(dialect, sequence.schema, "schema", MigrationError)


def _has_sequence(conn: sa.Connection, sequence: sa.Sequence) -> bool:
    """Whether the sequence exists where the connection's statements go (a tenant's)."""
    return bool(sa.inspect(conn).has_sequence(sequence.name, sequence_schema(conn, sequence)))


def create_sequence(operations: Operations, operation: SequenceOp) -> None:
    """Implementation of every ``op.create_..._sequence`` with a native form."""
    if not type(operation).native(operations.get_context().dialect):
        first = getattr(operation, operation.first_value)
        _insert_row(operations, operation.table, operation.name, first)
        return
    sequence: sa.Sequence = operation.sequence.sequence
    _check_names(operations, sequence)
    dialect = operations.get_context().dialect
    check_sequence_start(dialect, sequence, MigrationError)
    conn = migration_connection(operations)
    if conn is not None and _has_sequence(conn, sequence):
        raise MigrationError(f"a sequence {operation.name!r} already exists; nothing was created")
    with create_refusals(sequence, dialect, MigrationError):
        operations.execute(CreateSequence(sequence))
    block_holders.forget(native_key(sequence))  # blocks this process holds of a former one


def drop_sequence(operations: Operations, operation: SequenceOp) -> None:
    """Implementation of every ``op.drop_..._sequence`` with a native form."""
    if not type(operation).native(operations.get_context().dialect):
        _delete_row(operations, operation.table, operation.name)
        return
    sequence: sa.Sequence = operation.sequence.sequence
    _check_names(operations, sequence)
    conn = migration_connection(operations)
    if conn is not None and not _has_sequence(conn, sequence):
        raise MigrationError(
            f"there is no sequence {operation.name!r}, so there is nothing to drop"
        )
    with drop_refusals(sequence, MigrationError):
        operations.execute(DropSequence(sequence))
    block_holders.forget(native_key(sequence))


@dataclass(eq=False)
class _BitReversedOp(SequenceOp):
    name: str
    start_with_counter: int = 1
    skip_range: SkipRange | None = None
    table: str = DEFAULT_TABLE
    schema: str | None = None
    sequence: BitReversedSequence = field(init=False, repr=False)

    always = ("start_with_counter",)
    keyword_only = ("schema",)
    native = has_sequences
    first_value = "start_with_counter"

    @classmethod
    def run(
        cls,
        operations: Operations,
        name: str,
        start_with_counter: int = 1,
        skip_range: SkipRange | None = None,
        table: str = DEFAULT_TABLE,
        *,
        schema: str | None = None,
    ) -> None:
        """``op.create_bit_reversed_sequence(name, ...)`` and ``op.drop_bit_reversed_sequence``.

        :param name: the sequence's name.
        :param start_with_counter: ``BitReversedSequence``'s ``start``: the counter of the
            first value.
        :param skip_range: ``(low, high)``: values never handed out (inclusive); None: none.
        :param table: the sequences table where the engine has no sequences.
        :param schema: the native sequence's schema; None: the default one.
        """
        operations.invoke(cls(name, start_with_counter, skip_range, table, schema))

    def __post_init__(self) -> None:
        # validates like the column default does, with the same messages
        self.sequence = BitReversedSequence(
            self.name,
            start_with_counter=self.start_with_counter,
            skip_range=self.skip_range,
            schema=self.schema,
            table=self.table,
        )
        self.skip_range = self.sequence.skip_range


class CreateBitReversedSequenceOp(_BitReversedOp, op_name="create_bit_reversed_sequence"):
    """Create what :func:`~sqlalchemy_seqkeys.bit_reversed_sequence` needs on this engine.

    A native sequence where the engine has sequences, else a sequences-table row.

    Example::

        op.create_bit_reversed_sequence("order_id", start_with_counter=1, skip_range=(1, 5000))
        op.create_bit_reversed_sequence("account_id", schema="billing")  # a native sequence's
    """


class DropBitReversedSequenceOp(
    _BitReversedOp, op_name="drop_bit_reversed_sequence", reverses=CreateBitReversedSequenceOp
):
    """Drop the bit-reversed sequence ``name`` (its arguments are what a downgrade recreates).

    Example::

        op.drop_bit_reversed_sequence("order_id")
    """


implements(CreateBitReversedSequenceOp)(create_sequence)
implements(DropBitReversedSequenceOp)(drop_sequence)


# -- exact names on MySQL / MariaDB ------------------------------------------------------


@dataclass(eq=False)
class _NameCollationOp(SeqKeysOp):
    table: str = DEFAULT_TABLE

    @classmethod
    def run(cls, operations: Operations, table: str = DEFAULT_TABLE) -> None:
        """``op.make_sequence_names_case_sensitive(table)`` and its ``_insensitive`` reverse.

        :param table: the sequences table whose ``name`` column changes.
        """
        operations.invoke(cls(table))

    def __post_init__(self) -> None:
        self.table = _check_table(self.table, "sequences table")


class MakeSequenceNamesCaseSensitiveOp(
    _NameCollationOp, op_name="make_sequence_names_case_sensitive"
):
    """Make a sequences table compare names exactly (MySQL/MariaDB; a no-op elsewhere).

    Sequences tables created by version 0.1 on MySQL or MariaDB took the
    database's collation, which ignores case: ``Invoice_A`` and ``invoice_a``
    shared one row. This alters the ``name`` column to ``CHARACTER SET utf8mb4
    COLLATE utf8mb4_bin``. Names that differ only in case cannot exist in such
    a table, so every row keeps its name and its value.

    Example::

        op.make_sequence_names_case_sensitive()   # or ("my_sequences")
    """


class MakeSequenceNamesCaseInsensitiveOp(
    _NameCollationOp,
    op_name="make_sequence_names_case_insensitive",
    reverses=MakeSequenceNamesCaseSensitiveOp,
):
    """Undo :class:`MakeSequenceNamesCaseSensitiveOp`: ``name`` takes the table's collation.

    Refused (nothing changed) while two names differ only in case.

    Example::

        op.make_sequence_names_case_insensitive()
    """


def _alter_name_column(operations: Operations, table: str, exact: bool) -> bool:
    """ALTER the name column on MySQL/MariaDB; False (nothing done) on other engines."""
    _check_table_name(operations, table, "sequences table")
    conn = migration_connection(operations)
    _require_table(conn, table, "changing how sequence names compare")
    if not facts(operations.get_context().dialect).names_ignore_case:
        return False
    if conn is not None:
        forget_exact_names(conn, table)  # asked again at the next use
    plain = sa.String(NAME_LENGTH)
    operations.alter_column(
        table,
        "name",
        type_=name_type() if exact else plain,
        existing_type=plain if exact else name_type(),
        existing_nullable=False,
        # Alembic's ALTER does not follow a schema_translate_map: told the tenant's schema
        schema=None if conn is None else _translated_schema(conn, None),
    )
    return True


@implements(MakeSequenceNamesCaseSensitiveOp)
def _make_case_sensitive(
    operations: Operations, operation: MakeSequenceNamesCaseSensitiveOp
) -> None:
    _alter_name_column(operations, operation.table, exact=True)


@implements(MakeSequenceNamesCaseInsensitiveOp)
def _make_case_insensitive(
    operations: Operations, operation: MakeSequenceNamesCaseInsensitiveOp
) -> None:
    try:
        _alter_name_column(operations, operation.table, exact=False)
    except sa.exc.IntegrityError as exc:  # MySQL's ALTER is atomic: nothing changed
        raise MigrationError(
            f"table {operation.table!r} holds sequence names that differ only in case, which "
            "a case-insensitive column cannot hold; nothing was changed. Drop or rename one "
            "of them first"
        ) from exc


# -- resync ------------------------------------------------------------------------------


@dataclass(eq=False)
class ResyncOp(SeqKeysOp):
    """Moves a sequence past ``MAX(column)`` of table ``table_name`` (no reverse)."""

    name: str
    table_name: str
    column: str
    schema: str | None = None

    positional = 3


@dataclass(eq=False)
class RowResyncOp(ResyncOp):
    """A resync of a sequence that is a row of the sequences table (its arguments, checked)."""

    @classmethod
    def run(
        cls,
        operations: Operations,
        name: str,
        table_name: str,
        column: str,
        *,
        schema: str | None = None,
        sequences_table: str = DEFAULT_TABLE,
    ) -> None:
        """``op.<resync>(name, table_name, column, ...)``.

        :param name: the table sequence to move.
        :param table_name: the table whose keys it moves past.
        :param column: that table's key column.
        :param schema: that table's schema; None: the default one.
        :param sequences_table: the sequences table that holds the sequence's row.
        """
        operations.invoke(cls(name, table_name, column, schema, sequences_table))

    sequences_table: str = DEFAULT_TABLE
    #: ``op.resync_table_sequence``'s UPDATE (building it checks the arguments)
    statement: sa.Update = field(init=False, repr=False)

    keyword_only: ClassVar[tuple[str, ...]] = ("schema", "sequences_table")

    def __post_init__(self) -> None:
        self.statement = resync_statement(  # validates the arguments
            self.name,
            self.table_name,
            self.column,
            schema=self.schema,
            sequences_table=self.sequences_table,
        )


@dataclass(eq=False)
class NativeResyncOp(ResyncOp):
    """A resync of a native sequence, or of its sequences-table row where the engine has none."""

    @classmethod
    def run(
        cls,
        operations: Operations,
        name: str,
        table_name: str,
        column: str,
        *,
        schema: str | None = None,
        sequence_schema: str | None = None,
        sequences_table: str = DEFAULT_TABLE,
    ) -> None:
        """``op.<resync>(name, table_name, column, ...)``.

        :param name: the sequence to move.
        :param table_name: the table whose keys it moves past.
        :param column: that table's key column.
        :param schema: that table's schema; None: the default one.
        :param sequence_schema: the native sequence's schema; None: the default one.
        :param sequences_table: the sequences table where the engine has no such sequence.
        """
        operations.invoke(cls(name, table_name, column, schema, sequence_schema, sequences_table))

    sequence_schema: str | None = None
    sequences_table: str = DEFAULT_TABLE
    #: the same where the sequence is a sequences-table row; validates the arguments
    as_row: ResyncTableSequenceOp = field(init=False, repr=False)

    keyword_only: ClassVar[tuple[str, ...]] = ("schema", "sequence_schema", "sequences_table")

    def __post_init__(self) -> None:
        source = (self.name, self.table_name, self.column)
        self.as_row = ResyncTableSequenceOp(*source, self.schema, self.sequences_table)
        check_name(self.sequence_schema, "sequence_schema", MigrationError, nullable=True)


@dataclass(eq=False)
class ResyncTableSequenceOp(RowResyncOp, op_name="resync_table_sequence"):
    """Move a table sequence past ``MAX(column)`` of a table, never backwards.

    For a migration that imports rows with their keys, and after creating a
    sequence for a table that has rows. See
    :func:`~sqlalchemy_seqkeys.resync_table_sequence`. Online it refuses
    (``MigrationError``, nothing changed) a missing table or column, and a
    ``MAX(column)`` of 2**63 - 1, past which no key is left; offline its UPDATE
    changes nothing there. It has no reverse: a sequence is never moved back.

    Example::

        op.resync_table_sequence("invoice_id", "invoices", "id")
    """


@implements(ResyncTableSequenceOp)
def _resync_table_sequence(operations: Operations, operation: ResyncTableSequenceOp) -> None:
    source = (operation.table_name, operation.column, operation.schema)
    check_source_names(operations.get_context().dialect, *source)
    table = operation.sequences_table
    _check_table_name(operations, table, "sequences table")
    conn = migration_connection(operations)
    _require_table(conn, table, f"resyncing sequence {operation.name!r}")
    if conn is not None:
        check_exact_names(conn, table, MigrationError)
        if read_next_value(conn, operation.name, table=table) is None:
            raise MigrationError(
                f"sequence {operation.name!r} does not exist in table {table!r}; create it "
                f"with op.create_table_sequence({operation.name!r}) first"
            )
        require_source(conn, operation.name, *source)
    operations.execute(operation.statement)
    if conn is not None:  # the migration's transaction holds the row's lock
        wrote_row(conn, operation.name)


# -- resync of the counter behind a bit-reversed key -------------------------------------

#: keys read at a time, in key order, by the bit-reversed resyncs
KEYS_PER_READ = 10_000


@dataclass(frozen=True)
class _CounterResync:
    """What a native sequence's resync statements are built from (a ``SequenceResync``):
    ``top`` is the largest counter the table's keys reverse to, read in Python."""

    dialect: sa.Dialect
    sequence: sa.Sequence
    name_value: str
    top: sa.Subquery


def largest_counter(conn: sa.Connection, name: str, operation: BitReversedResync) -> int | None:
    """The largest ``reverse_bits(key)`` over the table's keys (read by pages); None: no key.

    A bit-reversed key is not ordered by its counter (``reverse_bits(1)`` is 2**62), so
    ``MAX(column)`` says nothing: every key is read. Negative keys are no counter's value
    and are left out; so are keys inside the operation's ``skip_range``, which the
    sequence never hands out (legacy keys it was adopted over), as doctor's ``behind``
    check leaves them out. Refuses a missing table or column, a key that is no integer,
    and the counter 2**63 - 1, past which no counter is left.
    """
    source = (operation.table_name, operation.column, operation.schema)
    skip_range = operation.skip_range
    # the table and the column, an integer MAX (of the keys outside the skip range)
    require_source(conn, name, *source, skip_range=skip_range)
    table, column, schema = source
    data = sa.Table(table, sa.MetaData(), sa.Column(column), schema=schema)
    key_column = data.c[column]
    first = sa.select(key_column).order_by(key_column).limit(KEYS_PER_READ)
    if skip_range is not None:  # in SQL: those keys are not even read
        first = first.where(outside_range(key_column, skip_range))
    after: Any = sa.literal(-1, sa.BigInteger)  # negative keys are no counter's value
    largest: int | None = None
    while True:
        # by key, a page at a time: no server-side cursor (none on an autocommit
        # connection), and a key column is indexed
        keys = list(conn.execute(first.where(key_column > after)).scalars())
        for key in keys:
            try:
                value = check_integer_key(key, data, name)
            except InvalidSequenceError as exc:
                raise MigrationError(str(exc)) from None
            if value is None:
                continue
            if value > MAX_VALUE:  # (a NUMERIC column) this and every key after it are
                return _counter_left(largest, table, name)  # past every counter's value
            counter = reverse_bits(value)
            if largest is None or counter > largest:
                largest = counter
        if len(keys) < KEYS_PER_READ:
            break
        after = sa.literal(keys[-1], sa.BigInteger)
    return _counter_left(largest, table, name)


def _counter_left(largest: int | None, table: str, name: str) -> int | None:
    """``largest``, unless it is 2**63 - 1, past which no counter is left (refused)."""
    if largest is not None and largest >= MAX_VALUE:
        raise MigrationError(
            f"table {table!r} holds the key {reverse_bits(largest)}, whose counter is "
            f"{largest}, the BIGINT maximum: sequence {name!r} cannot move past it, and "
            "would hand out keys the table holds; nothing was changed"
        )
    return largest


def _refuse_offline(operation: ResyncOp) -> None:
    raise MigrationError(
        f"op.{operation.op_name}({operation.name!r}, {operation.table_name!r}, "
        f"{operation.column!r}, ...) reads every key of the table to find the largest "
        "counter (bit-reversed keys are not ordered by it), which `alembic upgrade --sql` "
        "cannot: run this migration online (alembic upgrade without --sql). Where the "
        "table is known to be empty, take the line out"
    )


def _resync_counter_row(
    operations: Operations, operation: BitReversedResync, sequences_table: str, create: str
) -> None:
    """Move the counter's sequences-table row past the table's largest counter, never back."""
    check_source_names(
        operations.get_context().dialect, operation.table_name, operation.column, operation.schema
    )
    _check_table_name(operations, sequences_table, "sequences table")
    conn = migration_connection(operations)
    if conn is None:
        _refuse_offline(operation)
        return
    _require_table(conn, sequences_table, f"resyncing sequence {operation.name!r}")
    check_exact_names(conn, sequences_table, MigrationError)
    if read_next_value(conn, operation.name, table=sequences_table) is None:
        raise MigrationError(
            f"sequence {operation.name!r} does not exist in table {sequences_table!r}; "
            f"create it with op.{create}({operation.name!r}) first"
        )
    largest = largest_counter(conn, operation.name, operation)
    if largest is None:
        return  # no key: nothing to move past
    t = table_clause(sequences_table)
    following = sa.literal(largest + 1, sa.BigInteger)
    operations.execute(
        sa.update(t)
        .where(t.c.name == sa.literal(operation.name, t.c.name.type), t.c.next_value < following)
        .values(next_value=following)
    )
    wrote_row(conn, operation.name)  # the migration's transaction holds the row's lock


@dataclass(eq=False)
class ResyncBitReversedTableSequenceOp(RowResyncOp, op_name="resync_bit_reversed_table_sequence"):
    """Move the table sequence behind ``BitReversed(TableSequence(name))`` past a table's keys.

    The counter behind a key is ``reverse_bits(key)``, not the key, and bit-reversed keys
    are not ordered by it: this reads every key of ``column`` (streamed) and moves the
    sequence's ``next_value`` past the largest ``reverse_bits(key)``, never backwards
    (negative keys are left out). Autogenerate writes it after ``op.create_table_sequence``
    of such a counter, for a table the database has (it may hold rows). Online it refuses
    (``MigrationError``, nothing changed) a missing sequence, table or column, a key that
    is no integer and the counter 2**63 - 1; offline (``--sql``) it cannot read the keys and
    is refused. It has no reverse.

    ``skip_range=(low, high)``, the ``skip_range`` of the ``BitReversed`` default, leaves
    the keys inside it out (in SQL): keys the default never hands out, such as the legacy
    keys 1..N a table held when it took a bit-reversed key, are no counter's. Checked as
    ``BitReversed`` checks it (``InvalidBitReversalError``).

    Example::

        op.create_table_sequence("account_counter", start=1)
        op.resync_bit_reversed_table_sequence("account_counter", "accounts", "id")
        op.resync_bit_reversed_table_sequence(
            "account_counter", "accounts", "id", skip_range=(1, 1000)
        )
    """

    skip_range: SkipRange | None = None

    keyword_only = ("schema", "sequences_table", "skip_range")

    @classmethod
    def run(
        cls,
        operations: Operations,
        name: str,
        table_name: str,
        column: str,
        *,
        schema: str | None = None,
        sequences_table: str = DEFAULT_TABLE,
        skip_range: SkipRange | None = None,
    ) -> None:
        """``op.resync_bit_reversed_table_sequence(name, table_name, column, ...)``.

        :param name: the table sequence to move.
        :param table_name: the table whose keys it moves past.
        :param column: that table's key column.
        :param schema: that table's schema; None: the default one.
        :param sequences_table: the sequences table that holds the sequence's row.
        :param skip_range: ``(low, high)``: the default's skip range, whose keys are left
            out (inclusive); None: every key counts.
        """
        operations.invoke(cls(name, table_name, column, schema, sequences_table, skip_range))

    def __post_init__(self) -> None:
        super().__post_init__()
        self.skip_range = check_skip_range(self.skip_range)


@implements(ResyncBitReversedTableSequenceOp)
def _resync_bit_reversed_table_sequence(
    operations: Operations, operation: ResyncBitReversedTableSequenceOp
) -> None:
    _resync_counter_row(operations, operation, operation.sequences_table, "create_table_sequence")


@dataclass(eq=False)
class ResyncBitReversedSequenceOp(NativeResyncOp, op_name="resync_bit_reversed_sequence"):
    """Move a ``BitReversedSequence``'s counter past the counters of a table's keys.

    As :class:`ResyncBitReversedTableSequenceOp`, for the counter
    ``op.create_bit_reversed_sequence`` creates: on PostgreSQL and MariaDB the
    native sequence, moved as ``op.resync_pooled_sequence`` moves one (PostgreSQL:
    ``ALTER SEQUENCE ... NO CYCLE``, whose lock keeps ``nextval`` out until the
    migration's transaction ends, and a ``setval`` that only moves forward; MariaDB:
    ``SETVAL``, which never moves back); on SQLite and MySQL its sequences-table row.
    On Spanner, where the sequence is bit-reversed by the server, a table with keys is
    refused with ``MigrationError`` naming the counter to move past by hand.
    Autogenerate writes it after ``op.create_bit_reversed_sequence`` for a table the
    database has. Offline (``--sql``) it is refused. It has no reverse.

    ``skip_range=(low, high)``, the sequence's ``skip_range``, leaves the keys inside it
    out, as for :class:`ResyncBitReversedTableSequenceOp`: a sequence adopted over legacy
    keys 1..N with ``skip_range=(1, N)`` stays where it is.

    Example::

        op.create_bit_reversed_sequence("customer_id", start_with_counter=1)
        op.resync_bit_reversed_sequence("customer_id", "customers", "id")
        op.create_bit_reversed_sequence("order_id", skip_range=(1, 5000))
        op.resync_bit_reversed_sequence("order_id", "orders", "id", skip_range=(1, 5000))
    """

    skip_range: SkipRange | None = None

    keyword_only = ("schema", "sequence_schema", "sequences_table", "skip_range")

    @classmethod
    def run(
        cls,
        operations: Operations,
        name: str,
        table_name: str,
        column: str,
        *,
        schema: str | None = None,
        sequence_schema: str | None = None,
        sequences_table: str = DEFAULT_TABLE,
        skip_range: SkipRange | None = None,
    ) -> None:
        """``op.resync_bit_reversed_sequence(name, table_name, column, ...)``.

        :param name: the sequence to move.
        :param table_name: the table whose keys it moves past.
        :param column: that table's key column.
        :param schema: that table's schema; None: the default one.
        :param sequence_schema: the native sequence's schema; None: the default one.
        :param sequences_table: the sequences table where the engine has no such sequence.
        :param skip_range: ``(low, high)``: the sequence's skip range, whose keys are left
            out (inclusive); None: every key counts.
        """
        source = (name, table_name, column, schema)
        operations.invoke(cls(*source, sequence_schema, sequences_table, skip_range))

    def __post_init__(self) -> None:
        super().__post_init__()
        self.skip_range = check_skip_range(self.skip_range)


#: the resyncs of a counter behind bit-reversed keys
BitReversedResync = ResyncBitReversedTableSequenceOp | ResyncBitReversedSequenceOp


def _moved_by_hand(
    dialect: sa.Dialect, operation: ResyncBitReversedSequenceOp, largest: int
) -> MigrationError:
    """The refusal where a native sequence is not moved here (Spanner, Oracle, SQL Server)."""
    name = identifier_text(dialect, operation.name, operation.sequence_schema)
    following = largest + 1
    if natively_bit_reversed(dialect):
        how = (
            f"check that SELECT GET_INTERNAL_SEQUENCE_STATE(SEQUENCE {name}) is NULL or at "
            f"most {largest}, then run ALTER SEQUENCE {name} SET OPTIONS (start_with_counter "
            f"= {following}), which restarts the counter there (backwards too: never run it "
            "on a sequence already past)"
        )
    else:
        how = f"ALTER SEQUENCE {name} RESTART WITH {following}"
    return MigrationError(
        f"op.{operation.op_name} does not move a native sequence on {dialect.name}: table "
        f"{operation.table_name!r} holds keys up to the counter {largest}, so sequence "
        f"{operation.name!r} must hand out counters from {following} on. Nothing was "
        f"changed here. With no writer taking values, {how}; then take this line out of "
        "the migration (and any line before it that ran: Spanner's DDL is not rolled back) "
        "and run it again"
    )


@implements(ResyncBitReversedSequenceOp)
def _resync_bit_reversed_sequence(
    operations: Operations, operation: ResyncBitReversedSequenceOp
) -> None:
    dialect = operations.get_context().dialect
    if not has_sequences(dialect):  # a sequences-table row
        _resync_counter_row(
            operations, operation, operation.sequences_table, "create_bit_reversed_sequence"
        )
        return
    sequence = sa.Sequence(operation.name, schema=operation.sequence_schema)
    _check_names(operations, sequence)
    check_source_names(dialect, operation.table_name, operation.column, operation.schema)
    conn = migration_connection(operations)
    if conn is None:
        _refuse_offline(operation)
        return
    # the schema the connection's schema_translate_map makes it (a tenant's)
    schema = sequence_schema(conn, sequence)
    if not _has_sequence(conn, sequence):
        raise MigrationError(
            f"there is no sequence {operation.name!r} to resync; create it with "
            f"op.create_bit_reversed_sequence({operation.name!r}) first"
        )
    largest = largest_counter(conn, operation.name, operation)
    if largest is None:
        return  # no key: nothing to move past
    build = facts(dialect).resync_statements
    if build is None or natively_bit_reversed(dialect):
        raise _moved_by_hand(dialect, operation, largest)
    counter = sa.cast(sa.literal(largest, sa.BigInteger), sa.BigInteger)
    top = sa.select(counter.label("m")).subquery("top")
    name_value = identifier_text(dialect, operation.name, schema)
    for statement in build(_CounterResync(dialect, sequence, name_value, top)):
        operations.execute(statement)


# -- worker-lease tables of older versions ---------------------------------------------


@dataclass(eq=False)
class _MarkColumnOp(SeqKeysOp):
    table: str = DEFAULT_WORKERS_TABLE

    positional = 0

    @classmethod
    def run(cls, operations: Operations, table: str = DEFAULT_WORKERS_TABLE) -> None:
        """``op.upgrade_worker_lease_table(table=...)`` and ``op.downgrade_worker_lease_table``.

        :param table: the worker-lease table that gains (or loses) ``high_water_ms``.
        """
        operations.invoke(cls(table))

    def __post_init__(self) -> None:
        self.table = _check_table(self.table, "worker-lease table")


class UpgradeWorkerLeaseTableOp(_MarkColumnOp, op_name="upgrade_worker_lease_table"):
    """Add the ``high_water_ms`` column to a worker-lease table made before it existed.

    :class:`~sqlalchemy_seqkeys.WorkerLease` records in that column the
    highest timestamp a holder may mint, and refuses a table without it
    (:class:`~sqlalchemy_seqkeys.LeaseTableOutdatedError`). The column is
    added ``NOT NULL`` with a server default of 0 (``DEFAULT (0)`` on
    Spanner): a row of an old table then holds no mark, as a row that was
    never leased. Stop the processes that hold leases of the old version
    first (they do not write the mark). A no-op where the column exists;
    autogenerate proposes it when the reflected table lacks the column.

    Example::

        op.upgrade_worker_lease_table()                  # seqkeys_workers
        op.upgrade_worker_lease_table(table="my_workers")
    """


class DowngradeWorkerLeaseTableOp(
    _MarkColumnOp, op_name="downgrade_worker_lease_table", reverses=UpgradeWorkerLeaseTableOp
):
    """Undo :class:`UpgradeWorkerLeaseTableOp`: drop ``high_water_ms`` (a no-op without it).

    Example::

        op.downgrade_worker_lease_table()
    """


def mark_column() -> sa.Column[int]:
    """The ``high_water_ms`` column as an upgrade adds it: NOT NULL, server default 0.

    The default is SQL, not a string: ``DEFAULT 0``, and ``DEFAULT (0)`` on
    Spanner, which takes a default only as a parenthesized expression of the
    column's type (sqlalchemy-spanner adds the parentheses).

    Example::

        >>> str(mark_column().server_default.arg)
        '0'
    """
    return sa.Column(MARK_COLUMN, sa.BigInteger(), nullable=False, server_default=sa.text("0"))


def _has_mark(operations: Operations, table: str) -> tuple[bool | None, str | None]:
    """Whether ``table`` has the mark column (None offline, where nothing can be asked),
    and the schema its ALTER names: the tenant's under a ``schema_translate_map``."""
    _check_table_name(operations, table, "worker-lease table")
    conn = migration_connection(operations)
    if conn is None:
        return None, None
    if not _has_table(conn, table):
        raise MigrationError(
            f"there is no worker-lease table {table!r}; op.create_worker_lease_table"
            f"({table!r}) creates a current one"
        )
    return MARK_COLUMN in _column_names(conn, table), _translated_schema(conn, None)


@implements(UpgradeWorkerLeaseTableOp)
def _upgrade_workers(operations: Operations, operation: UpgradeWorkerLeaseTableOp) -> None:
    has_mark, schema = _has_mark(operations, operation.table)
    if has_mark is True:
        return  # current already
    operations.add_column(operation.table, mark_column(), schema=schema)


@implements(DowngradeWorkerLeaseTableOp)
def _downgrade_workers(operations: Operations, operation: DowngradeWorkerLeaseTableOp) -> None:
    has_mark, schema = _has_mark(operations, operation.table)
    if has_mark is False:
        return  # nothing to drop
    operations.drop_column(operation.table, MARK_COLUMN, schema=schema)


# -- the shard ids of the rows a table held before its shard column ---------------------


#: rows read and updated at a time by ``op.fill_shard_column``
FILL_BATCH_SIZE = 1000


@dataclass(eq=False)
class FillShardColumnOp(SeqKeysOp, op_name="fill_shard_column"):
    """Give each row of a table the shard id an INSERT would have given it.

    Elsewhere than on Spanner the library fills a
    :func:`~sqlalchemy_seqkeys.spanner_shard_column` on INSERT, so the rows a
    table holds when the column is added have none: this computes each one's,
    as :class:`~sqlalchemy_seqkeys.ShardId` does, from the values the row
    stores, and updates the rows whose value differs (``batch_size`` rows at a
    time, by primary key). Autogenerate writes it between the column's
    ``op.add_column`` (nullable) and the ``alter_column`` that makes it
    ``NOT NULL``. On Spanner it does nothing: the server computes its
    generated column. It reads the rows, so ``--sql`` (offline) refuses it
    elsewhere, with ``MigrationError``; so does a missing table or column, a
    table without a primary key, and a row whose values the hash cannot take
    (``NULL``, a time stored without its zone), named in the message. On
    MySQL and MariaDB a ``TINYINT(1)`` column, what ``sa.Boolean`` creates
    there, is hashed as a boolean. Its reverse does nothing: the downgrade
    drops the column.

    Example::

        op.add_column("logs", spanner_shard_column("shard", "user_id", shards=16, nullable=True))
        op.fill_shard_column("logs", "shard", ["user_id"], shards=16)
        with op.batch_alter_table("logs") as batch_op:
            batch_op.alter_column("shard", existing_type=sa.BigInteger(), nullable=False)
    """

    table_name: str
    column_name: str
    columns: Sequence[str]
    shards: int
    non_negative: bool = False
    schema: str | None = None
    batch_size: int = FILL_BATCH_SIZE
    shard: ShardId = field(init=False, repr=False)
    #: autogenerate writes the ``alter_column`` to ``NOT NULL`` after it; not an argument
    then_not_null: bool = field(default=False, init=False, repr=False)
    #: the column's comment, which that ``alter_column`` keeps (MySQL's would drop it)
    comment: str | None = field(default=None, init=False, repr=False)

    positional = 3
    keyword_only = ("shards", "non_negative", "schema", "batch_size")

    @classmethod
    def run(
        cls,
        operations: Operations,
        table_name: str,
        column_name: str,
        columns: Sequence[str],
        *,
        shards: int,
        non_negative: bool = False,
        schema: str | None = None,
        batch_size: int = FILL_BATCH_SIZE,
    ) -> None:
        """``op.fill_shard_column(table_name, column_name, columns, shards=N, ...)``.

        :param table_name: the table whose rows get their shard ids.
        :param column_name: its shard column, added already (nullable, or holding wrong ids).
        :param columns: the names of the columns the shard column hashes, in order, as
            ``spanner_shard_column`` takes them: ``["user_id"]``.
        :param shards: the number of shards ``N``, as the column declares it.
        :param non_negative: as the column declares it.
        :param schema: the table's schema; None: the default one.
        :param batch_size: how many rows are read and updated at a time.
        """
        operations.invoke(
            cls(table_name, column_name, columns, shards, non_negative, schema, batch_size)
        )

    def __post_init__(self) -> None:
        self.table_name = _check_table(self.table_name, "table to fill", "table_name")
        self.column_name = check_name(self.column_name, "column_name", MigrationError)
        if not isinstance(self.columns, (list, tuple)):
            raise MigrationError(
                f"columns must be a list of column names, not {shown(self.columns)} "
                f"({type(self.columns).__name__}); write [{shown(self.columns)}] for one"
            )
        try:
            self.shard = ShardId(*self.columns, shards=self.shards, non_negative=self.non_negative)
        except InvalidShardError as exc:
            raise MigrationError(str(exc)) from None
        self.columns = list(self.shard.columns)
        self.schema = check_name(self.schema, "schema", MigrationError, nullable=True)
        self.batch_size = check_int(
            self.batch_size, "batch_size", MigrationError, min=1, max=1_000_000
        )

    def reverse(self) -> MigrateOperation:
        """Nothing: the downgrade drops the column (an empty block, rendered as nothing)."""
        return alembic_ops.ModifyTableOps(self.table_name, [], schema=self.schema)


@implements(FillShardColumnOp)
def _fill_shard_column(operations: Operations, operation: FillShardColumnOp) -> None:
    dialect = operations.get_context().dialect
    if facts(dialect).generates_shard_columns:
        return  # a generated column: the server computed every row's
    _check_table_name(operations, operation.table_name, "table")
    conn = migration_connection(operations)
    if conn is None:
        raise MigrationError(
            f"op.fill_shard_column({operation.table_name!r}, {operation.column_name!r}, ...) "
            "computes each row's shard id in Python, and so reads the rows, which "
            "`alembic upgrade --sql` cannot: run this migration online (alembic upgrade "
            "without --sql). Where the table is known to be empty, take the line out"
        )
    _ShardFill(conn, operation).run()


class _ShardFill:
    """One ``op.fill_shard_column`` on a live connection: the checks, then the batches."""

    def __init__(self, conn: sa.Connection, operation: FillShardColumnOp) -> None:
        self.conn = conn
        self.op = operation
        name, schema = operation.table_name, operation.schema
        self.where = f"{schema}.{name}" if schema else name
        if not _has_table(conn, name, schema):
            raise MigrationError(
                f"there is no table {self.where!r} whose shard column "
                f"{operation.column_name!r} to fill"
            )
        self.table = sa.Table(name, sa.MetaData(), autoload_with=conn, schema=schema)
        self.column = self._column()
        self.hashed = [self._hashed(c) for c in operation.columns]
        self.key = list(self.table.primary_key.columns)
        if not self.key:
            raise MigrationError(
                f"table {self.where!r} has no primary key, by which op.fill_shard_column "
                "updates each row; give it one first, or fill the column in a migration of "
                "your own (docs/strategies/shard-ids.md)"
            )
        if self.column in self.key:
            raise MigrationError(
                f"shard column {operation.column_name!r} is in the primary key of table "
                f"{self.where!r}, which op.fill_shard_column reads the rows by; create a new "
                "table with the shard column and copy the rows into it instead"
            )
        self.booleans = [_is_mysql_bool(c.type, conn.dialect) for c in self.hashed]

    def _column(self) -> sa.Column[Any]:
        name = self.op.column_name
        if name not in self.table.c:
            raise MigrationError(
                f"table {self.where!r} has no column {name!r} to fill; add it first with "
                f"op.add_column({self.op.table_name!r}, spanner_shard_column({name!r}, ..., "
                "nullable=True))"
            )
        if name in self.op.columns:
            raise MigrationError(
                f"shard column {name!r} is one of the columns it hashes; name the columns "
                "its spanner_shard_column hashes"
            )
        column: sa.Column[Any] = self.table.c[name]
        return column

    def _hashed(self, name: str) -> sa.Column[Any]:
        if name not in self.table.c:
            raise MigrationError(
                f"table {self.where!r} has no column {name!r} to hash; its columns: "
                f"{', '.join(c.name for c in self.table.c)}"
            )
        column: sa.Column[Any] = self.table.c[name]
        return column

    def run(self) -> None:
        """Read the rows ``batch_size`` at a time, in key order; update those that differ."""
        size = self.op.batch_size
        first = sa.select(*self.key, *self.hashed, self.column).order_by(*self.key).limit(size)
        update = (
            sa.update(self.table)
            .where(*(c == sa.bindparam(f"seqkeys_fill_key_{i}") for i, c in enumerate(self.key)))
            .values({self.column: sa.bindparam("seqkeys_fill_value")})
        )
        query = first
        while True:
            rows = self.conn.execute(query).all()
            changed = []
            for row in rows:
                key = tuple(row[: len(self.key)])
                value = self._shard_of(key, row[len(self.key) : -1])
                if row[-1] != value:
                    parameters = {f"seqkeys_fill_key_{i}": k for i, k in enumerate(key)}
                    changed.append({**parameters, "seqkeys_fill_value": value})
            if changed:
                self.conn.execute(update, changed)
            if len(rows) < size:
                return
            query = first.where(self._after(tuple(rows[-1][: len(self.key)])))

    def _after(self, key: tuple[Any, ...]) -> sa.ColumnElement[bool]:
        values = [sa.literal(v, c.type) for v, c in zip(key, self.key, strict=True)]
        if len(self.key) == 1:
            return self.key[0] > values[0]
        return sa.tuple_(*self.key) > sa.tuple_(*values)

    def _shard_of(self, key: tuple[Any, ...], stored: Sequence[Any]) -> int:
        """The shard id of a row's stored values, as :class:`ShardId` gives it on INSERT."""
        values = list(stored)
        try:
            for i, boolean in enumerate(self.booleans):
                if boolean:
                    values[i] = _stored_bool(values[i], self.hashed[i].name)
            return self.op.shard.of(*values)
        except NaiveDatetimeError:
            raise MigrationError(
                f"cannot fill shard column {self.op.column_name!r} of row {key!r} of table "
                f"{self.where!r}: a hashed column holds a time with no time zone, and the "
                "instant an INSERT hashes is not what it kept; compute these shard ids with "
                "ShardId.of in a migration of your own, giving each time its zone "
                "(docs/strategies/shard-ids.md)"
            ) from None
        except InvalidShardError as exc:
            raise MigrationError(
                f"cannot fill shard column {self.op.column_name!r} of row {key!r} of table "
                f"{self.where!r}: {exc}. Fix the row and run the migration again"
            ) from None


def _is_mysql_bool(type_: Any, dialect: sa.Dialect) -> bool:
    """A MySQL/MariaDB ``TINYINT(1)``: what ``sa.Boolean`` creates there (``BOOL``)."""
    return (
        dialect.name in ("mysql", "mariadb")
        and type(type_).__name__ == "TINYINT"
        and getattr(type_, "display_width", None) == 1
    )


def _stored_bool(value: object, column: str) -> object:
    if value is None or isinstance(value, bool):
        return value
    if value in (0, 1):
        return bool(value)
    raise InvalidShardError(
        f"column {column!r}, a TINYINT(1) (what sa.Boolean creates), holds {shown(value)}, "
        "which a Boolean never stores"
    )
