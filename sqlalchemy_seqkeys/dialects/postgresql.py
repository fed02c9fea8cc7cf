"""PostgreSQL: native UUID, ``pg_sequence``, and a resync by ``setval`` under ``ALTER SEQUENCE``."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from sqlalchemy_seqkeys.comb import CombLayout
from sqlalchemy_seqkeys.dialects import (
    DialectFacts,
    GuidStorage,
    SequenceResync,
    Statement,
    catalog_reader,
    sequence_name_value,
    sequence_relation,
)

_MAX_VALUE = 2**63 - 1

#: ``(increment, cycles)`` of a sequence from ``pg_sequence``; None if there is none
read_catalog = catalog_reader(
    "SELECT seqincrement, seqcycle FROM pg_catalog.pg_sequence WHERE seqrelid = to_regclass(:name)",
    "pg_sequence",
)


_CACHE = sa.text("SELECT seqcache FROM pg_catalog.pg_sequence WHERE seqrelid = to_regclass(:name)")


def read_cache(conn: sa.Connection, sequence: sa.Sequence) -> int | None:
    """The sequence's ``CACHE`` from ``pg_sequence``; None if there is no such sequence.

    Above 1, each session takes that many values at once and hands them out later,
    below values other sessions took since: ``last_value`` then says nothing of the
    next values, and a ``setval`` does not reach the ones sessions hold.

    :param conn: a connection; the sequence's name reaches the query quoted, its schema
        translated by the connection's ``schema_translate_map``.
    :param sequence: the native sequence, as declared (``sa.Sequence``).
    """
    value = conn.execute(_CACHE, {"name": sequence_name_value(conn, sequence)}).scalar()
    return None if value is None else int(value)


def read_next(conn: sa.Connection, sequence: sa.Sequence, increment: int) -> tuple[int, int]:
    """The value the next ``nextval`` of ``sequence`` returns (twice), read without calling it.

    :param conn: a connection to the database; its ``schema_translate_map`` applies.
    :param sequence: the native sequence, as declared (``sa.Sequence``).
    :param increment: the sequence's ``INCREMENT BY``, as its catalog says.
    """
    relation = sequence_relation(sequence, "last_value", "is_called")
    row = conn.execute(sa.select(relation.c.last_value, relation.c.is_called)).one()
    upcoming = int(row[0]) + increment if row[1] else int(row[0])
    return upcoming, upcoming


def sequence_block(sequence: sa.Sequence, n: int) -> sa.Select[Any]:
    """``n`` values of ``sequence`` in one statement: ``nextval`` over ``generate_series``.

    :param sequence: the native sequence to take the values from.
    :param n: how many values, 1 or more.
    """
    # nextval() is volatile: evaluated once per row, never rolled back
    rows = sa.func.generate_series(1, n).table_valued("i")
    return sa.select(sequence.next_value()).select_from(rows)


def resync_statements(r: SequenceResync) -> list[sa.Executable]:
    """``ALTER SEQUENCE ... NO CYCLE`` (the lock), then a ``setval`` that only moves forward.

    :param r: what to resync (a :class:`~sqlalchemy_seqkeys.dialects.SequenceResync`):
        the sequence, locked and read as a relation, ``r.top`` (``MAX(column)``) and
        ``r.name_value``, cast to ``regclass`` for ``setval``.
    """
    sequence, top = r.sequence, r.top
    # ALTER SEQUENCE blocks nextval and setval until the transaction ends, so
    # no block can be taken between reading the sequence and moving it.
    lock = Statement("ALTER SEQUENCE {} NO CYCLE", sequence)
    regclass = sa.cast(sa.literal(r.name_value), postgresql.REGCLASS)
    current = sequence_relation(sequence, "last_value", "is_called").alias("seq")
    catalog = sa.table(
        "pg_sequence",
        sa.column("seqrelid"),
        sa.column("seqincrement", sa.BigInteger),
        schema="pg_catalog",
    )
    increment = sa.select(catalog.c.seqincrement).where(catalog.c.seqrelid == regclass)
    # the value the next nextval returns (numeric: no overflow near the maximum)
    upcoming = sa.case(
        (
            current.c.is_called,
            sa.cast(current.c.last_value, sa.Numeric) + increment.scalar_subquery(),
        ),
        else_=current.c.last_value,
    )
    move = (
        sa.select(sa.func.setval(regclass, top.c.m + sa.literal(1, sa.BigInteger), sa.false()))
        .select_from(top.join(current, sa.true()))
        .where(top.c.m >= upcoming, top.c.m < sa.literal(_MAX_VALUE, sa.BigInteger))
    )
    return [lock, move]


FACTS = DialectFacts(
    display_name="PostgreSQL",
    guid_storage=GuidStorage.native(postgresql.UUID(as_uuid=True)),
    guid_order=CombLayout.AS_STRING,
    autocommit_allocation=True,
    read_sequence_catalog=read_catalog,
    resync_statements=resync_statements,
    read_sequence_next=read_next,
    read_session_cache=read_cache,
    sequence_block=sequence_block,
    now_ms_sql="CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)",
    identifier_bytes=63,  # NAMEDATALEN - 1; longer ones are cut there, silently
)
