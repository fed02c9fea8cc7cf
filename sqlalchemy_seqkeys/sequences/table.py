"""The ``sequences(name, next_value)`` table and one atomic allocation per dialect.

A table sequence is a row: ``name`` (the primary key) and ``next_value``, the next
value it hands out. :func:`allocate` moves ``next_value`` up by ``n`` in one
statement that never passes the BIGINT maximum; :func:`create_table_sequence` and
:func:`drop_table_sequence` add and delete rows. Names are bound parameters and
compare exactly on every engine (``utf8mb4_bin`` on MySQL and MariaDB).

User guide: docs/strategies/table-sequences.md.
"""

from __future__ import annotations

import contextlib
import threading
import unicodedata
import weakref
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import Any, NoReturn, TypeVar

import sqlalchemy as sa

from sqlalchemy_seqkeys import _fork
from sqlalchemy_seqkeys import _validate as validate
from sqlalchemy_seqkeys._aio import pause
from sqlalchemy_seqkeys._compat import (
    connect_listened,
    pool_connect_listened,
    pool_creator,
    schema_map_for_statement,
    url_connect_params,
)
from sqlalchemy_seqkeys._dialect import check_identifier, facts, family, ignores_conflicts
from sqlalchemy_seqkeys._dialect import insert_ignoring_conflict as insert_ignoring_conflict
from sqlalchemy_seqkeys._validate import check_int
from sqlalchemy_seqkeys.errors import (
    InvalidSequenceError,
    SeqKeysError,
    SequenceAllocationError,
    SequenceExhaustedError,
    SequenceExistsError,
    SequenceNotFoundError,
    SequencesTableNotFoundError,
)

from . import _aio
from ._retry import error_in_callers_transaction, retrying

__all__ = [
    "EXACT_NAME_COLLATION",
    "MAX_VALUE",
    "NAME_LENGTH",
    "allocate",
    "check_exact_names",
    "create_table_sequence",
    "create_table_sequence_async",
    "drop_table_sequence",
    "drop_table_sequence_async",
    "forget_exact_names",
    "inexact_collation",
    "name_type",
    "read_next_value",
    "sequences_table",
    "sequences_table_exists",
    "wrote_row",
    "wrote_row_here",
]

#: BIGINT's maximum. ``next_value`` never passes it, so the largest value a
#: sequence hands out is ``MAX_VALUE - 1``.
MAX_VALUE = 2**63 - 1
#: The longest sequence name the table holds.
NAME_LENGTH = 64
T = TypeVar("T")

DEFAULT_TABLE = "sequences"
#: The ``name`` column's collation on MySQL and MariaDB: byte for byte, so
#: names differing only in case are different sequences.
EXACT_NAME_COLLATION = "utf8mb4_bin"


def check_name(name: object) -> str:
    """Return ``name`` if it can name a sequence, else raise InvalidSequenceError."""
    text: str = validate.check_name(
        name, "a sequence name", InvalidSequenceError, max_length=NAME_LENGTH
    )
    for char in text:
        if unicodedata.category(char) == "Cc":  # NUL: PostgreSQL cannot store it
            raise InvalidSequenceError(
                f"sequence name {name!r} holds the control character {char!r}; "
                "use printable characters only"
            )
    if text[-1].isspace():  # MySQL's utf8mb4_bin compares 'a' and 'a ' as equal
        raise InvalidSequenceError(
            f"sequence name {name!r} ends with whitespace, which MySQL and MariaDB "
            "ignore when they compare names; remove it"
        )
    return text


def name_type() -> sa.types.TypeEngine[str]:
    """The ``name`` column's type: VARCHAR(64), compared byte for byte on MySQL/MariaDB.

    Example::

        >>> from sqlalchemy.dialects import mysql
        >>> name_type().compile(dialect=mysql.dialect())
        'VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin'
    """
    from sqlalchemy.dialects import mysql  # when a sequences table is declared, not before

    exact = mysql.VARCHAR(NAME_LENGTH, charset="utf8mb4", collation=EXACT_NAME_COLLATION)
    return sa.String(NAME_LENGTH).with_variant(exact, "mysql", "mariadb")


def sequences_table(metadata: sa.MetaData, name: str = DEFAULT_TABLE) -> sa.Table:
    """Declare the sequences table on ``metadata`` (or return the one already there).

    ``name VARCHAR(64)`` primary key, ``next_value BIGINT NOT NULL``; on Spanner
    ``STRING(64)`` and ``INT64``, as in Spanner's own sequence guide; on MySQL
    and MariaDB the name is ``CHARACTER SET utf8mb4 COLLATE utf8mb4_bin``, so
    that names compare exactly, as on the other engines.

    :param metadata: the ``MetaData`` to declare it on.
    :param name: the table's name.

    Example::

        metadata = sa.MetaData()
        sequences_table(metadata)
        metadata.create_all(engine)
    """
    return library_table(
        metadata,
        name,
        "sequences",
        sa.Column("name", name_type(), primary_key=True),
        sa.Column("next_value", sa.BigInteger, nullable=False, autoincrement=False),
        error=InvalidSequenceError,
    )


