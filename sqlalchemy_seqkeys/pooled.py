"""Pooled native sequences: one ``nextval`` per block of keys, beside any other writer.

:class:`PooledSequence` is a column default over the engine's sequence, created ``INCREMENT
BY batch_size``: a ``nextval`` that returns ``v`` gives this process the keys ``v .. v +
batch_size - 1`` (Hibernate's pooled-lo), and any other writer's ``nextval`` starts a block
nobody else holds. Where the engine has no such sequence (SQLite, MySQL, Spanner) a
``TableSequence`` in ``batch`` mode stands in. The rule: every block comes from exactly one
``nextval`` and is handed out once (threads share it per pool; forked children drop it, via
``_fork``); :func:`resync_pooled_sequence` moves the sequence forward only.

User guide: docs/strategies/pooled.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine.default import DefaultExecutionContext

from sqlalchemy_seqkeys._dialect import (
    check_identifier,
    facts,
    identifier_text,
    incrementing_sequences,
    keyed_by_schema,
)
from sqlalchemy_seqkeys._positional import PositionalDefault
from sqlalchemy_seqkeys._rows import RowsAhead
from sqlalchemy_seqkeys._validate import check_int
from sqlalchemy_seqkeys._validate import check_name as check_name_arg
from sqlalchemy_seqkeys.dialects import read_sequence_catalog
from sqlalchemy_seqkeys.errors import (
    InvalidSequenceError,
    PooledSequenceMismatchError,
    SequenceExhaustedError,
    SequenceMovedBackwardsError,
    SequenceNotFoundError,
)
from sqlalchemy_seqkeys.sequences import _aio
from sqlalchemy_seqkeys.sequences._aio import begin, connect
from sqlalchemy_seqkeys.sequences._allocator import Block, Blocks, BlockStore, range_block
from sqlalchemy_seqkeys.sequences._contract import (
    NOT_GIVEN,
    NativeOrRowSequence,
    OwnSequence,
    Unset,
    deprecated_factory,
    resolve_alias,
)
from sqlalchemy_seqkeys.sequences._retry import sequence_error, statement_errors
from sqlalchemy_seqkeys.sequences.generators import MAX_BATCH_SIZE, TableSequence
from sqlalchemy_seqkeys.sequences.resync import (
    check_integer_key,
    check_resync_arguments,
    check_resync_bind,
    check_source_names,
    data_table,
    raise_if_source_missing,
    resync_table_sequence,
)
from sqlalchemy_seqkeys.sequences.table import (
    DEFAULT_TABLE,
    MAX_VALUE,
    Floors,
    block_holders,
    check_name,
    native_key,
    read_next_value,
    statement_map,
    with_schema_map,
)

__all__ = [
    "MAX_ALLOCATION_SIZE",
    "PooledSequence",
    "pooled_sequence",
    "read_sequence_catalog",
    "resync_pooled_sequence",
    "resync_pooled_sequence_async",
    "resync_pooled_statements",
]

#: The largest block, as for a TableSequence's batch_size: a larger one only
#: burns key space faster (a stopped process loses what it held).
MAX_ALLOCATION_SIZE = MAX_BATCH_SIZE


# -- what this process received: the floor a new block must start above ------------

#: The last key of the highest block this process received, per native
#: sequence: ``sequences.table.Floors`` (per database as ``database_key`` tells
#: them apart), keyed ``(schema as the connection translates it, name)``. So
#: ``engine.dispose()`` and a second engine on the same database keep it, and a
#: forked child keeps its parent's (a lower bound: safe). A sequence of that name
#: created or dropped through this library (any instance, an Alembic operation)
#: forgets it, on every database: ``block_holders`` tells a ``_ForgetFloors``.
_floors = Floors()
#: name -> the watcher ``block_holders`` holds for it, kept while the process runs
_watchers: dict[str, _ForgetFloors] = {}


class _ForgetFloors:
    """Told by ``block_holders`` that sequence ``name`` was created or dropped anew."""

    __slots__ = ("__weakref__", "name")

    def __init__(self, name: str) -> None:
        self.name = name

    def forget_blocks(self) -> None:
        _floors.forget_named(self.name)


def _floor_key(conn: sa.Connection, sequence: sa.Sequence) -> tuple[str | None, str]:
    """Sequence ``sequence`` where ``conn`` reaches it (its schema_translate_map applied),
    watched so that its creation or drop anew forgets its floor."""
    name = sequence.name
    if name not in _watchers:
        watcher = _ForgetFloors(name)
        if _watchers.setdefault(name, watcher) is watcher:
            block_holders.add(watcher, native_key(sequence))
    return (conn.schema_for_object(sequence), name)


# -- the blocks one process holds --------------------------------------------------


class _Blocks(Blocks):
    """The blocks of one pooled sequence on one database (pool) for one tenant."""

    __slots__ = ("checked",)

    def __init__(self) -> None:
        super().__init__()
        #: the catalog agreed with the declaration (asked once per pool)
        self.checked = False


def _new_blocks(bind: sa.Engine | sa.Connection, owner: object) -> _Blocks | None:
    return _Blocks() if incrementing_sequences(bind.dialect) else None


class PooledSequence(NativeOrRowSequence, PositionalDefault):
    """A pooled native sequence: one ``nextval`` per ``batch_size`` keys; a column default.

    Created as ``CREATE SEQUENCE name INCREMENT BY batch_size START WITH
    start`` on PostgreSQL, MariaDB (10.3+), Oracle and SQL Server; each
    ``nextval`` value ``v`` gives this process the keys ``v .. v +
    batch_size - 1``, and any other writer's ``nextval`` a block of its
    own. On SQLite, MySQL and Spanner it is a row of the ``table`` sequences
    table, handed out in blocks of ``batch_size`` (``fallback``, a
    :class:`~sqlalchemy_seqkeys.TableSequence` in ``batch`` mode). See
    :mod:`sqlalchemy_seqkeys.pooled`. It has the methods every sequence class
    has (docs/reference/sequences.md); ``sequence`` is the ``sqlalchemy.Sequence``
    behind it.

    Use it as a column default (with ``autoincrement=False``); with
    ``metadata=`` the sequence is created and dropped by ``create_all`` /
    ``drop_all`` (else call :meth:`create`, or ``op.create_pooled_sequence``
    in a migration).

    :param name: the sequence's name.
    :param batch_size: keys per ``nextval``, the sequence's ``INCREMENT BY``:
        1 to 2**31.
    :param start: the first key.
    :param schema: the native sequence's schema.
    :param table: the sequences table where the engine has no such sequence.
    :param metadata: create and drop it with this ``MetaData`` (:meth:`attach`).
    :param allocation_size: Hibernate's name of ``batch_size``, accepted as an
        alias (pass one of the two).

    Example::

        order_id = PooledSequence("order_id", batch_size=50, metadata=Base.metadata)

        class Order(Base):
            __tablename__ = "orders"
            id: Mapped[int] = mapped_column(BigInteger, primary_key=True, default=order_id,
                                            autoincrement=False)

        order_id.next_value(engine)        # outside the ORM
    """

    _info_key = "seqkeys_pooled"
    _error = InvalidSequenceError

    def __init__(
        self,
        name: str,
        batch_size: int = Unset(50),
        *,
        start: int = 1,
        schema: str | None = None,
        table: str = DEFAULT_TABLE,
        metadata: sa.MetaData | None = None,
        allocation_size: int | None = NOT_GIVEN,
    ) -> None:
        self.name = check_name(name)
        size = resolve_alias(
            batch_size, "batch_size", allocation_size, "allocation_size", InvalidSequenceError
        )
        self.batch_size = check_int(
            size,
            "batch_size" if allocation_size is NOT_GIVEN else "allocation_size",
            InvalidSequenceError,
            min=1,
            max=MAX_ALLOCATION_SIZE,
            hint="it is the sequence's INCREMENT BY and the keys one nextval covers",
        )
        # Every value lies in a BIGINT, on the sequences table too (whose
        # next_value stays at most 2**63 - 1 after the first block).
        self.start = check_int(
            start,
            "start",
            InvalidSequenceError,
            min=1,
            max=MAX_VALUE - self.batch_size,
            hint="the first block, start .. start + batch_size - 1, must fit in a BIGINT",
        )
        self._place(schema, table, metadata)
        self.fallback = self._new_fallback()
        self.table = self.fallback.table
        self.sequence = OwnSequence(
            name, start=self.start, increment=self.allocation_size, schema=schema
        )
        self._select_next = keyed_by_schema(sa.select(self.sequence.next_value()), self.sequence)
        #: per pool and tenant; None where the engine has no such sequence
        self._blocks = BlockStore(_new_blocks)
        self._hold_blocks()
        #: where an executemany keeps the keys its later rows take (on its context)
        self._rows: RowsAhead[int] = RowsAhead(f"pooled_{id(self):x}")
        if metadata is not None:
            self.attach(metadata)

    def __repr__(self) -> str:
        extra = f", start={self.start}" if self.start != 1 else ""
        return f"PooledSequence({self.name!r}, batch_size={self.batch_size}{extra})"

    @property
    def allocation_size(self) -> int:
        """Hibernate's name of :attr:`batch_size` (read only)."""
        return self.batch_size

    # -- public API -------------------------------------------------------------

    def __call__(self, context: DefaultExecutionContext) -> int:
        """The column default: one key for the row being inserted."""
        # An executemany takes the keys of all its rows at its first row, under
        # one lock (sqlalchemy_seqkeys._rows); its other rows only pop one.
        key = self._rows.pop(context)
        if key is not None:
            return key
        translate = statement_map(context)
        if translate is not False:  # a map given to this statement only
            return with_schema_map(context.connection, translate, lambda: self._key(context))
        return self._key(context)

    def _key(self, context: DefaultExecutionContext) -> int:
        conn = context.connection
        state = self._blocks.of(conn)
        if state is None:
            return self.fallback(context)
        first = self._rows.take(context, lambda rows: self._take_many(conn, state, rows))
        return self._take(conn, state) if first is None else first

    def next_value(self, bind: sa.Engine | sa.Connection) -> int:
        """Take one key outside the ORM (from the block held, a ``nextval`` when it is used up).

        :param bind: an Engine or a Connection.

        Example::

            order_id.next_value(engine)   # e.g. 101
        """
        # on a connection: a dialect learns what the server has when it connects
        with connect(bind, "next_value") as conn:
            state = self._blocks.of(conn)
            if state is None:
                return self.fallback.next_value(conn)
            return self._take(conn, state)

    def next_values(self, bind: sa.Engine | sa.Connection, n: int) -> list[int]:
        """Take ``n`` distinct keys outside the ORM (from the blocks, fetching as needed).

        In ascending order. Threads that run out of a block at the same moment
        each fetch one, and the block whose ``nextval`` answered late is handed
        out after the other: the keys of one call are sorted, but a call may
        return keys below those of an earlier call.

        :param bind: an Engine or a Connection.
        :param n: how many, 0 to 2**31.

        Example::

            order_id.next_values(engine, 3)   # e.g. [101, 102, 103]
        """
        check_int(n, "n", InvalidSequenceError, min=0, max=MAX_ALLOCATION_SIZE)
        with connect(bind, "next_values") as conn:
            state = self._blocks.of(conn)
            if state is None:
                return self.fallback.next_values(conn, n)
            keys = self._take_many(conn, state, n)
        keys.sort()  # in order already but where a late, lower block came between
        return keys

    # -- blocks -------------------------------------------------------------------

    def _take(self, conn: sa.Connection, state: _Blocks) -> int:
        """One key from ``state``'s blocks (no lock); a ``nextval`` on ``conn`` when used up."""
        value = state.take()
        if value is not None:
            return value
        return state.take_or_fetch(lambda: self._fetch(conn, state))

    def _fetch(self, conn: sa.Connection, state: _Blocks) -> Block:
        """A new block from one ``nextval`` on ``conn``, with no lock held meanwhile."""
        # Read before nextval: any block recorded by now (by any engine of this
        # process on this database) came from a nextval that returned before
        # this one was sent, so this one must be higher.
        key = _floor_key(conn, self.sequence)
        since = _floors.epoch
        floor = _floors.highest(conn.engine, key)
        if not state.checked:
            self._check_identifiers(conn.dialect)
            self._check_catalog(conn)
            state.checked = True
        first = self._nextval(conn)
        size = self.allocation_size
        if floor is not None and first <= floor and _floors.still(since):
            raise SequenceMovedBackwardsError(
                f"sequence {self.name!r} returned {first}, but this process already received "
                f"keys up to {floor} from it: it moved backwards (RESTART, setval, a restore). "
                "None of its keys was handed out. Move it past the keys in use: "
                f"resync_pooled_sequence(engine, {self.name!r}, TABLE, COLUMN) or "
                "op.resync_pooled_sequence(...) in a migration"
            )
        if first > MAX_VALUE - size + 1:
            raise SequenceExhaustedError(
                f"sequence {self.name!r} returned {first}; its block of {size} would pass the "
                f"BIGINT maximum {MAX_VALUE}. Nothing was handed out. Use a new sequence"
            )
        _floors.record(conn.engine, key, first + size - 1, since)
        return range_block(first, first + size)

    def _take_many(self, conn: sa.Connection, state: _Blocks, n: int) -> list[int]:
        """``n`` keys from ``state``'s blocks, in the order they hand them out."""
        return [self._take(conn, state) for _ in range(n)]

    def _nextval(self, conn: sa.Connection) -> int:
        try:
            value = conn.scalar(self._select_next)
        except statement_errors() as exc:
            # e.g. a lock timeout while a resync's ALTER SEQUENCE holds it: one wait
            what = f"taking a block of {self.allocation_size} from sequence {self.name!r}"
            raise sequence_error(exc, self.name, what) from exc
        if value is None:  # pragma: no cover - a sequence always answers
            raise SequenceNotFoundError(f"sequence {self.name!r} returned no value")
        return int(value)

    def _check_catalog(self, conn: sa.Connection) -> None:
        """Refuse a sequence whose increment is not batch_size, or that cycles."""
        read = facts(conn.dialect).read_sequence_catalog
        if read is None:  # an engine whose catalog this library does not know
            return
        found = read(conn, self.sequence)
        if found is None:
            raise SequenceNotFoundError(
                f"there is no sequence {self.name!r}; create it with "
                f"PooledSequence({self.name!r}, batch_size={self.batch_size}).create(engine) "
                "(or metadata=... and create_all), or in an Alembic migration with "
                f"op.create_pooled_sequence({self.name!r}, {self.allocation_size})"
            )
        increment, cycles = found
        sql_name = identifier_text(conn.dialect, self.name, self.schema)  # as the user types it
        if increment != self.allocation_size:
            raise PooledSequenceMismatchError(
                f"sequence {self.name!r} has INCREMENT BY {increment} in the database, but "
                f"PooledSequence({self.name!r}) declares batch_size={self.batch_size}: "
                f"a block of {self.allocation_size} keys per nextval would overlap the values "
                "other writers take. Nothing was handed out. Alter the sequence "
                f"(ALTER SEQUENCE {sql_name} INCREMENT BY {self.allocation_size}) or declare "
                f"batch_size={increment}"
            )
        if cycles:
            raise PooledSequenceMismatchError(
                f"sequence {self.name!r} cycles: after its MAXVALUE it would hand out keys "
                "again. Nothing was handed out. Alter it: "
                f"ALTER SEQUENCE {sql_name} NO CYCLE"
            )
        read_cache = facts(conn.dialect).read_session_cache
        if read_cache is not None:
            cache = read_cache(conn, self.sequence)
            if cache is not None and cache > 1:
                raise PooledSequenceMismatchError(
                    f"sequence {self.name!r} has CACHE {cache} in the database: each session "
                    f"takes {cache} blocks at once and hands them out after other sessions "
                    "took higher ones, so blocks come back lower than blocks already received "
                    "and a resync cannot move the ones sessions hold. Nothing was handed out. "
                    f"Alter it: ALTER SEQUENCE {sql_name} CACHE 1, then restart the "
                    "application (its sessions keep the values they cached until they end)"
                )

    def _new_fallback(self) -> TableSequence:
        # its sequences-table row, taken in blocks committed on their own (a block
        # handed out across transactions must not come back with a rollback)
        return TableSequence(
            self.name, mode="batch", batch_size=self.batch_size, start=self.start, table=self.table
        )

    def _forget_all(self) -> None:
        self._blocks.forget()
        self.fallback = self._new_fallback()  # its blocks too

    def _native(self, dialect: sa.Dialect) -> bool:
        return incrementing_sequences(dialect)

    def _row(self) -> TableSequence:
        return self.fallback


