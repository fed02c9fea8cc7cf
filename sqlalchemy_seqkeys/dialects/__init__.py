"""What this library knows and does per engine family: one module each, loaded at first use.

Modeled on geoalchemy2's ``admin/dialects``: :func:`facts` finds a dialect's
family (MariaDB counts as MySQL) and returns the :class:`DialectFacts` of
``sqlalchemy_seqkeys.dialects.<family>``, or of :mod:`.common` for an engine
this library does not know. The record holds values and behaviour (how a GUID
is stored, how a native sequence's catalog is read, how one is resynced), never
a name to look up elsewhere: a missing behaviour is None, and callers say what
they do then. A family module is imported only when a dialect of it is used.
See ``docs/architecture.md``.
"""

from __future__ import annotations

import base64
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, Protocol

import sqlalchemy as sa
from sqlalchemy import text
from sqlalchemy import types as sqltypes
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.expression import ClauseElement, Executable

if TYPE_CHECKING:
    from sqlalchemy.engine.interfaces import Dialect

    from sqlalchemy_seqkeys.comb import CombLayout

__all__ = [
    "FAMILIES",
    "BlockStatement",
    "CatalogReader",
    "DialectFacts",
    "GuidStorage",
    "NextValueReader",
    "ResyncBuilder",
    "SequenceResync",
    "Statement",
    "catalog_reader",
    "dialect_key",
    "facts",
    "family",
    "has_facts",
    "identifier_text",
    "read_catalog_by_name",
    "read_sequence_catalog",
    "sequence_name_value",
    "sequence_relation",
    "sequence_schema",
    "server_named",
    "server_version",
]


def dialect_key(dialect: Dialect | str) -> str:
    """``"spanner"`` for sqlalchemy-spanner's ``"spanner+spanner"``; other names as they are.

    :param dialect: a Dialect, or a dialect name (``"postgresql+psycopg"``).
    """
    name = dialect if isinstance(dialect, str) else dialect.name
    return name.partition("+")[0]


def family(dialect: Dialect | str) -> str:
    """The engine family: :func:`dialect_key`, with MariaDB counted as MySQL.

    :param dialect: a Dialect, or a dialect name.

    Example::

        >>> family("mariadb+pymysql"), family("spanner+spanner")
        ('mysql', 'spanner')
    """
    key = dialect_key(dialect)
    return "mysql" if key == "mariadb" else key


@dataclass(frozen=True)
class GuidStorage:
    """How a :class:`~sqlalchemy_seqkeys.CombGuid` column is stored on one engine."""

    text: sqltypes.TypeEngine[Any]
    binary: sqltypes.TypeEngine[Any]
    #: "native" (the driver takes uuid.UUID), "text" (36 chars) or "bytes" (16)
    text_form: str = "text"
    binary_form: str = "bytes"
    #: how an offline script writes 16 bytes, given their hex
    bytes_literal: str = "X'{}'"
    #: what the driver returns for a binary column, turned into the 16 bytes
    read_bytes: Callable[[bytes], bytes] = bytes

    @classmethod
    def native(cls, type_: sqltypes.TypeEngine[Any]) -> GuidStorage:
        """The engine's own UUID type for both forms; the driver exchanges ``uuid.UUID``.

        ``binary=True`` changes nothing there: the type is 16 bytes already.

        :param type_: the UUID type, made to take and return ``uuid.UUID``
            (``as_uuid=True``).

        Example::

            >>> from sqlalchemy.dialects import postgresql
            >>> GuidStorage.native(postgresql.UUID(as_uuid=True)).binary_form
            'native'
        """
        return cls(text=type_, binary=type_, text_form="native", binary_form="native")


#: CHAR(36) or BINARY(16): an engine this library does not know
GENERIC_STORAGE = GuidStorage(text=sqltypes.CHAR(36), binary=sqltypes.BINARY(16))
#: Spanner's DB-API returns BYTES values base64-encoded
BASE64_BYTES_STORAGE = GuidStorage(
    text=sqltypes.String(36),
    binary=sqltypes.LargeBinary(16),
    bytes_literal="FROM_HEX('{}')",
    read_bytes=base64.b64decode,
)