def library_table(
    metadata: sa.MetaData,
    name: str,
    kind: str,
    *columns: sa.Column[Any],
    error: type[SeqKeysError] | None = None,
) -> sa.Table:
    """``metadata``'s table ``name``, declared with ``columns`` unless it is there already.

    A table this library declares is tagged ``info={"seqkeys": kind}`` (how
    Alembic autogenerate knows it). With ``error``, a table already there must
    have the same columns, else ``error`` is raised. Example::

        >>> t = library_table(sa.MetaData(), "t", "demo", sa.Column("k", sa.Integer))
        >>> t.info, library_table(t.metadata, "t", "demo") is t
        ({'seqkeys': 'demo'}, True)
    """
    validate.check_instance(metadata, sa.MetaData, "metadata", error or SeqKeysError)
    validate.check_name(name, "name", error or SeqKeysError)
    existing = metadata.tables.get(name)
    if existing is None:
        return sa.Table(name, metadata, *columns, info={"seqkeys": kind})
    wanted = [c.name for c in columns]
    if error is not None and {c.name for c in existing.columns} != set(wanted):
        raise error(
            f"metadata already has a table {name!r} that is not a {kind} table "
            f"(columns {', '.join(wanted)}); pass another name"
        )
    return existing


@lru_cache(maxsize=64)
def table_clause(table: str) -> sa.Table:
    """The sequences table ``table`` for statements: a Table of its own MetaData (cached).

    Not a lightweight table clause: some dialects' compilers read Column-only
    attributes for RETURNING.
    """
    return sequences_table(sa.MetaData(), table)


def _bump(t: sa.Table) -> sa.Update:
    return sa.update(t).where(
        t.c.name == sa.bindparam("seq_name"),
        t.c.next_value <= sa.bindparam("ceiling", type_=sa.BigInteger),
    )


@lru_cache(maxsize=64)
def _returning_statement(table: str) -> sa.Update:
    t = table_clause(table)
    return (
        _bump(t)
        .values(next_value=t.c.next_value + sa.bindparam("n", type_=sa.BigInteger))
        .returning(t.c.next_value)
    )


@lru_cache(maxsize=64)
def _last_insert_id_statement(table: str) -> sa.Update:
    t = table_clause(table)
    return _bump(t).values(
        next_value=sa.func.last_insert_id(t.c.next_value + sa.bindparam("n", type_=sa.BigInteger))
    )


@lru_cache(maxsize=64)
def _read_statement(table: str) -> sa.Select[Any]:
    t = table_clause(table)
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
    t = table_clause(table)
    return (
        sa.update(t)
        .where(
            t.c.name == sa.bindparam("seq_name"),
            t.c.next_value == sa.bindparam("expected", type_=sa.BigInteger),
        )
        .values(next_value=t.c.next_value + sa.bindparam("n", type_=sa.BigInteger))
    )


# -- what this process received from each sequence, per database -------------------


def tenant_of(bind: sa.Engine | sa.Connection) -> object:
    """The tenant ``bind`` serves: its schema_translate_map as a hashable key (None: none).

    SQLAlchemy adds ``"_none"`` (a copy of the ``None`` entry) to the map in place
    at its first statement: left out, so the map is one tenant before and after.
    """
    translate = bind.get_execution_options().get("schema_translate_map")
    if not translate:
        return None
    items = translate.items()
    if None in translate and "_none" in translate:
        items = [(k, v) for k, v in items if k != "_none"]
    return tuple(sorted(items, key=repr))


def statement_map(context: Any) -> Any:
    """The schema_translate_map a statement was given on top of its connection's, else ``False``.

    ``conn.execute(insert, execution_options={"schema_translate_map": ...})``
    sends the row to the tenant's table, but the default's connection
    (``context.connection``) does not carry the map: its key must come from the
    tenant's sequence all the same (:func:`with_schema_map`). Two lookups per row.
    """
    translate = context.execution_options.get("schema_translate_map")
    if translate is context.connection.get_execution_options().get("schema_translate_map"):
        return False
    return translate


def with_schema_map(conn: sa.Connection, translate: Any, take: Callable[[], T]) -> T:
    """``take()`` with ``translate`` as ``conn``'s schema_translate_map, then the options before.

    Everything ``take`` runs on ``conn`` (and the engine derived from it for
    allocations of their own) then reaches the statement's tenant. Afterwards
    ``conn`` has exactly the execution options object it had: a map set back
    to None would outrank every later statement's map on it.
    """
    with schema_map_for_statement(conn, translate):
        return take()


def _in_memory(url: sa.URL) -> bool:
    # every in-memory SQLite engine has a database of its own under one URL
    return url.get_backend_name() == "sqlite" and (
        url.database in (None, "", ":memory:") or url.query.get("mode") == "memory"
    )


@lru_cache(maxsize=256)
def _database(url: sa.URL) -> sa.URL:
    # The database, whatever the driver: a sync and an asyncio engine on one
    # database (postgresql+psycopg, postgresql+asyncpg) share what was received.
    return url.set(drivername=url.get_backend_name())


