"""Move a table sequence past the keys a table already holds, after an import or a restore.

:func:`resync_table_sequence` is one UPDATE that sets the sequence's ``next_value``
to ``MAX(column) + 1`` of the table: atomic beside allocations, never backwards.
It suits plain counters, not a ``BitReversed`` key column, and a column of an
integer type only (checked by reflection before the UPDATE).

User guide: docs/strategies/table-sequences.md (restores and imports).
"""

from __future__ import annotations

import decimal
from typing import Any

import sqlalchemy as sa

from sqlalchemy_seqkeys._aio import pause
from sqlalchemy_seqkeys._dialect import check_identifier
from sqlalchemy_seqkeys._validate import check_name as check_name_arg
from sqlalchemy_seqkeys.dialects import family
from sqlalchemy_seqkeys.errors import InvalidSequenceError, SequenceExhaustedError

from . import _aio
from ._retry import error_in_callers_transaction, retrying
from .table import (
    DEFAULT_TABLE,
    MAX_VALUE,
    check_exact_names,
    check_name,
    naming_missing_table,
    raise_if_table_missing,
    raise_missing_or_exhausted,
    table_clause,
    wrote_row,
)

__all__ = ["resync_statement", "resync_table_sequence", "resync_table_sequence_async"]


def _check_identifier(value: object, what: str) -> str:
    return check_name_arg(value, what, InvalidSequenceError)  # type: ignore[no-any-return]


def check_source_names(
    dialect: sa.Dialect, table: str | sa.Table, column: str, schema: str | None
) -> None:
    """Refuse a data table, column or schema name the engine cannot hold, before any I/O.

    PostgreSQL, for one, would cut a name past 63 bytes and read another table.
    """
    name = table.name if isinstance(table, sa.Table) else table
    if isinstance(table, sa.Table):
        schema = table.schema
    for value, what in ((name, "table"), (column, "column"), (schema, "schema")):
        if isinstance(value, str):
            check_identifier(dialect, value, f"{what} name", InvalidSequenceError)


def raise_if_source_missing(
    conn: sa.Connection, highest: sa.Select[Any], name: str, exc: Exception
) -> None:
    """An InvalidSequenceError if the table or column ``highest`` reads is missing.

    ``highest`` selects from the one-column Table of :func:`data_table`.
    """
    source = highest.get_final_froms()[0]
    assert isinstance(source, sa.Table)
    column = next(iter(source.c)).name
    schema = conn.schema_for_object(source)  # a tenant's, as its schema_translate_map says
    where = f"{schema}.{source.name}" if schema else source.name
    where_parts = (source.name, schema)
    # a fresh connection: the failed statement may have aborted this one's transaction
    try:
        with conn.engine.connect() as probe:
            inspector = sa.inspect(probe)
            if not inspector.has_table(source.name, schema=schema):
                missing = f"there is no table {where!r}"
            else:
                found = [c for c in inspector.get_columns(*where_parts) if c["name"] == column]
                if not found:
                    missing = f"table {where!r} has no column {column!r}"
                elif not isinstance(found[0]["type"], sa.Integer):
                    # an empty text column: no key to refuse, the server refused the compare
                    what = f"is of type {found[0]['type']}, not an integer type"
                    raise _refuse_keys(source, name, what) from exc
                else:
                    return
    except InvalidSequenceError:
        raise
    except Exception:  # the probe is advisory; the original error is what matters
        return
    raise InvalidSequenceError(
        f"{missing} to resync sequence {name!r} with; nothing was changed. Name the "
        "table (and schema) that holds the keys and its key column"
    ) from exc


def _where(source: sa.Table) -> str:
    return f"{source.schema}.{source.name}" if source.schema else source.name


def _refuse_keys(source: sa.Table, name: str, what: str) -> InvalidSequenceError:
    column = next(iter(source.c)).name
    return InvalidSequenceError(
        f"column {column!r} of table {_where(source)!r} {what}: sequence {name!r} can only "
        "be resynced from a column of integer keys (it moves to MAX + 1); nothing was "
        "changed. Name the table's integer key column"
    )


def check_integer_key(value: object, source: sa.Table, name: str) -> int | None:
    """``MAX(column)`` as read back: None (no rows) or an integer; anything else is refused.

    Read before a resync moves anything: a text column's MAX ('999' sorts after
    '1000'; SQLite sorts text after every number), a real 2.5, are no keys.
    A whole-number ``Decimal`` (a NUMERIC key column) counts as its integer.
    """
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    if isinstance(value, decimal.Decimal) and value.is_finite() and value == int(value):
        return int(value)
    shown = f"{value!r} ({type(value).__name__})"
    raise _refuse_keys(source, name, f"holds {shown}, not an integer")