pooled_sequence = deprecated_factory(
    PooledSequence,
    "pooled_sequence",
    ("name", "allocation_size"),
    {"allocation_size": "batch_size"},
    """Deprecated since 0.3 (goes in 0.4): use :class:`PooledSequence`, which takes the same.

    ``pooled_sequence(name, 50, ...)`` is ``PooledSequence(name, batch_size=50, ...)``;
    the class takes ``allocation_size=`` as an alias of ``batch_size=``.

    Example::

        order_id = PooledSequence("order_id", batch_size=50)   # not pooled_sequence("order_id", 50)
    """,
)


# -- resync ------------------------------------------------------------------------


def _relation(name: str, schema: str | None, *columns: str) -> sa.Table:
    # a Table, not sa.table(): only a Table follows a schema_translate_map
    return sa.Table(name, sa.MetaData(), *(sa.Column(c) for c in columns), schema=schema)


def _highest(table: str | sa.Table, column: str, schema: str | None) -> sa.Subquery:
    data_table(table, column, schema)  # checks the names
    if not isinstance(table, sa.Table):
        table = _relation(table, schema, column)
    return sa.select(sa.func.max(table.c[column]).label("m")).subquery("top")


@dataclass(frozen=True)
class _Resync:
    """What a resync's statements are built from: a :class:`.dialects.SequenceResync`."""

    dialect: sa.Dialect
    #: compiled as an identifier: the executing connection's schema_translate_map applies
    sequence: sa.Sequence
    #: the sequence's quoted name, its schema translated, as a value for the server to parse
    name_value: str
    top: sa.Subquery  # SELECT MAX(column) AS m