#: connect arguments that can pick another server, database, user or default schema
#: than the URL names (libpq and psycopg, asyncpg, pg8000, the MySQL drivers, Oracle,
#: SQL Server)
_PICKING_ARGS = frozenset(
    {
        *("host", "hostaddr", "port", "server", "unix_socket", "unix_sock"),
        *("dbname", "database", "db", "dsn", "conninfo", "service", "service_name", "sid"),
        *("odbc_connect", "read_default_file", "read_default_group", "user", "username"),
        *("options", "server_settings", "init_command"),  # a search_path, a USE
    }
)


def database_key(engine: sa.Engine) -> tuple[object, bool]:
    """What tells the database ``engine`` reaches apart, and whether to hold it weakly.

    Its URL, the driver left out (a sync and an asyncio engine on one database
    share it; it outlives ``engine.dispose()`` and the engine), where the URL
    picks the database: the engine connects with ``create_engine``'s own
    function, no ``do_connect`` listener and no pool ``connect`` listener but
    SQLAlchemy's, its ``connect_args`` picking nothing the URL does not
    (``options``, ``dbname``, ``host``...: each whose value is not its own URL
    field's joins the key). Else the creator it connects with (weakly): the engine's own, kept
    by its copies, its pools after ``dispose()``, an asyncio engine's lanes; in
    a creator that cannot be held weakly, and for in-memory SQLite, the pool.
    Example::

        >>> database_key(sa.create_engine("sqlite:///a.db"))
        (sqlite:///a.db, False)
    """
    url, pool = engine.url, engine.pool
    if _in_memory(url):  # every in-memory SQLite engine has a database of its own
        return pool, True
    params = url_connect_params(pool)
    if params is None or connect_listened(engine.dialect) or pool_connect_listened(pool):
        creator = pool_creator(pool)
        try:
            weakref.ref(creator)
            hash(creator)
        except TypeError:
            return pool, True
        return creator, True
    picked = sorted(
        (name, repr(value))
        for name, value in params.items()
        if name in _PICKING_ARGS and not _from_url(url, name, value)
    )
    return (_database(url), *picked) if picked else _database(url), False


#: connect arguments -> the URL field that gives them (else only ``?name=`` does)
_URL_FIELDS = {
    **dict.fromkeys(("host", "hostaddr", "server"), "host"),
    "port": "port",
    **dict.fromkeys(("dbname", "database", "db"), "database"),
    **dict.fromkeys(("user", "username"), "username"),
}


def _from_url(url: sa.URL, name: str, value: object) -> bool:
    """Whether connect argument ``name`` is ``value`` because the URL says so: it equals
    its own URL field (``dbname``: the database) or the URL's ``?name=``, never
    another field that happens to hold the same text (a user named like the database)."""
    text = str(value)
    field = _URL_FIELDS.get(name)
    if field is not None and str(getattr(url, field)) == text:
        return True
    query = url.query.get(name)
    given = [query] if isinstance(query, str) else list(query or ())
    return text in given or (len(given) > 1 and text == ",".join(given))


class _Registry:
    """A process-wide record behind a lock that a forked child replaces.

    A child forked by libc ``fork()`` (no at-fork hook) may have inherited the
    lock held by a thread it does not have: ``_fork`` gives it a new one. What
    the parent recorded stays: its values are in use.
    """

    def __init__(self) -> None:
        self._lock_ = threading.Lock()
        _fork.register(self)

    @property
    def _lock(self) -> threading.Lock:
        _fork.forked()
        return self._lock_

    def _after_fork_in_child(self) -> None:
        self._lock_ = threading.Lock()


class Floors(_Registry):
    """The highest value this process received, per database and per key within it.

    The database is :func:`database_key`'s: by URL where the URL picks it,
    else by the engine's creator (held weakly). A key names a sequence within
    its database: a table sequence's ``(tenant, table, name)``, a native
    sequence's ``(schema as translated, name)``; its last item is the name.

    Only values from committed allocations of their own are recorded: a value
    taken in the caller's transaction returns to the sequence on rollback.
    :attr:`epoch` counts the forgets: an allocation reads it before
    :meth:`highest` and gives it to :meth:`record` and :meth:`still`, so a
    sequence created anew meanwhile is neither refused for its former self's
    values nor given them as its floor.
    """

    def __init__(self) -> None:
        super().__init__()
        #: how many times something was forgotten
        self.epoch = 0
        self._by_url: dict[object, dict[tuple[Any, ...], int]] = {}
        #: by creator, or by pool (database_key)
        self._by_owner: weakref.WeakKeyDictionary[object, dict[tuple[Any, ...], int]]
        self._by_owner = weakref.WeakKeyDictionary()

    def _slot(self, database: tuple[object, bool]) -> dict[tuple[Any, ...], int]:
        key, weak = database  # database_key(engine), worked out before the lock
        return (self._by_owner if weak else self._by_url).setdefault(key, {})

    def highest(self, engine: sa.Engine, key: tuple[Any, ...]) -> int | None:
        """The last value received from sequence ``key`` of ``engine``'s database, or None."""
        database = database_key(engine)
        with self._lock:
            return self._slot(database).get(key)

    def still(self, since: int) -> bool:
        """Whether nothing was forgotten since :attr:`epoch` was ``since``."""
        return self.epoch == since

    def record(self, engine: sa.Engine, key: tuple[Any, ...], last: int, since: int) -> None:
        """Values up to ``last`` were received from sequence ``key``, allocated since
        :attr:`epoch` was ``since``: not recorded if a sequence was forgotten meanwhile
        (they may be its former self's)."""
        database = database_key(engine)
        with self._lock:
            slot = self._slot(database)
            if self.epoch == since and slot.get(key, -1) < last:
                slot[key] = last

    def forget_named(self, name: str) -> None:
        """Forget every sequence named ``name``, on every database: it was created anew.

        The one way anything is forgotten. A sequence created or dropped through one
        engine may be reached through another whose key differs (another URL to the
        same database, ``?application_name=``), and a table through another spelling
        of its name (SQLite compares table names without case): all are forgotten.
        Forgetting more than that sequence costs only a check, never a repeated key.
        """
        with self._lock:
            self.epoch += 1
            for slot in (*self._by_url.values(), *self._by_owner.values()):
                for key in [k for k in slot if k[-1] == name]:
                    del slot[key]


