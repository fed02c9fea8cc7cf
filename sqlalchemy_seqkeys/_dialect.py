"""What this library knows about each engine, in one place.

Other modules ask a question here (``facts(dialect).guid_storage``,
``incrementing_sequences(dialect)``, ``insert_ignoring_conflict(...)``)
instead of keeping their own tables of dialect names: one small record per
engine family, with a common fallback (geoalchemy2's ``select_dialect``)::

    >>> from sqlalchemy.dialects import mssql, mysql
    >>> facts(mssql.dialect()).guid_order
    'at_end'
    >>> family(mysql.dialect()), facts("mariadb").names_ignore_case
    ('mysql', True)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine.interfaces import Dialect

from sqlalchemy_seqkeys.errors import SeqKeysError

__all__ = [
    "FILE_NAME_TOO_LONG",
    "DialectFacts",
    "check_identifier",
    "create_native_sequence",
    "dialect_key",
    "facts",
    "family",
    "file_name_too_long",
    "has_facts",
    "identifier_problem",
    "identifier_text",
    "incrementing_sequences",
    "insert_ignoring_conflict",
    "mariadb_uuid_keeps_v7_order",
    "native_sequences",
]


def dialect_key(dialect: Dialect | str) -> str:
    """``"spanner"`` for sqlalchemy-spanner's ``"spanner+spanner"``; other names as they are."""
    name = dialect if isinstance(dialect, str) else dialect.name
    return name.partition("+")[0]


def family(dialect: Dialect | str) -> str:
    """The engine family: :func:`dialect_key`, with MariaDB counted as MySQL.

    Example::

        >>> family("mariadb+pymysql"), family("spanner+spanner")
        ('mysql', 'spanner')
    """
    key = dialect_key(dialect)
    return "mysql" if key == "mariadb" else key


@dataclass(frozen=True)
class DialectFacts:
    """One engine family's answers; an unknown engine gets the defaults."""

    #: the name users read in messages
    display_name: str = ""
    #: how a GUID column is stored: a key of ``types._STORAGE``
    guid_storage: str = "char_binary"
    #: the COMB layout whose ORDER BY follows minting order; None: mint uuid4
    #: (Spanner, where time order is a write hotspot)
    guid_order: str | None = "as_string"
    #: a plain INTEGER is 64 bits (a with_variant(Integer(), ...) key is fine)
    integer_is_64_bits: bool = False
    #: table sequences: "last_insert_id" (MySQL's LAST_INSERT_ID(expr)), or
    #: None: UPDATE ... RETURNING where the dialect has it, else compare-and-swap
    allocate_by: str | None = None
    #: the allocation statement is atomic alone and the driver switches
    #: autocommit without a round trip: no BEGIN/COMMIT around it
    autocommit_allocation: bool = False
    #: worker-lease writes run in AUTOCOMMIT: each is one compare-and-set that
    #: the server commits as it runs it, so a client paused (SIGSTOP, a VM
    #: suspended) between a write and its COMMIT holds no row lock that the next
    #: claimer would wait on. Spanner aborts a transaction idle for 10 s, and its
    #: DBAPI warns on each COMMIT in autocommit: it keeps transactions
    lease_autocommit: bool = True
    #: one writer at a time: a connection in a write transaction holds the
    #: database's lock (an allocation must stay on that connection)
    single_writer_lock: bool = False
    #: a default-collated name column ignores case (tables of version 0.1)
    names_ignore_case: bool = False
    #: where a native sequence's increment and cycling are read: a key of
    #: ``pooled._CATALOGS``; None: not known here
    sequence_catalog: str | None = None
    #: how a native sequence is moved past a value: a key of
    #: ``pooled._RESYNC_STATEMENTS``; None: not supported
    sequence_resync: str | None = None
    #: CREATE SEQUENCE makes bit-reversed sequences only (no INCREMENT BY)
    bit_reversed_sequences_only: bool = False
    #: a shard column is a generated column the database fills (else the
    #: library fills it client-side)
    generates_shard_columns: bool = False
    #: the server's current time in Unix milliseconds, as SQL (worker leases)
    now_ms_sql: str = "CAST((EXTRACT(EPOCH FROM CURRENT_TIMESTAMP) * 1000) AS BIGINT)"
    #: the longest identifier in characters / in UTF-8 bytes (None: no limit known)
    identifier_chars: int | None = None
    identifier_bytes: int | None = None
    #: identifiers hold characters up to U+FFFF only
    identifier_bmp_only: bool = False
    #: identifiers must match this (a regular expression), what it says in words
    identifier_pattern: str | None = None
    identifier_pattern_words: str = ""