def resync_pooled_statements(
    dialect: sa.Dialect,
    name: str,
    table: str | sa.Table,
    column: str,
    *,
    schema: str | None = None,
    sequence_schema: str | None = None,
    schema_translate_map: dict[str | None, str | None] | None = None,
) -> list[sa.Executable]:
    """The statements that move native sequence ``name`` to ``MAX(table.column) + 1``.

    Never backwards: a sequence already past it is left as it is. PostgreSQL:
    ``ALTER SEQUENCE name NO CYCLE`` (whose lock keeps every ``nextval`` out
    until the transaction ends) and a ``setval`` that moves it only forward;
    MariaDB: the new value into a session variable, then ``SETVAL``, which
    never moves back. Run them in order, in one transaction; the last one
    returns the value set, or NULL (no row on PostgreSQL) when nothing moved.
    Raises :class:`~sqlalchemy_seqkeys.InvalidSequenceError` on other engines,
    and for a name the engine cannot hold (PostgreSQL: past 63 bytes).

    Each name is an identifier quoted by the compiler where it is SQL text,
    and a bound value where a function takes a name (``setval``'s regclass,
    MariaDB's dynamic ``SETVAL``): ``q%x`` and ``q%%x`` stay two sequences.
    ``schema_translate_map`` is the map of the connection that will run them:
    identifiers follow that connection's map, as in any statement; the
    sequence's name as a value is translated here.

    :param dialect: the dialect the statements are for (PostgreSQL or MariaDB).
    :param name: the native sequence's name.
    :param table: the table that holds the keys: its name (with ``schema``) or a ``Table``.
    :param column: its integer key column.
    :param schema: the table's schema, for a table given by name.
    :param sequence_schema: the sequence's schema.
    :param schema_translate_map: the map of the connection that will run them.

    Example::

        >>> from sqlalchemy.dialects import postgresql
        >>> pg = postgresql.dialect()
        >>> lock, move = resync_pooled_statements(pg, "order_id", "orders", "id")
        >>> print(lock.compile(dialect=pg))
        ALTER SEQUENCE order_id NO CYCLE
    """
    check_name(name)
    top = _highest(table, column, schema)
    check_source_names(dialect, table, column, schema)
    build = facts(dialect).resync_statements
    if build is None or not incrementing_sequences(dialect):
        raise InvalidSequenceError(
            f"resyncing a native pooled sequence is done on PostgreSQL and MariaDB, not "
            f"{dialect.name}; there, move it with ALTER SEQUENCE "
            f"{identifier_text(dialect, name)} RESTART WITH <MAX(column) + 1> while no writer "
            "takes values"
        )
    check_identifier(dialect, name, "sequence name", InvalidSequenceError)
    check_name_arg(sequence_schema, "sequence_schema", InvalidSequenceError, nullable=True)
    if sequence_schema is not None:
        check_identifier(dialect, sequence_schema, "sequence_schema", InvalidSequenceError)
    value_schema = sequence_schema
    if schema_translate_map and sequence_schema in schema_translate_map:
        value_schema = schema_translate_map[sequence_schema]
        what = f"schema_translate_map[{sequence_schema!r}]"
        check_name_arg(value_schema, what, InvalidSequenceError, nullable=True)
        if value_schema is not None:
            check_identifier(dialect, value_schema, what, InvalidSequenceError)
    sequence = sa.Sequence(name, schema=sequence_schema)
    return build(_Resync(dialect, sequence, identifier_text(dialect, name, value_schema), top))