#: Used by the modes that allocate in transactions of their own, keyed
#: ``(tenant, table, name)``. Creating a sequence through this library forgets
#: what was received from the name before: a sequence created anew hands out
#: its values afresh.
received = Floors()


class _BlockHolders(_Registry):
    """What holds blocks of a sequence in memory, by weak reference, keyed by the sequence.

    A sequence created or dropped through this library (a row of a sequences table:
    :func:`row_key`; a native sequence: :func:`native_key`) makes every holder of
    it forget its blocks (:meth:`forget`): a sequence created anew never hands out
    a value of its former self's blocks, which the new sequence hands out again.
    A key leaves out the tenant: a tenant's sequence created anew makes every
    tenant's holders forget, which costs a block and never repeats a key.
    """

    def __init__(self) -> None:
        super().__init__()
        self._holders: weakref.WeakKeyDictionary[Any, tuple[object, ...]]
        self._holders = weakref.WeakKeyDictionary()

    def add(self, holder: Any, key: tuple[object, ...]) -> None:
        """Keep ``holder`` (it has ``forget_blocks()``) of sequence ``key`` while it lives."""
        with self._lock:
            self._holders[holder] = key

    def forget(self, key: tuple[object, ...]) -> None:
        """Every holder of sequence ``key`` forgets the blocks it holds."""
        with self._lock:
            matching = [h for h, k in self._holders.items() if k == key]
        for holder in matching:
            holder.forget_blocks()


def row_key(table: str, name: str) -> tuple[object, ...]:
    """The :data:`block_holders` key of row ``name`` of a sequences table: its name alone.

    The table is left out, as :func:`native_key` leaves out the schema: two
    spellings of one table's name (``sequences`` and ``Sequences`` on SQLite, and
    on MySQL where table names ignore case) must reach the same holders. Rows of
    one name in two tables forget each other's blocks, which costs a block and
    never repeats a key.
    """
    return ("row", name)


def forget_row(bind: sa.Engine | sa.Connection, table: str, name: str) -> None:
    """Row ``name`` of ``table`` was created or dropped: this process forgets what it held of it
    (its blocks, and the highest value received: a row created anew starts afresh).

    By name alone, on every database and in every table and tenant
    (:meth:`Floors.forget_named`, as pooled sequences forget theirs): ``bind``
    may reach the database through another URL than the engines that allocate.
    """
    received.forget_named(name)
    block_holders.forget(row_key(table, name))


def native_key(sequence: sa.Sequence) -> tuple[object, ...]:
    """The :data:`block_holders` key of a native sequence: its name, whatever its schema.

    A migration may name the default schema (``schema="public"``) where the model
    names none: both must reach the same holders. Sequences of one name in two
    schemas forget each other's blocks, which costs a block and never repeats a key.
    """
    return ("native", sequence.name)


block_holders = _BlockHolders()


# -- rows this library wrote in a caller's transaction ------------------------------

#: ``Connection.info`` key: (the transaction, by weak reference; the names of the
#: sequence rows this library wrote or locked in it)
_WRITTEN = "seqkeys_rows_written"


def wrote_row(conn: sa.Connection, name: str) -> None:
    """Row ``name`` was written (or locked) on ``conn``, in its transaction, until that ends.

    Called by everything of this library that writes a sequence's row on a
    connection it is given (:func:`allocate`, :func:`create_table_sequence`,
    :func:`drop_table_sequence`, the resync), whether or not the statement
    matched the row. Until that transaction ends, a value of the row is taken
    on ``conn`` (:func:`wrote_row_here`): a second connection would wait for
    the lock the caller's own transaction holds (PostgreSQL: forever), or not
    see a row it created. Kept on the DBAPI connection's ``info`` with the
    transaction it belongs to, so a later transaction of the connection (a
    new one, another checkout) finds nothing. By name alone, whatever table
    or tenant: a value of another table's row of that name taken here too
    only ends in this transaction, as ``in_transaction`` values do.

    :param conn: the connection whose transaction wrote the row.
    :param name: the sequence's row name.
    """
    if conn.closed or conn.invalidated:  # a statement that lost it: nothing is held
        return
    transaction = conn.get_transaction()
    if transaction is None:  # nothing ran: nothing is locked
        return
    entry = conn.info.get(_WRITTEN)
    if entry is not None and entry[0]() is transaction:
        entry[1].add(name)
    else:
        conn.info[_WRITTEN] = (weakref.ref(transaction), {name})


