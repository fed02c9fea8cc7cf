"""MySQL and MariaDB: ASCII CHAR(36) and BINARY(16) GUIDs, LAST_INSERT_ID(expr), sequences."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

from sqlalchemy_seqkeys.comb import CombLayout
from sqlalchemy_seqkeys.dialects import (
    DialectFacts,
    GuidStorage,
    SequenceResync,
    Statement,
    sequence_relation,
)

_MAX_VALUE = 2**63 - 1

#: MariaDB: no such table (1146); a table without a sequence's columns (1054)
_NOT_A_SEQUENCE = frozenset({1146, 1054})


def read_catalog(conn: sa.Connection, sequence: sa.Sequence) -> tuple[int, bool] | None:
    """``(increment, cycles)`` of a MariaDB sequence, from its own row; None if there is none.

    :param conn: a connection to the database; its ``schema_translate_map`` applies.
    :param sequence: the native sequence, as declared (``sa.Sequence``).
    """
    from sqlalchemy_seqkeys.sequences._retry import mysql_error_code

    # A MariaDB sequence is a table of one row (information_schema.SEQUENCES
    # came in 11.5). A failed statement leaves MariaDB's transaction as it was.
    relation = sequence_relation(sequence, "increment", "cycle_option")
    try:
        row = conn.execute(sa.select(relation.c.increment, relation.c.cycle_option)).first()
    except (sa.exc.ProgrammingError, sa.exc.OperationalError) as exc:
        if exc.orig is not None and mysql_error_code(exc.orig) in _NOT_A_SEQUENCE:
            return None
        raise
    return None if row is None else (int(row[0]), bool(row[1]))


def read_next(conn: sa.Connection, sequence: sa.Sequence, increment: int) -> tuple[int, int] | None:
    """MariaDB: the lowest and the highest value the next ``NEXTVAL`` may return.

    The row holds ``next_not_cached_value``, the value after the server's cache
    (``CACHE 1000`` unless the sequence says otherwise); the cache's values lie
    below it and cannot be read. One value, twice, where nothing is cached: a
    sequence with ``NOCACHE`` (as the library creates its own), or a row no
    refill of the cache can have written (below ``MINVALUE + CACHE * INCREMENT``:
    written by ``CREATE``, ``ALTER`` or a ``SETVAL``, whose value comes next).

    :param conn: a connection to the database; its ``schema_translate_map`` applies.
    :param sequence: the native sequence, as declared (``sa.Sequence``).
    :param increment: the sequence's ``INCREMENT BY``, as its catalog says.
    """
    relation = sequence_relation(sequence, "next_not_cached_value", "cache_size", "minimum_value")
    columns = relation.c.next_not_cached_value, relation.c.cache_size, relation.c.minimum_value
    row = conn.execute(sa.select(*columns)).first()
    if row is None:
        return None
    after_cache, cached, minimum = (int(v) for v in row)
    # A refill at v hands out v and keeps v + increment ... up to after_cache
    # (exclusive) in memory, and writes after_cache = v + cached * increment; v is
    # at least MINVALUE (not START: a RESTART may go below it).
    if cached <= 1 or increment <= 0 or after_cache - cached * increment < minimum:
        return after_cache, after_cache
    return min(max(after_cache - (cached - 1) * increment, minimum), after_cache), after_cache


def sequence_block(sequence: sa.Sequence, n: int) -> sa.Select[Any]:
    """MariaDB: ``n`` values of ``sequence`` in one statement, over ``seq_1_to_N``.

    :param sequence: the native sequence to take the values from.
    :param n: how many values, 1 or more.
    """
    # seq_1_to_N: a table of the SEQUENCE storage engine, in the sequence's
    # own database (a schema_translate_map moves both). NEXTVAL is evaluated
    # once per row sent, never rolled back.
    rows = sa.Table(f"seq_1_to_{n}", sa.MetaData(), schema=sequence.schema)
    return sa.select(sequence.next_value()).select_from(rows)


def sequence_block_without_sequence_engine(sequence: sa.Sequence, n: int) -> sa.Select[Any]:
    """MariaDB with the SEQUENCE engine off (``--skip-sequence``): over a recursive CTE.

    :param sequence: the native sequence to take the values from.
    :param n: how many values at most (the server may stop the recursion sooner).
    """
    # The server stops recursing at max_recursive_iterations (1000 by default):
    # a statement then brings fewer counters, each of them as good.
    one: sa.ColumnElement[int] = sa.literal_column("1", sa.Integer)
    base = sa.select(one.label("i")).cte("seqkeys_rows", recursive=True)
    rows = base.union_all(sa.select(base.c.i + one).where(base.c.i < sa.literal_column(str(n))))
    return sa.select(sequence.next_value()).select_from(rows)


#: the session variables a resync passes its value, and the sequence's MAXVALUE, through
NEXT_VARIABLE = "@seqkeys_resync_next"
MAX_VARIABLE = "@seqkeys_resync_max"

#: raised where the value is past the sequence's MAXVALUE: ``SETVAL`` would move the
#: sequence there, to no value left, and return the value as if it came next.
#: 1264 (out of range) reaches the drivers as a DataError, as PostgreSQL's setval's.
_PAST_MAXVALUE = (
    "SIGNAL SQLSTATE ''22003'' SET MYSQL_ERRNO = 1264, "
    "MESSAGE_TEXT = ''the keys are past the MAXVALUE of the sequence''"
)


def resync_statements(r: SequenceResync) -> list[sa.Executable]:
    """MariaDB: ``MAX + 1`` into a session variable, then ``SETVAL``, which never moves back.

    A value past the sequence's ``MAXVALUE`` raises out of range (a DataError), changing
    nothing.

    :param r: what to resync (a :class:`~sqlalchemy_seqkeys.dialects.SequenceResync`):
        ``r.top`` (``MAX(column)``) and ``r.name_value``, the sequence's name as a
        bound value that ``EXECUTE IMMEDIATE`` parses.
    """
    top = r.top
    # SETVAL(s, v, 0) makes v the next value unless s is already past v (then
    # it changes nothing and returns NULL): atomic beside NEXTVAL, never back.
    # It takes constants only, so MAX + 1 reaches it through a session
    # variable and EXECUTE IMMEDIATE (which takes no subquery): two statements,
    # valid offline too.
    following = sa.select(
        sa.case((top.c.m < sa.literal(_MAX_VALUE, sa.BigInteger), top.c.m + 1), else_=sa.null())
    ).select_from(top)
    maximum = sa.select(sequence_relation(r.sequence, "maximum_value").c.maximum_value)
    remember = Statement(
        f"SET {NEXT_VARIABLE} = ({{}}), {MAX_VARIABLE} = ({{}})", following, maximum
    )
    # The sequence's name reaches the dynamic statement as a bound value,
    # quoted for that statement's own parser.
    move = sa.text(
        f"EXECUTE IMMEDIATE IF({NEXT_VARIABLE} IS NULL, 'SELECT NULL', "
        f"IF({NEXT_VARIABLE} > {MAX_VARIABLE}, '{_PAST_MAXVALUE}', "
        f"CONCAT('SELECT SETVAL(', :seqkeys_sequence, ', ', {NEXT_VARIABLE}, ', 0)')))"
    ).bindparams(sa.bindparam("seqkeys_sequence", r.name_value, type_=sa.String()))
    return [remember, move]


FACTS = DialectFacts(  # MariaDB too (family counts it as MySQL)
    display_name="MySQL/MariaDB",
    guid_storage=GuidStorage(text=mysql.CHAR(36, charset="ascii"), binary=mysql.BINARY(16)),
    guid_order=CombLayout.AS_STRING,
    allocates_with_last_insert_id=True,
    names_ignore_case=True,  # 0.1's tables took the default collation; 0.2's are utf8mb4_bin
    read_sequence_catalog=read_catalog,
    resync_statements=resync_statements,
    read_sequence_next=read_next,
    sequence_block=sequence_block,  # MySQL has no sequences: never asked there
    # UNIX_TIMESTAMP(NOW(3)) converts the session's local time back, which is
    # ambiguous in the repeated autumn hour and comes out an hour early there.
    # UTC_TIMESTAMP and TIMESTAMPDIFF involve no zone at all.
    now_ms_sql="(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000)",
    identifier_chars=64,
    identifier_bmp_only=True,
)