class SequenceResync(Protocol):
    """What a resync statement builder reads: the native sequence and ``MAX(column)``."""

    @property
    def dialect(self) -> Dialect: ...

    @property
    def sequence(self) -> sa.Sequence:
        """Compiled as an identifier: the executing connection's schema_translate_map applies."""
        ...

    @property
    def name_value(self) -> str:
        """The sequence's quoted name, its schema translated, as a value for the server."""
        ...

    @property
    def top(self) -> sa.Subquery:
        """``SELECT MAX(column) AS m``."""
        ...


class Statement(Executable, ClauseElement):
    """A statement the library writes, its ``{}`` filled by the compiler with ``parts``.

    A part that is a sequence is written as its quoted name (with its schema,
    a ``schema_translate_map`` applied); any other part is compiled as SQL.

    :param template: the statement, never a user's text: names go in ``parts``.
    :param parts: one sequence or SQL expression per ``{}``.
    """

    inherit_cache = False

    def __init__(self, template: str, *parts: sa.Sequence | ClauseElement) -> None:
        self.template = template
        self.parts = parts


@compiles(Statement)
def _compile_statement(element: Statement, compiler: Any, **kw: Any) -> str:
    return element.template.format(
        *(
            compiler.preparer.format_sequence(part)
            if isinstance(part, sa.Sequence)
            else compiler.process(part, **kw)
            for part in element.parts
        )
    )


#: a native sequence's (increment, cycles) from the catalog; None: no such sequence
CatalogReader = Callable[["sa.Connection", "sa.Sequence"], "tuple[int, bool] | None"]
#: the statements that move a native sequence past MAX(column), never backwards
ResyncBuilder = Callable[[SequenceResync], "list[sa.Executable]"]
#: one statement that returns ``n`` values of a native sequence (a block of counters)
BlockStatement = Callable[["sa.Sequence", int], "sa.Select[Any]"]
#: the lowest and the highest value a native sequence's next nextval may return
#: (given its increment), read without calling it: the same twice where the
#: engine stores the next value, a range where the server caches values; None: not known
NextValueReader = Callable[["sa.Connection", "sa.Sequence", int], "tuple[int, int] | None"]
#: how many values each session of the server takes of a native sequence at once
#: (its ``CACHE``); None: no such sequence
SessionCacheReader = Callable[["sa.Connection", "sa.Sequence"], "int | None"]


@dataclass(frozen=True, kw_only=True)
class DialectFacts:
    """One engine family's answers and behaviour; :mod:`.common` for an unknown engine."""

    #: the name users read in messages
    display_name: str = ""
    #: how a GUID column is stored
    guid_storage: GuidStorage = GENERIC_STORAGE
    #: the COMB layout whose ORDER BY follows minting order; None: mint uuid4
    #: (Spanner, where time order is a write hotspot)
    guid_order: CombLayout | None
    #: a plain INTEGER is 64 bits (a with_variant(Integer(), ...) key is fine)
    integer_is_64_bits: bool = False
    #: table sequences allocate with MySQL's ``LAST_INSERT_ID(expr)``; else
    #: UPDATE ... RETURNING where the dialect has it, or compare-and-swap
    allocates_with_last_insert_id: bool = False
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
    #: ``SELECT ... FOR UPDATE`` locks the rows it reads (False: refused, or no such
    #: clause; Spanner's read-write transaction locks what it reads without it)
    select_for_update: bool = True
    #: a default-collated name column ignores case (tables of version 0.1)
    names_ignore_case: bool = False
    #: reads a native sequence's increment and cycling; None: not known here
    read_sequence_catalog: CatalogReader | None = None
    #: moves a native sequence past a value; None: not supported here
    resync_statements: ResyncBuilder | None = None
    #: reads what a native sequence hands out next (doctor); None: not known here
    read_sequence_next: NextValueReader | None = None
    #: reads a native sequence's per-session cache (above 1, sessions hand out values
    #: below the ones others took since); None: the engine has no per-session cache
    read_session_cache: SessionCacheReader | None = None
    #: fetches a block of a native sequence's values in one statement
    #: (bit-reversed sequences); None: one statement per value
    sequence_block: BlockStatement | None = None
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