def wrote_row_here(conn: sa.Connection, name: str) -> bool:
    """Whether :func:`wrote_row` recorded row ``name`` in ``conn``'s transaction under way.

    :param conn: the connection a value would be taken for.
    :param name: the sequence's row name.
    """
    entry = conn.info.get(_WRITTEN)
    if entry is None or name not in entry[1]:
        return False
    transaction = conn.get_transaction()
    return transaction is not None and entry[0]() is transaction


# -- names compare exactly: refuse a case-insensitive name column at first use -------

#: pool -> (schema, table) whose name column was found exact; only a good
#: answer is kept, so a table converted later is accepted without a restart
_exact_tables: weakref.WeakKeyDictionary[sa.pool.Pool, set[tuple[str | None, str]]] = (
    weakref.WeakKeyDictionary()
)

_COLLATION_QUERY = sa.text(
    "SELECT COLLATION_NAME FROM information_schema.COLUMNS "
    "WHERE TABLE_SCHEMA = COALESCE(:schema, DATABASE()) AND TABLE_NAME = :table "
    "AND COLUMN_NAME = 'name'"
)


def _schema_of(conn: sa.Connection) -> str | None:
    translate = conn.get_execution_options().get("schema_translate_map") or {}
    schema = translate.get(None)
    return schema if isinstance(schema, str) else None


def _mysql_inexact_collation(conn: sa.Connection, table: str) -> str | None:
    """The name column's collation if it is not binary; None if exact or no such table."""
    row = conn.execute(_COLLATION_QUERY, {"schema": _schema_of(conn), "table": table}).first()
    if row is None or row[0] is None:  # no such table; or NULL: VARBINARY, exact as well
        return None
    collation = str(row[0])
    return None if collation.lower().endswith("_bin") else collation


def _check_mysql_names(conn: sa.Connection, table: str, error: type[SeqKeysError]) -> None:
    key = (_schema_of(conn), table)
    checked = _exact_tables.get(conn.engine.pool)
    if checked is not None and key in checked:
        return
    collation = _mysql_inexact_collation(conn, table)
    if collation is not None:
        raise error(
            f"the sequences table {table!r} compares names case-insensitively (collation "
            f"{collation}), so 'Invoice_A' and 'invoice_a' would share one row; nothing was "
            "changed. Convert it once, in an Alembic migration: "
            f"op.make_sequence_names_case_sensitive({table!r}) (or run ALTER TABLE {table} "
            f"MODIFY name VARCHAR({NAME_LENGTH}) CHARACTER SET utf8mb4 COLLATE "
            f"{EXACT_NAME_COLLATION} NOT NULL)"
        )
    _exact_tables.setdefault(conn.engine.pool, set()).add(key)


def inexact_collation(conn: sa.Connection, table: str) -> str | None:
    """The collation of ``table``'s name column if it ignores case, else None.

    Only MySQL and MariaDB tables made by version 0.1 have one.

    :param conn: a connection to the database that holds the table.
    :param table: the sequences table's name.

    Example::

        inexact_collation(conn, "sequences")   # e.g. 'utf8mb4_general_ci'
    """
    if not facts(conn.dialect).names_ignore_case:
        return None
    return _mysql_inexact_collation(conn, table)


def forget_exact_names(conn: sa.Connection, table: str) -> None:
    """Forget that ``table`` was found exact: it is being created or altered.

    :param conn: a connection to the database that holds the table.
    :param table: the sequences table's name.

    Example::

        forget_exact_names(conn, "sequences")
    """
    checked = _exact_tables.get(conn.engine.pool)
    if checked is not None:
        checked.discard((_schema_of(conn), table))


def check_exact_names(
    conn: sa.Connection, table: str, error: type[SeqKeysError] = SequenceAllocationError
) -> None:
    """Raise ``error`` if ``table`` compares sequence names case-insensitively.

    Only MySQL and MariaDB have such collations; a table found exact is not
    asked about again by the same pool.

    :param conn: a connection to the database that holds the table.
    :param table: the sequences table's name.
    :param error: the :class:`~sqlalchemy_seqkeys.SeqKeysError` subclass to raise.

    Example::

        check_exact_names(conn, "sequences")
    """
    if facts(conn.dialect).names_ignore_case:
        _check_mysql_names(conn, table, error)


def read_next_value(
    conn: sa.Connection, name: str, *, table: str = DEFAULT_TABLE, locked: bool = False
) -> int | None:
    """The sequence's ``next_value`` as stored, or None if it has no row.

    :param conn: a connection (it reads in that connection's transaction).
    :param name: the sequence's row name.
    :param table: the sequences table's name.
    :param locked: lock the row until the transaction ends, so the value
        stays what was read: ``FOR UPDATE``, or on Spanner, whose read-write
        transaction locks what it reads, the read alone.

    Example::

        with engine.connect() as conn:
            read_next_value(conn, "invoice_id")
    """
    statement = _read_statement(table)
    if locked and facts(conn.dialect).select_for_update:
        statement = statement.with_for_update()
    with naming_missing_table(conn, table):
        value = conn.execute(statement, {"seq_name": name}).scalar()
    if locked:
        wrote_row(conn, name)
    return None if value is None else int(value)


