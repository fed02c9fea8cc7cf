"""The questions modules ask about an engine, answered in one place.

Family records come from :mod:`sqlalchemy_seqkeys.dialects` (``facts``, ``family``); here are
the questions that read a dialect object (``has_sequences``) and the identifier rules::

    >>> from sqlalchemy.dialects import mssql, mysql
    >>> [facts(mssql.dialect()).guid_order, family(mysql.dialect()),
    ...  facts("mariadb").names_ignore_case]
    [<CombLayout.AT_END: 'at_end'>, 'mysql', True]

Design: docs/architecture.md.
"""

from __future__ import annotations

import re
import sys
from contextlib import contextmanager
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from sqlalchemy_seqkeys.dialects import (
    DialectFacts,
    dialect_key,
    facts,
    family,
    has_facts,
    identifier_text,
)
from sqlalchemy_seqkeys.errors import SeqKeysError, SequenceExistsError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from sqlalchemy.engine.interfaces import Dialect

__all__ = [
    "FILE_NAME_TOO_LONG",
    "MARIADB_SEQUENCE_MAX",
    "DialectFacts",
    "check_identifier",
    "check_sequence_start",
    "create_refusals",
    "dialect_key",
    "drop_refusals",
    "facts",
    "family",
    "file_name_too_long",
    "has_facts",
    "has_sequences",
    "identifier_text",
    "ignores_conflicts",
    "incrementing_sequences",
    "insert_ignoring_conflict",
    "mariadb_uuid_keeps_v7_order",
    "native_sequences",
]


def has_sequences(dialect: Dialect) -> bool:
    """True where the engine has ``CREATE SEQUENCE``: the one test of it, offline included.

    A connected dialect knows (MariaDB from 10.3, not MySQL); MariaDB's
    dialect learns it only when it connects, so an unconnected ``mariadb://``
    one (offline ``--sql``) is taken at its word.

    Example::

        >>> from sqlalchemy.dialects import mysql, postgresql, sqlite
        >>> has_sequences(postgresql.dialect()), has_sequences(sqlite.dialect())
        (True, False)
        >>> has_sequences(mysql.dialect(is_mariadb=True)), has_sequences(mysql.dialect())
        (True, False)
    """
    if dialect.supports_sequences:
        return True
    return bool(getattr(dialect, "is_mariadb", False)) and dialect.server_version_info is None


#: the name Alembic operations and autogenerate use: a bit-reversed sequence is
#: a native sequence where the engine has sequences
native_sequences = has_sequences


def insert_ignoring_conflict(dialect: Dialect, t: sa.Table, key: list[str]) -> sa.Insert:
    """An INSERT that inserts nothing (rowcount 0) where the primary key ``key`` exists.

    Each engine's own form, so that a conflict never aborts the transaction; a
    plain INSERT where the engine has none (:func:`ignores_conflicts` is False).

    Example::

        >>> from sqlalchemy.dialects import sqlite
        >>> t = sa.Table("t", sa.MetaData(), sa.Column("k", sa.Integer, primary_key=True))
        >>> print(insert_ignoring_conflict(sqlite.dialect(), t, ["k"]).compile(
        ...     dialect=sqlite.dialect()))
        INSERT INTO t (k) VALUES (?) ON CONFLICT (k) DO NOTHING
    """
    form = _conflict_form(dialect)
    return sa.insert(t) if form is None else form(t, key)


def ignores_conflicts(dialect: Dialect) -> bool:
    """Whether :func:`insert_ignoring_conflict` skips an existing key on ``dialect``.

    Where it does, an ``IntegrityError`` from that INSERT is never "the row was
    there" and must not be read as such.

    Example::

        >>> from sqlalchemy.dialects import mssql, sqlite
        >>> ignores_conflicts(sqlite.dialect()), ignores_conflicts(mssql.dialect())
        (True, False)
    """
    return _conflict_form(dialect) is not None


def _conflict_form(dialect: Dialect) -> Callable[[sa.Table, list[str]], sa.Insert] | None:
    # isinstance: dialects built on these (CockroachDB's, for one) take the same
    # form. A dialect of either is an instance of a class of its module, so that
    # module is imported already when it matters (nothing imported here).
    postgresql = sys.modules.get("sqlalchemy.dialects.postgresql")
    if postgresql is not None and isinstance(dialect, postgresql.base.PGDialect):
        return lambda t, key: postgresql.insert(t).on_conflict_do_nothing(index_elements=key)
    sqlite = sys.modules.get("sqlalchemy.dialects.sqlite")
    if sqlite is not None and isinstance(dialect, sqlite.base.SQLiteDialect):
        return lambda t, key: sqlite.insert(t).on_conflict_do_nothing(index_elements=key)
    name = family(dialect)
    if name == "mysql":
        return lambda t, key: sa.insert(t).prefix_with("IGNORE")
    if name == "spanner":
        return lambda t, key: sa.insert(t).prefix_with("OR IGNORE")
    return None