def data_table(table: str | sa.Table, column: str, schema: str | None) -> sa.Table:
    """The one-column Table a resync reads ``MAX(column)`` from; checks the names, no I/O.

    A Table of its own MetaData, not a table clause: only Tables follow a
    schema_translate_map, and a tenant must read MAX from its own table.
    """
    _check_identifier(column, "column")
    check_name_arg(schema, "schema", InvalidSequenceError, nullable=True)
    if isinstance(table, sa.Table):
        if column not in table.c:
            raise InvalidSequenceError(
                f"table {table.name!r} has no column {column!r}; name its key column"
            )
        name, schema = table.name, table.schema
    else:
        name = _check_identifier(table, "table")
    return sa.Table(name, sa.MetaData(), sa.Column(column), schema=schema)


def check_resync_arguments(
    name: str, table: str | sa.Table, column: str, schema: str | None, sequences_table: str
) -> sa.Table:
    """Refuse a resync's bad names before any I/O; return :func:`data_table`'s table."""
    check_name(name)
    _check_identifier(sequences_table, "sequences_table")
    return data_table(table, column, schema)


def check_resync_bind(
    bind: sa.Engine | sa.Connection,
    what: str,
    table: str | sa.Table,
    column: str,
    schema: str | None,
) -> None:
    """Refuse what the sync form ``what`` cannot take, and names the engine cannot hold."""
    _aio.check_sync_bind(bind, what)
    check_source_names(bind.dialect, table, column, schema)


def _statements(
    name: str,
    table: str | sa.Table,
    column: str,
    schema: str | None,
    sequences_table: str,
) -> tuple[sa.Update, sa.Select[tuple[object]]]:
    data = check_resync_arguments(name, table, column, schema, sequences_table)
    highest = sa.select(sa.func.max(data.c[column]))
    subquery = highest.scalar_subquery()
    t = table_clause(sequences_table)
    update = (
        sa.update(t)
        .where(
            t.c.name == sa.literal(name, t.c.name.type),
            t.c.next_value <= subquery,
            subquery < sa.literal(MAX_VALUE, sa.BigInteger),  # MAX + 1 is still a BIGINT
        )
        .values(next_value=subquery + sa.literal(1, sa.BigInteger))
    )
    return update, highest


def resync_statement(
    name: str,
    table: str | sa.Table,
    column: str,
    *,
    schema: str | None = None,
    sequences_table: str = DEFAULT_TABLE,
) -> sa.Update:
    """The one UPDATE that moves sequence ``name`` past ``MAX(table.column)``, never back.

    The arguments are :func:`resync_table_sequence`'s, without the bind:

    :param name: the sequence.
    :param table: the table of the keys (a name, or a ``Table``).
    :param column: the key column.
    :param schema: the schema of a table given by name.
    :param sequences_table: where the sequence's row is.

    Example::

        >>> from sqlalchemy.dialects import sqlite
        >>> sql = resync_statement("invoice_id", "invoices", "id").compile(
        ...     dialect=sqlite.dialect(), compile_kwargs={"literal_binds": True})
        >>> print(" ".join(str(sql).split()))  # doctest: +ELLIPSIS
        UPDATE sequences SET next_value=((SELECT max(invoices.id) AS max_1 FROM invoices) + 1) ...
    """
    return _statements(name, table, column, schema, sequences_table)[0]