def allocate(conn: sa.Connection, name: str, n: int = 1, *, table: str = DEFAULT_TABLE) -> int:
    """Take ``n`` values on ``conn``'s transaction; return the first (values first .. first+n-1).

    One statement, one round trip where the engine allows it. Commit (or roll
    back) is the caller's: rolled back, the values return to the sequence.
    Raises :class:`~sqlalchemy_seqkeys.SequenceNotFoundError` when the row is
    missing and :class:`~sqlalchemy_seqkeys.SequenceExhaustedError` when the
    block would pass 2**63 - 1; neither allocates anything.

    :param conn: the connection whose transaction takes the values.
    :param name: the sequence's row name.
    :param n: how many values, 1 or more.
    :param table: the sequences table's name.

    Example::

        with engine.begin() as conn:
            first = allocate(conn, "invoice_id", 200)
    """
    check_int(n, "n", InvalidSequenceError, min=1, max=MAX_VALUE)
    if name.__class__ is not str:
        check_name(name)  # says what is wrong
    params: dict[str, object] = {"seq_name": name, "n": n, "ceiling": MAX_VALUE - n}
    # a name the engine would cut short could be another table's (cached, no I/O)
    check_identifier(conn.dialect, table, "sequences table name", InvalidSequenceError)
    with naming_missing_table(conn, table):
        check_exact_names(conn, table)
    allocator: _Allocator
    if facts(conn.dialect).allocates_with_last_insert_id:
        allocator = _by_last_insert_id
    elif conn.dialect.update_returning:
        allocator = _by_returning
    else:
        allocator = _by_compare_and_swap
    try:
        with naming_missing_table(conn, table):
            new_next = allocator(conn, table, params)
            if new_next is None and _fits(read_next_value(conn, name, table=table), n):
                # The row was replaced (deleted and inserted anew: a drop and create in
                # another transaction) while the UPDATE waited for it; the new one is asked.
                new_next = allocator(conn, table, params)
    finally:
        wrote_row(conn, name)  # locked until conn's transaction ends
    if new_next is None:
        raise_missing_or_exhausted(conn, name, n, table)
    return new_next - n


def _fits(current: int | None, n: int) -> bool:
    """Whether a row at ``current`` holds a block of ``n``."""
    return current is not None and current <= MAX_VALUE - n


def raise_missing_or_exhausted(conn: sa.Connection, name: str, n: int, table: str) -> NoReturn:
    """Why a block of ``n`` was not allocated: the row is missing, or the block would overflow."""
    current = read_next_value(conn, name, table=table)
    if current is None:
        raise SequenceNotFoundError(
            f"sequence {name!r} has no row in table {table!r}; create it with "
            f"create_table_sequence(engine, {name!r}) (or TableSequence.create(engine)), "
            f"or in an Alembic migration with op.create_table_sequence({name!r})"
        )
    if _fits(current, n):
        raise SequenceAllocationError(
            f"sequence {name!r} (table {table!r}) was not allocated from: its row was "
            "replaced (dropped and created anew) by another transaction while this one "
            "waited for it, twice. Nothing was allocated; try again"
        )
    raise SequenceExhaustedError(
        f"sequence {name!r} is at {current}; a block of {n} would pass the BIGINT "
        f"maximum {MAX_VALUE}; nothing was allocated. Use a smaller batch or a new sequence"
    )


#: what the engines say when a table does not exist (PostgreSQL 42P01, MySQL
#: 1146, SQLite, Spanner): only then is the sequences table worth looking for
_NO_TABLE_HINTS = ("does not exist", "doesn't exist", "no such table", "not found", "42p01")


@contextlib.contextmanager
def naming_missing_table(conn: sa.Connection, table: str) -> Iterator[None]:
    """The block's error as SequencesTableNotFoundError where ``table`` does not exist."""
    try:
        yield
    except (sa.exc.ProgrammingError, sa.exc.OperationalError) as exc:
        raise_if_table_missing(conn, table, exc)
        raise


def raise_if_table_missing(conn: sa.Connection, table: str, exc: Exception) -> None:
    """SequencesTableNotFoundError from ``exc`` if ``table`` does not exist; else return."""
    # A ProgrammingError is a statement the server refused: always worth a look
    # (Spanner's says nothing more). Among OperationalErrors, which include
    # deadlocks and lost connections, only those that name a missing table.
    if not isinstance(exc, sa.exc.ProgrammingError) and not any(
        hint in str(exc).lower() for hint in _NO_TABLE_HINTS
    ):
        return
    # Ask on a fresh connection: the failed statement may have aborted this
    # connection's transaction (PostgreSQL). Not where the pool would hand out this
    # very DBAPI connection again (SQLite in memory): the probe's rollback would end
    # the caller's transaction, and SQLite's did not abort.
    # The schema as conn's schema_translate_map says: a tenant's table, not the default
    # schema's (the probe's connection has no map, and an inspector applies none).
    schema = conn.schema_for_object(table_clause(table))
    try:
        if isinstance(conn.engine.pool, sa.pool.SingletonThreadPool | sa.pool.StaticPool):
            exists = sa.inspect(conn).has_table(table, schema=schema)
        else:
            with conn.engine.connect() as probe:
                exists = sa.inspect(probe).has_table(table, schema=schema)
    except Exception:  # the probe is advisory; the original error is what matters
        return
    if not exists:
        where = "" if schema is None else f" in schema {schema!r}"
        raise SequencesTableNotFoundError(
            f"table {table!r} does not exist{where}; declare it with sequences_table(metadata) "
            "and create it with metadata.create_all(engine) (a tenant's: on the engine with its "
            "schema_translate_map), or in an Alembic migration with op.create_sequences_table()"
        ) from exc