def mariadb_uuid_keeps_v7_order(dialect: Dialect) -> bool:
    """True where the server's ``UUID`` type stores and compares version-7 UUIDs in time order.

    MariaDB's ``UUID`` type swaps the groups of a UUID before storing it, which
    scrambles time order. From 10.11.5 (10.9.8, 10.10.6, 11.0.3) it swaps only
    versions 1 to 5 (with the RFC variant) and leaves UUIDs of version 6 and up
    as they are (MDEV-29959), but those releases, and 11.1.0 to 11.1.2 and
    11.2.0 to 11.2.1, compare such values wrongly (MDEV-31926: ``WHERE id > x``,
    ranges and ``ORDER BY`` go wrong). True from 10.11.6 (10.10.7, 11.0.4,
    11.1.3, 11.2.2 in their series) and on every 11.3 and later. A
    ``mariadb://`` dialect with no server version yet (offline SQL) counts as
    new enough; MySQL has no ``UUID`` type.

    Example::

        >>> from sqlalchemy.dialects import mysql
        >>> dialect = mysql.dialect(is_mariadb=True)
        >>> dialect.server_version_info = (10, 11, 5)
        >>> mariadb_uuid_keeps_v7_order(dialect)
        False
        >>> dialect.server_version_info = (10, 11, 6)
        >>> mariadb_uuid_keeps_v7_order(dialect)
        True
    """
    if dialect.name == "mariadb" and dialect.server_version_info is None:
        return True
    if not getattr(dialect, "is_mariadb", False):
        return False
    version = tuple(dialect.server_version_info or ())
    if version[:2] >= (11, 3):  # every series from 11.3 has both fixes
        return True
    # the first release of each series whose UUID type both stores version 6 and
    # up unswapped (MDEV-29959: 10.9.8, 10.10.6, 10.11.5, 11.0.3) and compares
    # them in that order (MDEV-31926); 10.9 and older series have no such release
    fixed: dict[tuple[Any, ...], tuple[int, ...]] = {
        (10, 10): (10, 10, 7),
        (10, 11): (10, 11, 6),
        (11, 0): (11, 0, 4),
        (11, 1): (11, 1, 3),
        (11, 2): (11, 2, 2),
    }
    first = fixed.get(version[:2])
    return first is not None and version >= first


def incrementing_sequences(dialect: Dialect) -> bool:
    """True where ``CREATE SEQUENCE s INCREMENT BY n`` hands out values ``n`` apart.

    A connected dialect knows (MariaDB from 10.3, not MySQL); an unconnected
    ``mariadb://`` one (offline SQL) is taken at its word. Spanner's sequences
    are bit-reversed, so it has none.

    Example::

        >>> from sqlalchemy.dialects import postgresql, sqlite
        >>> incrementing_sequences(postgresql.dialect()), incrementing_sequences(sqlite.dialect())
        (True, False)
    """
    return has_sequences(dialect) and not facts(dialect).bit_reversed_sequences_only


# -- bit-reversed sequences (bitreverse.py) ----------------------------------------


def natively_bit_reversed(dialect: Dialect | str) -> bool:
    """True where an ``sqlalchemy.Sequence`` hands out bit-reversed values itself.

    sqlalchemy-spanner creates its sequences as ``bit_reversed_positive``.

    Example::

        >>> natively_bit_reversed("spanner+spanner"), natively_bit_reversed("postgresql")
        (True, False)
    """
    return facts(dialect).bit_reversed_sequences_only


__all__ += ["natively_bit_reversed"]


def keyed_by_schema(select: sa.Select[Any], sequence: sa.Sequence) -> sa.Select[Any]:
    """``select``, which takes ``sequence``'s values, cached apart per schema of the sequence.

    SQLAlchemy's cache key of ``sequence.next_value()`` holds the sequence's
    name and not its schema, so a statement compiled for ``a.orders`` would be
    reused for ``b.orders``. The schema goes into a statement hint for no
    dialect: part of the cache key, rendered nowhere::

        >>> from sqlalchemy.dialects import postgresql
        >>> print(keyed_by_schema(sa.select(sa.Sequence("s", schema="b").next_value()),
        ...                       sa.Sequence("s", schema="b")).compile(
        ...     dialect=postgresql.dialect()))
        SELECT nextval('b.s') AS next_value_1
    """
    return select.with_statement_hint(f"schema {sequence.schema!r}", _NO_DIALECT)