def resync_pooled_sequence(
    bind: sa.Engine | sa.Connection,
    name: str,
    table: str | sa.Table,
    column: str,
    *,
    schema: str | None = None,
    sequence_schema: str | None = None,
    sequences_table: str = DEFAULT_TABLE,
) -> int | None:
    """Move pooled sequence ``name`` to ``MAX(column) + 1`` of ``table``; return that value.

    After rows were imported with their keys. Never backwards: a sequence
    already past the table's keys, or an empty table, is left as it is, and
    None is returned (MariaDB returns the value also when the sequence already
    stood exactly there). Blocks that running processes hold stay theirs.
    PostgreSQL: ``setval`` under the lock of ``ALTER SEQUENCE ... NO CYCLE``
    (which needs the sequence's owner, and holds every ``nextval`` back until
    the transaction ends); MariaDB: ``SETVAL``; the sequences table elsewhere
    (:func:`~sqlalchemy_seqkeys.resync_table_sequence`). ``schema`` is the
    table's, ``sequence_schema`` the sequence's. With an Engine the change is
    committed here; with a Connection it joins its transaction (on PostgreSQL
    give it one: in AUTOCOMMIT the lock ends with its statement). Raises
    :class:`~sqlalchemy_seqkeys.SequenceNotFoundError` without the sequence,
    :class:`~sqlalchemy_seqkeys.SequenceExhaustedError` when the column holds
    2**63 - 1 or a key at or past the sequence's ``MAXVALUE`` (nothing changed),
    :class:`~sqlalchemy_seqkeys.InvalidSequenceError` when the
    column is not of an integer type (or, untyped, its maximum is not an integer).

    :param bind: an Engine (a transaction of its own, committed) or a
        Connection (joins its transaction).
    :param name: the pooled sequence's name.
    :param table: the table that holds the keys: its name (with ``schema``) or a ``Table``.
    :param column: its integer key column.
    :param schema: the table's schema, for a table given by name.
    :param sequence_schema: the native sequence's schema.
    :param sequences_table: the sequences table where the engine has no such sequence.

    Example::

        >>> import sqlalchemy as sa
        >>> from sqlalchemy_seqkeys import PooledSequence, resync_pooled_sequence
        >>> engine = sa.create_engine("sqlite://")
        >>> metadata = sa.MetaData()
        >>> orders = sa.Table("orders", metadata, sa.Column("id", sa.BigInteger, primary_key=True))
        >>> order_id = PooledSequence("order_id", batch_size=50, metadata=metadata)
        >>> metadata.create_all(engine)
        >>> with engine.begin() as conn:   # an import, keys included
        ...     _ = conn.execute(orders.insert(), [{"id": 1}, {"id": 4000}])
        >>> resync_pooled_sequence(engine, "order_id", "orders", "id")
        4001
        >>> resync_pooled_sequence(engine, "order_id", "orders", "id") is None   # already past
        True
        >>> order_id.next_value(engine)
        4001
    """
    check_resync_arguments(name, table, column, schema, sequences_table)  # before any I/O
    check_name_arg(sequence_schema, "sequence_schema", InvalidSequenceError, nullable=True)
    check_resync_bind(bind, "resync_pooled_sequence", table, column, schema)
    with begin(bind, "resync_pooled_sequence") as conn:
        if incrementing_sequences(conn.dialect):  # known once connected (MariaDB)
            check_identifier(conn.dialect, name, "sequence name", InvalidSequenceError)
            if sequence_schema is not None:
                check_identifier(
                    conn.dialect, sequence_schema, "sequence_schema", InvalidSequenceError
                )
        return _resync(conn, name, table, column, schema, sequence_schema, sequences_table)