_COMMON = DialectFacts()
_FACTS: dict[str, DialectFacts] = {
    "postgresql": DialectFacts(
        display_name="PostgreSQL",
        guid_storage="native_uuid",
        autocommit_allocation=True,
        sequence_catalog="pg_sequence",
        sequence_resync="setval",
        now_ms_sql="CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)",
        identifier_bytes=63,  # NAMEDATALEN - 1; longer ones are cut there, silently
    ),
    "mysql": DialectFacts(  # MariaDB too (family counts it as MySQL)
        display_name="MySQL/MariaDB",
        guid_storage="ascii_char_binary",
        allocate_by="last_insert_id",
        names_ignore_case=True,  # 0.1's tables took the default collation; 0.2's are utf8mb4_bin
        sequence_catalog="sequence_row",
        sequence_resync="alter_restart",
        # UNIX_TIMESTAMP(NOW(3)) converts the session's local time back, which is
        # ambiguous in the repeated autumn hour and comes out an hour early there.
        # UTC_TIMESTAMP and TIMESTAMPDIFF involve no zone at all.
        now_ms_sql="(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000)",
        identifier_chars=64,
        identifier_bmp_only=True,
    ),
    "sqlite": DialectFacts(
        display_name="SQLite",
        guid_storage="char_blob",
        integer_is_64_bits=True,
        single_writer_lock=True,
        now_ms_sql="CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)",
    ),
    "mssql": DialectFacts(
        display_name="SQL Server",
        guid_storage="uniqueidentifier",
        guid_order="at_end",  # uniqueidentifier compares bytes 10-15 first
        sequence_catalog="sys_sequences",
        identifier_chars=128,
    ),
    "oracle": DialectFacts(
        display_name="Oracle",
        guid_storage="raw16",
        sequence_catalog="all_sequences",
        identifier_bytes=128,
    ),
    "spanner": DialectFacts(
        display_name="Spanner",
        guid_storage="string_bytes_base64",
        guid_order=None,
        integer_is_64_bits=True,
        bit_reversed_sequences_only=True,
        generates_shard_columns=True,
        lease_autocommit=False,
        now_ms_sql="UNIX_MILLIS(CURRENT_TIMESTAMP())",
        identifier_chars=128,
        identifier_pattern=r"[A-Za-z][A-Za-z0-9_]*",
        identifier_pattern_words="start with an ASCII letter and hold only ASCII letters, digits "
        "and underscores",
    ),
}


def facts(dialect: Dialect | str) -> DialectFacts:
    """The answers for ``dialect`` (a Dialect or its name); defaults for an unknown engine.

    Example::

        >>> facts("sqlite").integer_is_64_bits, facts("firebird").guid_storage
        (True, 'char_binary')
    """
    return _FACTS.get(family(dialect), _COMMON)


def has_facts(dialect: Dialect | str) -> bool:
    """Whether ``dialect`` is one this library has facts for (else :func:`facts` guesses).

    Example::

        >>> has_facts("postgresql+psycopg"), has_facts("firebird")
        (True, False)
    """
    return family(dialect) in _FACTS


def native_sequences(dialect: Dialect) -> bool:
    """True where a bit-reversed sequence is a native sequence, offline included.

    MariaDB has sequences, but its dialect only learns so when it connects;
    offline (``--sql``) the ``mariadb://`` dialect is taken at its word.

    Example::

        >>> from sqlalchemy.dialects import postgresql, sqlite
        >>> native_sequences(postgresql.dialect()), native_sequences(sqlite.dialect())
        (True, False)
    """
    return bool(dialect.supports_sequences) or bool(getattr(dialect, "is_mariadb", False))


def insert_ignoring_conflict(dialect: Dialect, t: sa.Table, key: list[str]) -> sa.Insert:
    """An INSERT that inserts nothing (rowcount 0) where the primary key ``key`` exists.

    Each engine's own form, so that a conflict never aborts the transaction.

    Example::

        >>> t = sa.Table("t", sa.MetaData(), sa.Column("k", sa.Integer, primary_key=True))
        >>> print(insert_ignoring_conflict(sqlite.dialect(), t, ["k"]).compile(
        ...     dialect=sqlite.dialect()))
        INSERT INTO t (k) VALUES (?) ON CONFLICT (k) DO NOTHING
    """
    # isinstance: dialects built on these (CockroachDB's, for one) take the same form
    if isinstance(dialect, postgresql.base.PGDialect):
        return postgresql.insert(t).on_conflict_do_nothing(index_elements=key)
    if isinstance(dialect, sqlite.base.SQLiteDialect):
        return sqlite.insert(t).on_conflict_do_nothing(index_elements=key)
    name = family(dialect)
    if name == "mysql":
        return sa.insert(t).prefix_with("IGNORE")
    if name == "spanner":
        return sa.insert(t).prefix_with("OR IGNORE")
    return sa.insert(t)