#: the dialect name of a statement hint that only keys the compiled cache
_NO_DIALECT = "seqkeys-cache-key"

__all__ += ["keyed_by_schema"]


# -- identifiers: a name as SQL text, and the names an engine cannot hold -----------


@lru_cache(maxsize=4096)
def _problem(dialect_name: str, name: str) -> str | None:
    engine = facts(dialect_name)
    shown = engine.display_name or family(dialect_name)
    if engine.identifier_bytes is not None and len(name.encode()) > engine.identifier_bytes:
        return (
            f"{shown} identifiers are at most {engine.identifier_bytes} bytes of UTF-8 and "
            f"this one is {len(name.encode())}; {shown} would keep only the first "
            f"{engine.identifier_bytes} bytes, silently, and two such names would be one object"
        )
    if engine.identifier_chars is not None and len(name) > engine.identifier_chars:
        return (
            f"{shown} identifiers are at most {engine.identifier_chars} characters and this "
            f"one is {len(name)}"
        )
    if engine.identifier_bmp_only and any(ord(c) > 0xFFFF for c in name):
        return f"{shown} identifiers cannot hold characters above U+FFFF (emoji, for one)"
    pattern = engine.identifier_pattern
    if pattern is not None and re.fullmatch(pattern, name) is None:
        return f"{shown} identifiers must {engine.identifier_pattern_words}"
    return None


def check_identifier(
    dialect: Dialect | str, name: str, what: str, error: type[SeqKeysError]
) -> str:
    """Return ``name``, or raise ``error`` saying the rule it breaks here; no I/O.

    Example::

        >>> from sqlalchemy_seqkeys.errors import InvalidSequenceError
        >>> check_identifier("spanner", "q%x", "sequence name", InvalidSequenceError)
        Traceback (most recent call last):
        ...
        sqlalchemy_seqkeys.errors.InvalidSequenceError: sequence name 'q%x' cannot be used on \
Spanner: Spanner identifiers must start with an ASCII letter and hold only ASCII letters, \
digits and underscores. Nothing was sent to the database; choose another name
    """
    # cached per (dialect, name): minting paths call this for every value
    problem = _problem(dialect if isinstance(dialect, str) else dialect.name, name)
    if problem is not None:
        shown = facts(dialect).display_name or family(dialect)
        raise error(
            f"{what} {name!r} cannot be used on {shown}: {problem}. Nothing was sent to the "
            "database; choose another name"
        )
    return name


#: why MariaDB refused a name of at most 64 characters: its file name (see below)
FILE_NAME_TOO_LONG = (
    "MariaDB keeps a sequence as a table, in a file named after it, and this name's file "
    "name would be longer than the file system allows (every character other than an ASCII "
    "letter, digit or underscore takes 3 to 5 bytes of it, and 255 bytes is the usual limit)"
)


def file_name_too_long(exc: BaseException) -> bool:
    """True where MariaDB refused to create a table (a sequence) for its file name's length.

    Example::

        >>> file_name_too_long(OSError("Can't create table `x` (errno: 36 File name too long)"))
        True
    """
    orig = getattr(exc, "orig", None) or exc
    return "errno: 36" in str(orig)


#: the largest value of a MariaDB sequence: its (signed BIGINT) sequences stop
#: one short of BIGINT's maximum, and refuse a START WITH past it (error 4085)
MARIADB_SEQUENCE_MAX = 2**63 - 2


def check_sequence_start(
    dialect: Dialect, sequence: sa.Sequence, error: type[SeqKeysError]
) -> None:
    """Raise ``error`` for a ``START WITH`` the engine's sequences cannot hold; no I/O.

    MariaDB's sequences end at :data:`MARIADB_SEQUENCE_MAX` (2**63 - 2), where
    PostgreSQL's, SQL Server's and Spanner's go on to 2**63 - 1.

    Example::

        >>> from sqlalchemy.dialects import mysql
        >>> from sqlalchemy_seqkeys.errors import InvalidSequenceError
        >>> check_sequence_start(mysql.dialect(is_mariadb=True), sa.Sequence("s", start=2**63 - 1),
        ...                      InvalidSequenceError)
        Traceback (most recent call last):
        ...
        sqlalchemy_seqkeys.errors.InvalidSequenceError: sequence 's' cannot start at \
9223372036854775807 on MariaDB: its sequences end at 9223372036854775806 (2**63 - 2). Nothing \
was sent to the database; start at or below 9223372036854775806
    """
    start = sequence.start
    if getattr(dialect, "is_mariadb", False) and start is not None and start > MARIADB_SEQUENCE_MAX:
        raise error(
            f"sequence {sequence.name!r} cannot start at {start} on MariaDB: its sequences end "
            f"at {MARIADB_SEQUENCE_MAX} (2**63 - 2). Nothing was sent to the database; start "
            f"at or below {MARIADB_SEQUENCE_MAX}"
        )