def _resync(
    conn: sa.Connection,
    name: str,
    table: str | sa.Table,
    column: str,
    schema: str | None,
    sequence_schema: str | None,
    sequences_table: str,
) -> int | None:
    if not incrementing_sequences(conn.dialect):
        before = read_next_value(conn, name, table=sequences_table)
        after = resync_table_sequence(
            conn, name, table, column, schema=schema, sequences_table=sequences_table
        )
        return None if after == before else after
    sequence = sa.Sequence(name, schema=sequence_schema)
    read = facts(conn.dialect).read_sequence_catalog
    if read is not None and read(conn, sequence) is None:
        raise SequenceNotFoundError(
            f"there is no sequence {name!r} to resync; create it first, with "
            f"PooledSequence({name!r}, batch_size=BATCH_SIZE).create(engine) or "
            f"op.create_pooled_sequence({name!r}, BATCH_SIZE)"
        )
    keys = data_table(table, column, schema)
    try:
        # the keys read first: a text column or a real 2.5 never moves the sequence
        check_integer_key(conn.execute(sa.select(sa.func.max(keys.c[column]))).scalar(), keys, name)
    except (sa.exc.ProgrammingError, sa.exc.OperationalError) as exc:
        raise_if_source_missing(conn, sa.select(keys), name, exc)  # InvalidSequenceError
        raise
    translate = conn.get_execution_options().get("schema_translate_map")
    *first, move = resync_pooled_statements(
        conn.dialect,
        name,
        table,
        column,
        schema=schema,
        sequence_schema=sequence_schema,
        schema_translate_map=translate,
    )
    try:
        for statement in first:
            conn.execute(statement)
        value = conn.execute(move).scalar()
    except sa.exc.DataError as exc:  # past the sequence's MAXVALUE (setval, or MariaDB's SIGNAL)
        raise SequenceExhaustedError(
            f"the table's keys are past the MAXVALUE of sequence {name!r}: it cannot move "
            f"past them, and nothing was changed. Raise it (ALTER SEQUENCE "
            f"{identifier_text(conn.dialect, name, sequence_schema)} NO MAXVALUE), then "
            "resync again"
        ) from exc
    except (sa.exc.ProgrammingError, sa.exc.OperationalError) as exc:
        raise_if_source_missing(conn, sa.select(keys), name, exc)  # InvalidSequenceError
        raise
    if value is not None:
        return int(value)
    highest = conn.execute(sa.select(_highest(table, column, schema).c.m)).scalar()
    highest = check_integer_key(highest, keys, name)
    if highest is not None and highest >= MAX_VALUE:
        raise SequenceExhaustedError(
            f"the largest key in the table is {highest}, the BIGINT maximum: sequence "
            f"{name!r} cannot move past it; nothing was changed"
        )
    return None


resync_pooled_sequence_async = _aio.awaitable(
    resync_pooled_sequence,
    'await resync_pooled_sequence_async(async_engine, "order_id", "orders", "id")',
)
"""Awaitable :func:`resync_pooled_sequence`: an AsyncEngine commits, an AsyncConnection joins.

The same arguments after the bind. Example::

    await resync_pooled_sequence_async(async_engine, "order_id", "orders", "id")
"""