def mariadb_uuid_keeps_v7_order(dialect: Dialect) -> bool:
    """True where the server's ``UUID`` type stores version-7 UUIDs in their time order.

    MariaDB's ``UUID`` type swaps the groups of a UUID before storing it, which
    scrambles time order; from 10.11.5 it swaps only versions 1 to 5 (with the
    RFC variant) and leaves UUIDs of version 6 and up as they are. A
    ``mariadb://`` dialect with no server version yet (offline SQL) counts as
    new enough; MySQL has no ``UUID`` type.
    """
    if dialect.name == "mariadb" and dialect.server_version_info is None:
        return True
    if not getattr(dialect, "is_mariadb", False):
        return False
    version = tuple(dialect.server_version_info or ())
    # MDEV-29959: fixed in 10.11.5 and 11.0.3
    return version >= (11, 0, 3) or (10, 11, 5) <= version < (11, 0)


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
    if facts(dialect).bit_reversed_sequences_only:
        return False
    if dialect.supports_sequences:
        return True
    return bool(getattr(dialect, "is_mariadb", False)) and dialect.server_version_info is None


# -- bit-reversed sequences (bitreverse.py) ----------------------------------------

#: per engine family: the one statement that fetches a block of a native
#: sequence's values, a key of ``bitreverse._BLOCK_STATEMENTS``. Engines not
#: listed (Oracle, SQL Server: not verified here) take one statement per value.
_BIT_REVERSED_BLOCKS: dict[str, str] = {
    "postgresql": "generate_series",
    "mysql": "seq_table",  # MariaDB's SEQUENCE engine (MySQL has no sequences)
    "spanner": "generate_array",
}


def bit_reversed_block(dialect: Dialect | str) -> str | None:
    """How a block of a native sequence's values is fetched in one statement; None: not here.

    Example::

        >>> bit_reversed_block("mariadb"), bit_reversed_block("oracle")
        ('seq_table', None)
    """
    return _BIT_REVERSED_BLOCKS.get(family(dialect))


def natively_bit_reversed(dialect: Dialect | str) -> bool:
    """True where an ``sqlalchemy.Sequence`` hands out bit-reversed values itself.

    sqlalchemy-spanner creates its sequences as ``bit_reversed_positive``.

    Example::

        >>> natively_bit_reversed("spanner+spanner"), natively_bit_reversed("postgresql")
        (True, False)
    """
    return facts(dialect).bit_reversed_sequences_only


__all__ += ["bit_reversed_block", "natively_bit_reversed"]


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


def identifier_problem(dialect: Dialect | str, name: str) -> str | None:
    """Why ``name`` cannot be an identifier (a sequence, table or column) here; None if it can.

    Example::

        >>> identifier_problem("postgresql", "a" * 64)[:43]
        'PostgreSQL identifiers are at most 63 bytes'
        >>> identifier_problem("spanner+spanner", "order_id") is None
        True
    """
    return _problem(dialect if isinstance(dialect, str) else dialect.name, name)


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


def create_native_sequence(
    conn: sa.Connection, sequence: sa.Sequence, *, checkfirst: bool, error: type[SeqKeysError]
) -> None:
    """``sequence.create(conn)``; a name MariaDB refuses for its file name raises ``error``."""
    try:
        sequence.create(conn, checkfirst=checkfirst)
    except sa.exc.DBAPIError as exc:
        if not file_name_too_long(exc):
            raise
        raise error(
            f"sequence name {sequence.name!r} cannot be used on {conn.dialect.name}: "
            f"{FILE_NAME_TOO_LONG}. Nothing was created; choose a shorter name"
        ) from exc


def identifier_text(dialect: Dialect, name: str, schema: str | None = None) -> str:
    """``name`` (in ``schema``) as the server reads it in SQL: quoted where needed, quotes doubled.

    For a bound value the server parses as a name (``to_regclass(:name)``) or
    a text the caller escapes for its own use. Unlike the dialect's
    ``identifier_preparer.quote``, it does not double ``%`` for the driver: that
    belongs to compiled statement text only, and in a value it names another
    object (``q%x`` would become ``q%%x``).

    Example::

        >>> from sqlalchemy.dialects import mysql, postgresql
        >>> identifier_text(postgresql.dialect(), 'q%"x', "s")
        's."q%""x"'
        >>> identifier_text(mysql.dialect(), "a`b")
        '`a``b`'
    """
    preparer = dialect.identifier_preparer

    def quoted(part: str) -> str:
        if preparer.quote(part) == part:  # a plain name, written as the compiler writes it
            return part
        escaped = part.replace(preparer.escape_quote, preparer.escape_to_quote)
        return f"{preparer.initial_quote}{escaped}{preparer.final_quote}"

    return quoted(name) if schema is None else f"{quoted(schema)}.{quoted(name)}"