def resync_table_sequence(
    bind: sa.Engine | sa.Connection,
    name: str,
    table: str | sa.Table,
    column: str,
    *,
    schema: str | None = None,
    sequences_table: str = DEFAULT_TABLE,
) -> int:
    """Move sequence ``name`` past ``MAX(column)`` of ``table``; return its next value.

    Atomic (one UPDATE) and never backwards: a sequence already past the
    table's keys, or a table without rows, leaves ``next_value`` as it is.
    ``table`` is a table name (with ``schema``) or a ``Table``; ``column`` its
    integer key column. With an Engine the change is committed here; with a
    Connection it joins that connection's transaction. Raises
    :class:`~sqlalchemy_seqkeys.SequenceNotFoundError` without the sequence's
    row, :class:`~sqlalchemy_seqkeys.SequenceExhaustedError` when the
    column's maximum is 2**63 - 1, and
    :class:`~sqlalchemy_seqkeys.InvalidSequenceError` when the column's real
    (reflected) type is not an integer type, or its maximum is not an integer
    (SQLite's untyped column), changing nothing.

    :param bind: an Engine (a transaction of its own, committed) or a
        Connection (joins its transaction).
    :param name: the sequence's row name.
    :param table: the table that holds the keys: its name (with ``schema``) or a ``Table``.
    :param column: its integer key column.
    :param schema: the table's schema, for a table given by name.
    :param sequences_table: the sequences table's name.

    Example::

        resync_table_sequence(engine, "invoice_id", "invoices", "id")   # e.g. 10042
    """
    update, highest = _statements(name, table, column, schema, sequences_table)
    check_resync_bind(bind, "resync_table_sequence", table, column, schema)
    what = f"resyncing sequence {name!r} (table {sequences_table!r})"
    outcome = "the sequence was not moved"
    if isinstance(bind, sa.Engine):
        engine = bind

        def attempt() -> int:
            with engine.begin() as conn:
                return _resync(conn, update, highest, name, sequences_table)

        # A transaction of its own: a deadlock (MariaDB's MAX subquery share-locks
        # the data table's last keys, and an in_transaction insert may wait on
        # them) runs again; the UPDATE is idempotent, never backwards.
        return retrying(attempt, what=what, outcome=outcome, sleep=pause)
    try:
        return _resync(bind, update, highest, name, sequences_table)
    except sa.exc.DBAPIError as exc:
        raise error_in_callers_transaction(exc, what, outcome) from exc


resync_table_sequence_async = _aio.awaitable(
    resync_table_sequence,
    'await resync_table_sequence_async(async_engine, "invoice_id", "invoices", "id")',
)
"""Awaitable :func:`resync_table_sequence`: an AsyncEngine commits, an AsyncConnection joins.

The same arguments after the bind. Example::

    await resync_table_sequence_async(async_engine, "invoice_id", "invoices", "id")
"""


def _read_locked(conn: sa.Connection, name: str, table: str) -> int | None:
    """``next_value`` as committed now (a locking read), or None without the row.

    After an UPDATE that matched no row (another process moved the sequence
    past the keys first), a plain read under REPEATABLE READ (MariaDB's InnoDB)
    returns the transaction's snapshot, older than what the UPDATE saw.
    SQLite compiles no FOR UPDATE (its writers never interleave); Spanner
    refuses it, and its reads in a read-write transaction lock and read the
    committed row already.
    """
    t = table_clause(table)
    locked = sa.select(t.c.next_value).where(t.c.name == sa.literal(name, t.c.name.type))
    if family(conn.dialect) != "spanner":
        locked = locked.with_for_update()
    with naming_missing_table(conn, table):
        value = conn.execute(locked).scalar()
    return None if value is None else int(value)


def _resync(
    conn: sa.Connection,
    update: sa.Update,
    highest: sa.Select[tuple[object]],
    name: str,
    table: str,
) -> int:
    try:
        return _resync_row(conn, update, highest, name, table)
    finally:
        wrote_row(conn, name)  # moved or read FOR UPDATE: locked until conn's transaction ends


def _resync_row(
    conn: sa.Connection,
    update: sa.Update,
    highest: sa.Select[tuple[object]],
    name: str,
    table: str,
) -> int:
    source = highest.get_final_froms()[0]
    assert isinstance(source, sa.Table)
    try:
        check_exact_names(conn, table)
        # the keys read first: a text column or a real 2.5 never moves the sequence
        check_integer_key(conn.execute(highest).scalar(), source, name)
        moved = conn.execute(update).rowcount == 1
    except (sa.exc.ProgrammingError, sa.exc.OperationalError) as exc:
        raise_if_table_missing(conn, table, exc)
        raise_if_source_missing(conn, highest, name, exc)
        raise
    current = _read_locked(conn, name, table)
    if current is None:
        raise_missing_or_exhausted(conn, name, 1, table)  # SequenceNotFoundError
    assert current is not None
    if not moved:
        largest = check_integer_key(conn.execute(highest).scalar(), source, name)
        if largest is not None and largest >= MAX_VALUE:
            raise SequenceExhaustedError(
                f"the largest key in the table is {largest}, the BIGINT maximum: sequence "
                f"{name!r} cannot move past it; nothing was changed"
            )
    return current