def _server_codes(exc: sa.exc.DBAPIError) -> set[object]:
    """The codes the driver's error carries: SQLSTATE (psycopg, asyncpg), MySQL's errno."""
    orig = exc.orig
    codes: set[object] = {getattr(orig, "sqlstate", None), getattr(orig, "pgcode", None)}
    args = getattr(orig, "args", ())
    if args and isinstance(args[0], int):  # PyMySQL, aiomysql, asyncmy, mysqlclient
        codes.add(args[0])
    codes.discard(None)
    return codes


def _server_text(exc: Exception) -> str:
    """What the server said, its detail lines included, on one line."""
    said = exc.orig if isinstance(exc, sa.exc.DBAPIError) else exc
    return " ".join(line.strip() for line in str(said).splitlines() if line.strip())


#: the name is another object's: PostgreSQL 42P07 (a table, view, index or sequence
#: of that name), MySQL/MariaDB 1050; SQL Server 2714 and Oracle ORA-00955 by their text
_NAME_TAKEN_CODES = frozenset({"42P07", 1050})
_NAME_TAKEN_TEXTS = ("(2714)", "ORA-00955")
#: other objects depend on it: PostgreSQL 2BP01; SQL Server 3729 by its text
_DEPENDED_ON_CODES = frozenset({"2BP01"})
_DEPENDED_ON_TEXTS = ("(3729)",)
#: Spanner's refusals, raised by its DDL at the commit as google.api_core errors
#: (FailedPrecondition), which SQLAlchemy does not wrap
_SPANNER_NAME_TAKEN = ("Duplicate name in schema",)
_SPANNER_DEPENDED_ON = ("there is a dependent",)


def _is(exc: Exception, codes: frozenset[object], texts: tuple[str, ...]) -> bool:
    if isinstance(exc, sa.exc.DBAPIError):
        return bool(_server_codes(exc) & codes) or any(t in str(exc.orig) for t in texts)
    return type(exc).__module__.startswith("google.") and any(t in str(exc) for t in texts)


@contextmanager
def create_refusals(
    sequence: sa.Sequence, dialect: Dialect, error: type[SeqKeysError]
) -> Iterator[None]:
    """The server's refusals of ``CREATE SEQUENCE`` inside raise a SeqKeysError, the cause kept.

    A name MariaDB refuses for its file name raises ``error``; a name another
    object of the database holds (a table, a view, an index: asked for a
    sequence, ``has_sequence`` does not see them) raises
    :class:`~sqlalchemy_seqkeys.SequenceExistsError`.
    """
    try:
        yield
    except Exception as exc:
        if isinstance(exc, sa.exc.DBAPIError) and file_name_too_long(exc):
            raise error(
                f"sequence name {sequence.name!r} cannot be used on {dialect.name}: "
                f"{FILE_NAME_TOO_LONG}. Nothing was created; choose a shorter name"
            ) from exc
        if _is(exc, _NAME_TAKEN_CODES, _NAME_TAKEN_TEXTS + _SPANNER_NAME_TAKEN):
            raise SequenceExistsError(
                f"sequence {sequence.name!r} cannot be created: another object of the database "
                "has that name and it is not a sequence (a table, a view, an index), or a "
                "sequence another session created meanwhile. The server said: "
                f"{_server_text(exc)}. Nothing was created; give the sequence another name, "
                "or rename that object"
            ) from exc
        raise


@contextmanager
def drop_refusals(sequence: sa.Sequence, error: type[SeqKeysError]) -> Iterator[None]:
    """A ``DROP SEQUENCE`` inside refused as other objects depend on it raises ``error``.

    PostgreSQL (and SQL Server) keep a sequence that a column's ``DEFAULT
    nextval(...)`` or a view uses; MariaDB drops it all the same.
    """
    try:
        yield
    except Exception as exc:
        if not _is(exc, _DEPENDED_ON_CODES, _DEPENDED_ON_TEXTS + _SPANNER_DEPENDED_ON):
            raise
        raise error(
            f"sequence {sequence.name!r} was not dropped: other objects depend on it. The "
            f"server said: {_server_text(exc)}. Nothing was dropped. Remove what uses it "
            "first (a column default: ALTER TABLE ... ALTER COLUMN ... DROP DEFAULT; a view: "
            "DROP VIEW), then drop it again"
        ) from exc