#: the families with a module of their own here
FAMILIES = frozenset({"postgresql", "mysql", "sqlite", "mssql", "oracle", "spanner"})


@cache
def _load(name: str) -> DialectFacts:
    module = importlib.import_module(f"{__name__}.{name}")
    found = module.FACTS
    if not isinstance(found, DialectFacts):  # pragma: no cover - a broken family module
        raise TypeError(f"{module.__name__}.FACTS is {found!r}, not a DialectFacts")
    return found


def facts(dialect: Dialect | str) -> DialectFacts:
    """The answers for ``dialect`` (a Dialect or its name); :mod:`.common` for an unknown engine.

    Raises :class:`TypeError` for anything but a Dialect or a name.

    :param dialect: a Dialect, or a dialect name (``"mariadb+pymysql"`` reads MySQL's).

    Example::

        >>> facts("sqlite").integer_is_64_bits, facts("firebird") is facts("informix")
        (True, True)
    """
    if not isinstance(dialect, str) and not isinstance(getattr(dialect, "name", None), str):
        raise TypeError(f"facts() takes a Dialect or a dialect name, not {dialect!r}")
    name = family(dialect)
    return _load(name if name in FAMILIES else "common")


def has_facts(dialect: Dialect | str) -> bool:
    """Whether ``dialect`` is one this library has a module for (else :func:`facts` guesses).

    :param dialect: a Dialect, or a dialect name.

    Example::

        >>> has_facts("postgresql+psycopg"), has_facts("firebird")
        (True, False)
    """
    return family(dialect) in FAMILIES


def server_version(dialect: Dialect) -> tuple[int, ...] | None:
    """The leading numbers of the server's version; None where the dialect does not know it.

    Some servers add words after the numbers (MariaDB's ``-MariaDB``); a
    dialect that never connected (offline SQL) knows no version.

    :param dialect: the Dialect, connected or not.

    Example::

        >>> from sqlalchemy.dialects import mysql
        >>> dialect = mysql.dialect()
        >>> server_version(dialect) is None
        True
        >>> dialect.server_version_info = (10, 11, 5, "MariaDB")
        >>> server_version(dialect)
        (10, 11, 5)
    """
    info = dialect.server_version_info
    if not info:
        return None
    numbers = []
    for part in info:
        if not isinstance(part, int):
            break
        numbers.append(part)
    return tuple(numbers)


def server_named(name: str, dialect: Dialect) -> str:
    """``name`` and the server's version as the dialect reports it, for messages.

    :param name: what users call the server (``"MariaDB"``).
    :param dialect: the Dialect; without a known version, ``name`` alone.

    Example::

        >>> from sqlalchemy.dialects import postgresql
        >>> dialect = postgresql.dialect()
        >>> server_named("PostgreSQL", dialect)
        'PostgreSQL'
        >>> dialect.server_version_info = (17, 2)
        >>> server_named("PostgreSQL", dialect)
        'PostgreSQL 17.2'
    """
    info = dialect.server_version_info
    return name if not info else f"{name} " + ".".join(str(part) for part in info)