def sequences_table_exists(conn: sa.Connection, table: str) -> bool:
    """Whether sequences table ``table`` exists where ``conn`` puts it.

    In the schema ``conn``'s schema_translate_map gives it (a tenant's), which
    an inspector does not apply by itself.

    :param conn: a connection, with the tenant's schema_translate_map if any.
    :param table: the sequences table's name.
    """
    schema = conn.schema_for_object(table_clause(table))
    return bool(sa.inspect(conn).has_table(table, schema=schema))


def create_table_sequence(
    bind: sa.Engine | sa.Connection,
    name: str,
    start: int = 1,
    *,
    table: str = DEFAULT_TABLE,
    checkfirst: bool = False,
) -> bool:
    """Add sequence ``name`` starting at ``start``; True if created, False if it existed.

    An existing sequence raises :class:`~sqlalchemy_seqkeys.SequenceExistsError`
    unless ``checkfirst=True`` (as ``sqlalchemy.Sequence.create``), and is
    never changed. With an Engine the row is committed here; with a
    Connection it joins that connection's transaction.

    :param bind: an Engine (a transaction of its own, committed) or a
        Connection (joins its transaction).
    :param name: the sequence's row name (up to 64 characters).
    :param start: the first value it hands out, 0 to 2**63 - 1.
    :param table: the sequences table's name.
    :param checkfirst: leave an existing sequence as it is and return False.

    Example::

        create_table_sequence(engine, "invoice_id", start=1000, checkfirst=True)
    """
    validate.check_flag(checkfirst, "checkfirst", InvalidSequenceError)
    check_name(name)
    check_int(start, "start", InvalidSequenceError, min=0, max=MAX_VALUE)
    validate.check_name(table, "table", InvalidSequenceError)
    return _changing(
        bind,
        "create_table_sequence",
        f"creating sequence {name!r} (table {table!r})",
        "the sequence was not created",
        lambda conn: _create(conn, name, start, table, checkfirst),
    )


def _changing(
    bind: sa.Engine | sa.Connection,
    function: str,
    what: str,
    outcome: str,
    change: Callable[[sa.Connection], T],
) -> T:
    """``change(conn)``: with an Engine in a transaction of its own, committed, run again
    after a transient error (a deadlock, SQLite's "database is locked"; bounded, as
    allocations are); with a Connection in its transaction, never run again.

    Every database error becomes a SeqKeysError that keeps it as its cause:
    :class:`~sqlalchemy_seqkeys.SequenceLockTimeoutError` after a lock timeout, else
    :class:`~sqlalchemy_seqkeys.SequenceAllocationError` saying ``outcome``.
    """
    _aio.check_sync_bind(bind, function)
    if isinstance(bind, sa.Engine):
        engine = bind

        def attempt() -> T:
            with engine.begin() as conn:
                return change(conn)

        return retrying(attempt, what=what, outcome=f"nothing was changed: {outcome}", sleep=pause)
    try:
        return change(bind)
    except sa.exc.DBAPIError as exc:
        raise error_in_callers_transaction(exc, what, outcome) from exc


def _create(conn: sa.Connection, name: str, start: int, table: str, checkfirst: bool) -> bool:
    check_identifier(conn.dialect, table, "sequences table name", InvalidSequenceError)
    # rowcount of an INSERT is reported only when asked for (SQLAlchemy 2.0.28+)
    statement = insert_ignoring_conflict(conn.dialect, table_clause(table), ["name"])
    statement = statement.execution_options(preserve_rowcount=True)
    try:
        with naming_missing_table(conn, table):
            check_exact_names(conn, table)
            created = conn.execute(statement, {"name": name, "next_value": start}).rowcount == 1
    except sa.exc.IntegrityError:
        if ignores_conflicts(conn.dialect):
            # That INSERT skips an existing row, so this is another error, never "the
            # sequence was there" (Spanner's driver runs DDL it holds back, which may
            # fail, as this INSERT's statement): returning False would say that
            # nothing needed doing when nothing was done.
            raise
        created = False  # engines without an insert-if-absent form
    wrote_row(conn, name)  # a new row, or an existing one (INSERT IGNORE locks it)
    if created:
        _check_stored(conn, name, start, table)
        forget_row(conn, table, name)
    elif family(conn.dialect) == "mysql":
        _check_ignored_conflict(conn, name, start, table)
    if not created and not checkfirst:
        raise SequenceExistsError(
            f"sequence {name!r} already exists in table {table!r}; it was left as it is. "
            "Pass checkfirst=True to make this a no-op"
        )
    return created


