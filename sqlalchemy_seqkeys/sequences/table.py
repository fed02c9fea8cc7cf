"""The ``sequences(name, next_value)`` table and one atomic allocation per dialect.

Every table sequence is a row: ``name`` (up to 64 characters, the primary key)
and ``next_value``, the next value it will hand out. Allocating a block of
``n`` values moves ``next_value`` up by ``n`` in one statement and one round
trip, so the row is locked only for as long as that statement's transaction:

=====================  ==================================================================
PostgreSQL, SQLite     ``UPDATE sequences SET next_value = next_value + :n ... RETURNING``
Spanner                ``UPDATE sequences SET next_value = next_value + @n ... THEN RETURN``
MySQL, MariaDB         ``UPDATE sequences SET next_value = LAST_INSERT_ID(next_value + %s)``
                       (the new value comes back in the OK packet, no second read)
=====================  ==================================================================

Every statement also requires ``next_value <= 2**63 - 1 - n``, so a block that
would pass the BIGINT maximum allocates nothing and raises
:class:`~sqlalchemy_seqkeys.SequenceExhaustedError`. Sequence names travel as
bound parameters only.

Example::

    >>> import sqlalchemy as sa
    >>> from sqlalchemy_seqkeys import sequences_table, create_table_sequence
    >>> from sqlalchemy_seqkeys.sequences.table import allocate
    >>> engine = sa.create_engine("sqlite://")
    >>> metadata = sa.MetaData()
    >>> table = sequences_table(metadata)
    >>> metadata.create_all(engine)
    >>> create_table_sequence(engine, "invoice_id", start=1000)
    True
    >>> with engine.begin() as conn:
    ...     allocate(conn, "invoice_id", 10)   # values 1000 .. 1009
    1000
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any, NoReturn

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from sqlalchemy_seqkeys._dialect import dialect_key
from sqlalchemy_seqkeys.errors import (
    InvalidSequenceError,
    SequenceAllocationError,
    SequenceExhaustedError,
    SequenceExistsError,
    SequenceNotFoundError,
    SequencesTableNotFoundError,
)

__all__ = [
    "MAX_VALUE",
    "NAME_LENGTH",
    "allocate",
    "create_table_sequence",
    "drop_table_sequence",
    "read_next_value",
    "sequences_table",
]

#: BIGINT's maximum. ``next_value`` never passes it, so the largest value a
#: sequence hands out is ``MAX_VALUE - 1``.
MAX_VALUE = 2**63 - 1
#: The longest sequence name the table holds.
NAME_LENGTH = 64
DEFAULT_TABLE = "sequences"


def check_name(name: object) -> str:
    """Return ``name`` if it can name a sequence, else raise InvalidSequenceError."""
    if not isinstance(name, str) or not name:
        raise InvalidSequenceError(f"a sequence name must be a non-empty string, not {name!r}")
    if len(name) > NAME_LENGTH:
        raise InvalidSequenceError(
            f"sequence name {name[:20]!r}... is {len(name)} characters; the sequences "
            f"table holds names of at most {NAME_LENGTH}"
        )
    return name


def sequences_table(metadata: sa.MetaData, name: str = DEFAULT_TABLE) -> sa.Table:
    """Declare the sequences table on ``metadata`` (or return the one already there).

    ``name VARCHAR(64)`` primary key, ``next_value BIGINT NOT NULL``; on Spanner
    ``STRING(64)`` and ``INT64``, as in Spanner's own sequence guide.

    Example::

        metadata = sa.MetaData()
        sequences_table(metadata)
        metadata.create_all(engine)
    """
    existing = metadata.tables.get(name)
    if existing is not None:
        if {c.name for c in existing.columns} != {"name", "next_value"}:
            raise InvalidSequenceError(
                f"metadata already has a table {name!r} that is not a sequences table "
                "(columns name, next_value); pass another name"
            )
        return existing
    return sa.Table(
        name,
        metadata,
        sa.Column("name", sa.String(NAME_LENGTH), primary_key=True),
        sa.Column("next_value", sa.BigInteger, nullable=False, autoincrement=False),
        info={"seqkeys": "sequences"},
    )


@lru_cache(maxsize=64)
def _clause(table: str) -> sa.Table:
    # A Table of its own MetaData (not a lightweight table clause): some
    # dialects' compilers read Column-only attributes for RETURNING.
    return sequences_table(sa.MetaData(), table)


def _bump(t: sa.Table) -> sa.Update:
    return sa.update(t).where(
        t.c.name == sa.bindparam("seq_name"),
        t.c.next_value <= sa.bindparam("ceiling", type_=sa.BigInteger),
    )


@lru_cache(maxsize=64)
def _returning_statement(table: str) -> sa.Update:
    t = _clause(table)
    return (
        _bump(t)
        .values(next_value=t.c.next_value + sa.bindparam("n", type_=sa.BigInteger))
        .returning(t.c.next_value)
    )


@lru_cache(maxsize=64)
def _last_insert_id_statement(table: str) -> sa.Update:
    t = _clause(table)
    return _bump(t).values(
        next_value=sa.func.last_insert_id(t.c.next_value + sa.bindparam("n", type_=sa.BigInteger))
    )


@lru_cache(maxsize=64)
def _read_statement(table: str) -> sa.Select[Any]:
    t = _clause(table)
    return sa.select(t.c.next_value).where(t.c.name == sa.bindparam("seq_name"))


_Allocator = Callable[[sa.Connection, str, dict[str, object]], "int | None"]


def _by_returning(conn: sa.Connection, table: str, params: dict[str, object]) -> int | None:
    row = conn.execute(_returning_statement(table), params).first()
    return None if row is None else int(row[0])


def _by_last_insert_id(conn: sa.Connection, table: str, params: dict[str, object]) -> int | None:
    result = conn.execute(_last_insert_id_statement(table), params)
    if result.rowcount == 0:
        return None
    new_next = result.lastrowid
    if new_next is None:
        # Drivers that report lastrowid for INSERT only (MariaDB Connector/Python):
        # LAST_INSERT_ID() is per session, so this reads our own UPDATE's value.
        new_next = conn.scalar(sa.text("SELECT LAST_INSERT_ID()"))
    return int(new_next)


_CAS_ATTEMPTS = 100


def _by_compare_and_swap(conn: sa.Connection, table: str, params: dict[str, object]) -> int | None:
    # Engines without UPDATE ... RETURNING (SQLite before 3.35, some third-party
    # dialects): read, then move next_value only if it is still what was read.
    # Correct in autocommit too, where no lock would outlive the UPDATE.
    n, ceiling = params["n"], params["ceiling"]
    assert isinstance(n, int)
    assert isinstance(ceiling, int)
    for _ in range(_CAS_ATTEMPTS):
        current = conn.execute(_read_statement(table), params).scalar()
        if current is None or int(current) > ceiling:
            return None
        swapped = conn.execute(_cas_statement(table), {**params, "expected": int(current)}).rowcount
        if swapped == 1:
            return int(current) + n
    raise SequenceAllocationError(
        f"sequence {params['seq_name']!r} kept changing under {_CAS_ATTEMPTS} attempts "
        "to allocate from it; the engine has no UPDATE ... RETURNING and is under heavy "
        "contention: use a batch mode"
    )


@lru_cache(maxsize=64)
def _cas_statement(table: str) -> sa.Update:
    t = _clause(table)
    return (
        sa.update(t)
        .where(
            t.c.name == sa.bindparam("seq_name"),
            t.c.next_value == sa.bindparam("expected", type_=sa.BigInteger),
        )
        .values(next_value=t.c.next_value + sa.bindparam("n", type_=sa.BigInteger))
    )


_ALLOCATORS: dict[str, _Allocator] = {
    "mysql": _by_last_insert_id,
    "mariadb": _by_last_insert_id,
}


def read_next_value(conn: sa.Connection, name: str, *, table: str = DEFAULT_TABLE) -> int | None:
    """The sequence's ``next_value`` as stored, or None if it has no row.

    Example::

        with engine.connect() as conn:
            read_next_value(conn, "invoice_id")
    """
    value = conn.execute(_read_statement(table), {"seq_name": name}).scalar()
    return None if value is None else int(value)


def allocate(conn: sa.Connection, name: str, n: int = 1, *, table: str = DEFAULT_TABLE) -> int:
    """Take ``n`` values on ``conn``'s transaction; return the first (values first .. first+n-1).

    One statement, one round trip where the engine allows it. Commit (or roll
    back) is the caller's: rolled back, the values return to the sequence.
    Raises :class:`~sqlalchemy_seqkeys.SequenceNotFoundError` when the row is
    missing and :class:`~sqlalchemy_seqkeys.SequenceExhaustedError` when the
    block would pass 2**63 - 1; neither allocates anything.

    Example::

        with engine.begin() as conn:
            first = allocate(conn, "invoice_id", 200)
    """
    if n < 1:
        raise InvalidSequenceError(f"cannot allocate {n} values; ask for at least 1")
    params: dict[str, object] = {"seq_name": name, "n": n, "ceiling": MAX_VALUE - n}
    if conn.dialect.update_returning:
        allocator = _ALLOCATORS.get(dialect_key(conn.dialect), _by_returning)
    else:
        allocator = _ALLOCATORS.get(dialect_key(conn.dialect), _by_compare_and_swap)
    try:
        new_next = allocator(conn, table, params)
    except (sa.exc.ProgrammingError, sa.exc.OperationalError) as exc:
        _raise_if_table_missing(conn, table, exc)
        raise
    if new_next is None:
        _raise_missing_or_exhausted(conn, name, n, table)
    return new_next - n


def _raise_missing_or_exhausted(conn: sa.Connection, name: str, n: int, table: str) -> NoReturn:
    current = read_next_value(conn, name, table=table)
    if current is None:
        raise SequenceNotFoundError(
            f"sequence {name!r} has no row in table {table!r}; create it with "
            f"create_table_sequence(engine, {name!r}) (or TableSequence.create(engine)), "
            f"or in an Alembic migration with op.create_table_sequence({name!r})"
        )
    raise SequenceExhaustedError(
        f"sequence {name!r} is at {current}; a block of {n} would pass the BIGINT "
        f"maximum {MAX_VALUE}; nothing was allocated. Use a smaller batch or a new sequence"
    )


#: what the engines say when a table does not exist (PostgreSQL 42P01, MySQL
#: 1146, SQLite, Spanner): only then is the sequences table worth looking for
_NO_TABLE_HINTS = ("does not exist", "doesn't exist", "no such table", "not found", "42p01")


def _raise_if_table_missing(conn: sa.Connection, table: str, exc: Exception) -> None:
    # A ProgrammingError is a statement the server refused: always worth a look
    # (Spanner's says nothing more). Among OperationalErrors, which include
    # deadlocks and lost connections, only those that name a missing table.
    if not isinstance(exc, sa.exc.ProgrammingError) and not any(
        hint in str(exc).lower() for hint in _NO_TABLE_HINTS
    ):
        return
    # Ask on a fresh connection: the failed statement may have aborted this
    # connection's transaction (PostgreSQL).
    try:
        with conn.engine.connect() as probe:
            exists = sa.inspect(probe).has_table(table)
    except Exception:  # the probe is advisory; the original error is what matters
        return
    if not exists:
        raise SequencesTableNotFoundError(
            f"table {table!r} does not exist; declare it with sequences_table(metadata) and "
            "create it with metadata.create_all(engine), or in an Alembic migration with "
            "op.create_sequences_table()"
        ) from exc


def insert_ignoring_conflict(dialect: sa.Dialect, t: sa.Table, key: list[str]) -> sa.Insert:
    """An INSERT that inserts nothing (rowcount 0) where the primary key ``key`` exists.

    Each engine's own form, so that a conflict never aborts the transaction.
    """
    # isinstance: dialects built on these (CockroachDB's, for one) take the same form
    if isinstance(dialect, postgresql.base.PGDialect):
        return postgresql.insert(t).on_conflict_do_nothing(index_elements=key)
    if isinstance(dialect, sqlite.base.SQLiteDialect):
        return sqlite.insert(t).on_conflict_do_nothing(index_elements=key)
    name = dialect_key(dialect)
    if name in ("mysql", "mariadb"):
        return sa.insert(t).prefix_with("IGNORE")
    if name == "spanner":
        return sa.insert(t).prefix_with("OR IGNORE")
    return sa.insert(t)


def create_table_sequence(
    bind: sa.Engine | sa.Connection,
    name: str,
    start: int = 1,
    *,
    table: str = DEFAULT_TABLE,
    if_not_exists: bool = False,
) -> bool:
    """Add sequence ``name`` starting at ``start``; True if created, False if it existed.

    An existing sequence raises :class:`~sqlalchemy_seqkeys.SequenceExistsError`
    unless ``if_not_exists=True``, and is never changed. With an Engine the
    row is committed here; with a Connection it joins that connection's
    transaction.

    Example::

        create_table_sequence(engine, "invoice_id", start=1000, if_not_exists=True)
    """
    check_name(name)
    if not isinstance(start, int) or isinstance(start, bool) or not 0 <= start <= MAX_VALUE:
        raise InvalidSequenceError(f"start must be an int from 0 to {MAX_VALUE}, not {start!r}")
    if isinstance(bind, sa.Engine):
        with bind.begin() as conn:
            return _create(conn, name, start, table, if_not_exists)
    return _create(bind, name, start, table, if_not_exists)


def _create(conn: sa.Connection, name: str, start: int, table: str, if_not_exists: bool) -> bool:
    # rowcount of an INSERT is reported only when asked for (SQLAlchemy 2.0.28+)
    statement = insert_ignoring_conflict(conn.dialect, _clause(table), ["name"])
    statement = statement.execution_options(preserve_rowcount=True)
    try:
        created = conn.execute(statement, {"name": name, "next_value": start}).rowcount == 1
    except sa.exc.IntegrityError:
        created = False  # engines without an insert-if-absent form
    except (sa.exc.ProgrammingError, sa.exc.OperationalError) as exc:
        _raise_if_table_missing(conn, table, exc)
        raise
    if not created and not if_not_exists:
        raise SequenceExistsError(
            f"sequence {name!r} already exists in table {table!r}; it was left as it is. "
            "Pass if_not_exists=True to make this a no-op"
        )
    return created


def drop_table_sequence(
    bind: sa.Engine | sa.Connection,
    name: str,
    *,
    table: str = DEFAULT_TABLE,
    if_exists: bool = False,
) -> bool:
    """Delete sequence ``name``'s row; True if it was there.

    A missing sequence raises :class:`~sqlalchemy_seqkeys.SequenceNotFoundError`
    unless ``if_exists=True``. With an Engine the delete is committed here;
    with a Connection it joins that connection's transaction.

    Example::

        drop_table_sequence(engine, "invoice_id", if_exists=True)
    """
    check_name(name)
    if isinstance(bind, sa.Engine):
        with bind.begin() as conn:
            return _drop(conn, name, table, if_exists)
    return _drop(bind, name, table, if_exists)


def _drop(conn: sa.Connection, name: str, table: str, if_exists: bool) -> bool:
    t = _clause(table)
    statement = sa.delete(t).where(t.c.name == sa.bindparam("name"))
    try:
        result = conn.execute(statement.execution_options(preserve_rowcount=True), {"name": name})
    except (sa.exc.ProgrammingError, sa.exc.OperationalError) as exc:
        _raise_if_table_missing(conn, table, exc)
        raise
    dropped = result.rowcount == 1
    if not dropped and not if_exists:
        raise SequenceNotFoundError(
            f"sequence {name!r} does not exist in table {table!r}, so there is nothing to drop. "
            "Pass if_exists=True to make this a no-op"
        )
    return dropped