def identifier_text(dialect: Dialect, name: str, schema: str | None = None) -> str:
    """``name`` (in ``schema``) as the server reads it in SQL: quoted where needed, quotes doubled.

    For a bound value the server parses as a name (``to_regclass(:name)``) or
    a text the caller escapes for its own use. Unlike the dialect's
    ``identifier_preparer.quote``, it does not double ``%`` for the driver: that
    belongs to compiled statement text only, and in a value it names another
    object (``q%x`` would become ``q%%x``).

    :param dialect: the Dialect whose quoting rules apply.
    :param name: the object's name, as declared (not quoted).
    :param schema: its schema, as declared; None: no schema written.

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


def sequence_schema(conn: sa.Connection, sequence: sa.Sequence) -> str | None:
    """The sequence's schema, as the connection's schema_translate_map makes it.

    :param conn: a connection to the database (its execution options are read).
    :param sequence: the sequence, as declared.
    """
    schema = sequence.schema
    translate = conn.get_execution_options().get("schema_translate_map")
    if translate and schema in translate:
        schema = translate[schema]
    return schema


def sequence_name_value(conn: sa.Connection, sequence: sa.Sequence) -> str:
    """The sequence's quoted name (schema translated) as a value for the server to parse.

    :param conn: a connection to the database; its ``schema_translate_map`` applies.
    :param sequence: the sequence, as declared.
    """
    return identifier_text(conn.dialect, sequence.name, sequence_schema(conn, sequence))


def read_catalog_by_name(
    conn: sa.Connection, sequence: sa.Sequence, query: sa.TextClause
) -> tuple[int, bool] | None:
    """``(increment, cycles)`` from the catalog row ``query`` selects for the sequence's name.

    :param conn: a connection; the name is quoted for its dialect and its schema
        translated by its ``schema_translate_map``.
    :param sequence: the native sequence, as declared.
    :param query: a catalog query of the sequence's increment and cycle flag, in
        that order, taking the name as ``:name``; no row: no such sequence (None).
    """
    row = conn.execute(query, {"name": sequence_name_value(conn, sequence)}).first()
    return None if row is None else (int(row[0]), bool(row[1]))


def sequence_relation(sequence: sa.Sequence, *columns: str) -> sa.Table:
    """A native sequence read as the relation it is (PostgreSQL, MariaDB), with ``columns``.

    A ``Table``, not ``sa.table()``: only a Table follows the connection's
    ``schema_translate_map``, so a tenant's statement reads the tenant's sequence.

    :param sequence: the native sequence, as declared (``sa.Sequence``).
    :param columns: the names of the columns the statement reads.

    Example::

        >>> import sqlalchemy as sa
        >>> relation = sequence_relation(sa.Sequence("order_id"), "last_value")
        >>> print(sa.select(relation.c.last_value))
        SELECT order_id.last_value
        FROM order_id
    """
    return sa.Table(
        sequence.name,
        sa.MetaData(),
        *(sa.Column(name) for name in columns),
        schema=sequence.schema,
    )


def catalog_reader(query: str, catalog: str) -> CatalogReader:
    """The :data:`CatalogReader` of an engine whose catalog finds a sequence by its name.

    The reader runs ``query`` with the sequence's name as :func:`read_catalog_by_name`
    gives it: no row is no such sequence (None); an error of the server is raised.

    :param query: SQL of the sequence's increment and cycle flag, in that order,
        taking the name as ``:name``, its only parameter (else :class:`ValueError`
        here: a query blind to the name would read some other sequence's row).
    :param catalog: what it reads, for the reader's docstring (``"pg_sequence"``).

    Example::

        >>> import sqlalchemy as sa
        >>> read = catalog_reader("SELECT 5, 1 WHERE :name = 'orders_id'", "a catalog")
        >>> with sa.create_engine("sqlite://").connect() as conn:
        ...     read(conn, sa.Sequence("orders_id")), read(conn, sa.Sequence("other"))
        ((5, True), None)
    """
    statement = text(query)
    if set(statement.compile().params) != {"name"}:
        raise ValueError(
            f"a catalog query takes the sequence's name as :name, its only parameter: {query!r}"
        )

    def read_catalog(conn: sa.Connection, sequence: sa.Sequence) -> tuple[int, bool] | None:
        return read_catalog_by_name(conn, sequence, statement)

    read_catalog.__doc__ = (
        f"``(increment, cycles)`` of ``sequence`` from ``{catalog}``; None if there is none.\n\n"
        ":param conn: a connection; the sequence's name reaches the query quoted, its schema\n"
        "    translated by the connection's ``schema_translate_map``.\n"
        ":param sequence: the native sequence, as declared (``sa.Sequence``).\n"
    )
    return read_catalog


def read_sequence_catalog(conn: sa.Connection, sequence: sa.Sequence) -> tuple[int, bool] | None:
    """A native sequence's ``INCREMENT BY`` and whether it cycles, as the catalog says.

    None where there is no such sequence, or the engine's catalog is not known
    here (``facts(dialect).read_sequence_catalog`` is None). Reads only.

    :param conn: a connection to the database; its ``schema_translate_map`` applies.
    :param sequence: the native sequence, as declared (``sa.Sequence``).
    """
    read = facts(conn.dialect).read_sequence_catalog
    return None if read is None else read(conn, sequence)