def _check_stored(conn: sa.Connection, name: str, start: int, table: str) -> None:
    """Raise unless the row just inserted is there by its exact name, holding ``start``.

    MySQL and MariaDB's INSERT IGNORE stores a name cut to a narrower column and a
    start clamped to a smaller type with only a warning: never a false success.
    """
    stored = read_next_value(conn, name, table=table)
    if stored != start:
        found = "no row of that name" if stored is None else f"next_value {stored}"
        raise _not_stored(conn, name, start, table, f"reading it back found {found}")


#: MySQL's warning of an INSERT IGNORE that met an existing row (ER_DUP_ENTRY)
_DUPLICATE_ENTRY = 1062


def _check_ignored_conflict(conn: sa.Connection, name: str, start: int, table: str) -> None:
    """Raise if MySQL's INSERT IGNORE skipped the row for anything but an existing name.

    A name cut to a narrower column can meet another cut name: "it existed"
    would be false. Its warnings (read at once, before they are cleared) tell.
    """
    warnings = conn.exec_driver_sql("SHOW WARNINGS").all()
    others = [str(row[2]) for row in warnings if int(row[1]) != _DUPLICATE_ENTRY]
    if others:
        raise _not_stored(conn, name, start, table, "the server warned: " + "; ".join(others))


def _not_stored(
    conn: sa.Connection, name: str, start: int, table: str, why: str
) -> SequenceAllocationError:
    try:
        columns = sa.inspect(conn).get_columns(table, schema=_schema_of(conn))
        types = ", ".join(f"{c['name']} {c['type']}" for c in columns)
    except Exception:  # advisory: the message says what it can
        types = "unknown"
    return SequenceAllocationError(
        f"sequence {name!r} (start {start}) was not stored as asked in table {table!r}: "
        f"{why}. The table's columns ({types}) cannot hold it, and MySQL and MariaDB's "
        "INSERT IGNORE cuts a longer name and clamps a larger value with only a warning. "
        "Nothing was changed where create ran in a transaction of its own (an Engine); in "
        "your transaction (a Connection), roll it back. Use the library's table: "
        "sequences_table(metadata) with metadata.create_all(engine), or "
        "op.create_sequences_table() in a migration; or widen the columns to "
        f"name VARCHAR({NAME_LENGTH}) and next_value BIGINT"
    )


def drop_table_sequence(
    bind: sa.Engine | sa.Connection,
    name: str,
    *,
    table: str = DEFAULT_TABLE,
    checkfirst: bool = False,
) -> bool:
    """Delete sequence ``name``'s row; True if it was there.

    A missing sequence raises :class:`~sqlalchemy_seqkeys.SequenceNotFoundError`
    unless ``checkfirst=True`` (as ``sqlalchemy.Sequence.drop``). A sequences
    table that compares names case-insensitively (MySQL/MariaDB, made by 0.1)
    raises :class:`~sqlalchemy_seqkeys.SequenceAllocationError`, as
    :func:`create_table_sequence` does, and nothing is deleted. With an
    Engine the delete is committed here; with a Connection it joins that
    connection's transaction.

    :param bind: an Engine (a transaction of its own, committed) or a
        Connection (joins its transaction).
    :param name: the sequence's row name.
    :param table: the sequences table's name.
    :param checkfirst: make a missing sequence a no-op that returns False.

    Example::

        drop_table_sequence(engine, "invoice_id", checkfirst=True)
    """
    validate.check_flag(checkfirst, "checkfirst", InvalidSequenceError)
    check_name(name)
    validate.check_name(table, "table", InvalidSequenceError)
    return _changing(
        bind,
        "drop_table_sequence",
        f"dropping sequence {name!r} (table {table!r})",
        "the sequence was not dropped",
        lambda conn: _drop(conn, name, table, checkfirst),
    )


def _drop(conn: sa.Connection, name: str, table: str, checkfirst: bool) -> bool:
    t = table_clause(table)
    statement = sa.delete(t).where(t.c.name == sa.bindparam("name"))
    with naming_missing_table(conn, table):
        # a case-insensitive name column would delete another case's row, as create refuses
        check_exact_names(conn, table)
        result = conn.execute(statement.execution_options(preserve_rowcount=True), {"name": name})
    wrote_row(conn, name)  # gone in this transaction, and locked until it ends
    if result.rowcount != 1:
        if checkfirst:
            return False
        raise SequenceNotFoundError(
            f"sequence {name!r} does not exist in table {table!r}, so there is nothing to drop. "
            "Pass checkfirst=True to make this a no-op"
        )
    forget_row(conn, table, name)
    return True


create_table_sequence_async = _aio.awaitable(
    create_table_sequence,
    'await create_table_sequence_async(async_engine, "invoice_id", start=1000)',
)
"""Awaitable :func:`create_table_sequence`: an AsyncEngine commits, an AsyncConnection joins.

The same arguments after the bind. Example::

    await create_table_sequence_async(async_engine, "invoice_id", start=1000)
"""

drop_table_sequence_async = _aio.awaitable(
    drop_table_sequence,
    'await drop_table_sequence_async(async_engine, "invoice_id", checkfirst=True)',
)
"""Awaitable :func:`drop_table_sequence`: an AsyncEngine commits, an AsyncConnection joins.

The same arguments after the bind. Example::

    await drop_table_sequence_async(async_engine, "invoice_id", checkfirst=True)
"""
