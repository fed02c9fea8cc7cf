"""``doctor``: a checkup of every key column of a MetaData against the live database.

:func:`doctor` (and :func:`doctor_async`) runs the checks ``order``, ``behind``,
``schema``, ``clock`` and ``capabilities`` on every column whose default (or server
default) is one of this library's strategies and returns a :class:`DoctorReport` of
:class:`DoctorFinding`. It writes nothing but the temporary tables it drops, rolls
back every check's transaction and never moves a sequence: a finding carries the
command that fixes it, and ``report.healthy`` is False when any is a problem.

User guide: docs/doctor.md.
"""

from __future__ import annotations

import bisect
import functools
import json
import re
import secrets
import shlex
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.schema import CreateTable
from sqlalchemy.sql import sqltypes

from ._columns import bigint_problem, declared_default, u64_problem
from ._compat import autocommit
from ._dialect import (
    dialect_key,
    facts,
    family,
    has_sequences,
    identifier_text,
    incrementing_sequences,
    natively_bit_reversed,
)
from ._urls import has_password, no_database, shown
from .bitreverse import BitReversed, BitReversedSequence, reverse_bits
from .dialects import read_sequence_catalog
from .errors import InvalidSequenceError, SeqKeysError, SequencesTableNotFoundError
from .pooled import PooledSequence
from .sequences import TableSequence
from .sequences._contract import OwnSequence
from .sequences.resync import check_integer_key, data_table
from .sequences.table import DEFAULT_TABLE, inexact_collation, read_next_value
from .server_keys import ServerUuid, server_uuid
from .snowflake import Snowflake
from .typeid import TypeIDDefault
from .types import CombGuidDefault
from .uuid7 import new_uuid7
from .uuid7_sql import ServerUuid7, ServerUuidFunction
from .workers import MARK_COLUMN

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

__all__ = ["DoctorFinding", "DoctorReport", "doctor", "doctor_async"]

#: keys minted for the order check
ORDER_SAMPLE = 1000
#: the order check's temporary table: this, a random suffix (no application table's name)
_ORDER_TABLE = "seqkeys_doctor_order"
#: how long one statement of doctor's waits for a lock another transaction holds
LOCK_TIMEOUT_S = 5
#: keys minted a millisecond (so the sample covers 100 of them)
_PER_MILLISECOND = 10
#: the most keys the ``behind`` check of a bit-reversed key reads (it reads every key:
#: they are not ordered by their counter); past it that check is skipped
BIT_REVERSED_SCAN_LIMIT = 10_000_000
#: keys read a statement, in key order, by that check
_KEYS_PER_PAGE = 10_000
_MAX_COUNTER = 2**63 - 1

#: how ALTER SEQUENCE spells NO CYCLE, where not so
_NO_CYCLE = {"mysql": "NOCYCLE", "oracle": "NOCYCLE"}

#: statuses; only "problem" makes a report unhealthy
OK, PROBLEM, SKIPPED, INFO = "ok", "problem", "skipped", "info"


@dataclass(frozen=True)
class DoctorFinding:
    """One result of :func:`doctor`: a check on one subject.

    ``check`` is ``order``, ``behind``, ``schema``, ``clock`` or
    ``capabilities``; ``status`` is ``ok``, ``problem``, ``skipped`` or
    ``info``; ``fix`` is the command that fixes a problem (doctor never runs
    it); ``details`` holds the numbers behind the message.

    Example::

        >>> finding = DoctorFinding("behind", "orders.id", "ok", "ahead of the data")
        >>> finding.as_dict()["status"]
        'ok'
    """

    check: str
    subject: str
    status: str
    message: str
    fix: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The finding as JSON-ready values (the ``findings`` items of ``--json``)."""
        return asdict(self)


@dataclass(frozen=True)
class DoctorReport:
    """What :func:`doctor` found; ``healthy`` when no finding is a problem.

    Example::

        report = doctor(engine, Base.metadata)
        report.healthy, len(report.problems)
        print(report.format())          # the table seqkeys doctor prints
        print(report.to_json())         # what seqkeys doctor --json prints
    """

    database: dict[str, Any]
    findings: tuple[DoctorFinding, ...]

    @property
    def problems(self) -> list[DoctorFinding]:
        """The findings whose status is ``problem``."""
        return [f for f in self.findings if f.status == PROBLEM]

    @property
    def healthy(self) -> bool:
        """True when no finding is a problem."""
        return not self.problems

    def as_dict(self) -> dict[str, Any]:
        """``{"healthy", "database", "findings"}`` as JSON-ready values."""
        return {
            "healthy": self.healthy,
            "database": self.database,
            "findings": [f.as_dict() for f in self.findings],
        }

    def to_json(self) -> str:
        """The report as indented JSON (``seqkeys doctor --json``)."""
        return json.dumps(self.as_dict(), indent=2, sort_keys=False, default=str)

    def format(self) -> str:
        """The report as a readable table, with each problem's fix under it."""
        db = self.database
        lines = [f"seqkeys doctor: {db['dialect']} {db['server_version'] or ''}".rstrip()]
        rows = [(f.check, f.subject, f.status.upper(), f.message) for f in self.findings]
        widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(_HEADINGS[:3])]
        head = "  ".join(h.ljust(w) for h, w in zip(_HEADINGS, widths, strict=False))
        lines += [head + "  " + _HEADINGS[3], "-" * (len(head) + 9)]
        for finding, row in zip(self.findings, rows, strict=True):
            cells = "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False))
            lines.append(f"{cells}  {row[3]}")
            if finding.fix:
                lines.append(" " * (len(head) + 2) + f"fix: {finding.fix}")
        problems = len(self.problems)
        lines.append(
            "healthy: no problem found"
            if not problems
            else f"{problems} problem{'s' if problems != 1 else ''} found"
        )
        return "\n".join(lines)


_HEADINGS = ("CHECK", "SUBJECT", "STATUS", "MESSAGE")


class _NoIntegerMaxError(SeqKeysError):
    """The key column's ``MAX()`` read back as no integer (text in the column)."""

    def __init__(self, value: object) -> None:
        super().__init__(f"MAX() read back {value!r} ({type(value).__name__})")
        self.value = value


# -- what the metadata declares ----------------------------------------------------------


@dataclass(frozen=True)
class _Key:
    column: sa.Column[Any]
    strategy: object  # the default (TableSequence, new_comb_guid, new_uuid7, ...) or server default

    @property
    def subject(self) -> str:
        table = self.column.table
        where = f"{table.schema}.{table.name}" if table.schema else table.name
        return f"{where}.{self.column.name}"


def _declared(column: sa.Column[Any]) -> object | None:
    given = declared_default(column)
    if isinstance(
        given,
        CombGuidDefault
        | TableSequence
        | PooledSequence
        | Snowflake
        | BitReversed
        | BitReversedSequence
        | TypeIDDefault,
    ) or (given is new_uuid7):
        return given
    server = column.server_default
    if isinstance(server, sa.DefaultClause) and isinstance(server.arg, ServerUuidFunction):
        return server.arg
    return None


def _keys(metadata: sa.MetaData) -> list[_Key]:
    found = []
    for table in metadata.sorted_tables:
        for column in table.columns:
            strategy = _declared(column)
            if strategy is not None:
                found.append(_Key(column, strategy))
    return found


# -- running the checks ------------------------------------------------------------------


class _Context:
    """What every check shares: the connection, the declared keys, the findings so far."""

    def __init__(self, conn: sa.Connection, metadata: sa.MetaData, url: str) -> None:
        self.conn = conn
        self.metadata = metadata
        self.url = url
        self.dialect = conn.dialect
        self.findings: list[DoctorFinding] = []
        #: the DROPs of the temporary tables made, run after the check's transaction
        self.temporary: list[str] = []
        self.keys = _keys(metadata)
        #: the URL's password (``user:password@`` or a query argument) is hidden in
        #: ``url``: commands print a placeholder for the whole URL
        self.url_has_password = has_password(conn.engine.url)
        #: key subjects whose MAX() means nothing (text keys, no table): why
        self.no_max: dict[str, str] = {}
        #: a tenant's connection: statements follow it, reflection is told it (schema())
        self.translate: dict[str | None, str | None] = dict(
            conn.get_execution_options().get("schema_translate_map") or {}
        )

    def schema(self, schema: str | None) -> str | None:
        """The schema the connection's ``schema_translate_map`` turns ``schema`` into
        (the inspector does not follow the map: it is told the translated name)."""
        return self.translate.get(schema, schema)

    def add(self, check: str, subject: str, status: str, message: str, **kw: Any) -> None:
        finding = DoctorFinding(check, subject, status, message, **kw)
        if finding not in self.findings:  # a table two keys share is reported once
            self.findings.append(finding)

    def guarded(self, check: str, subject: str, body: Callable[[], None]) -> None:
        """Run ``body`` in a transaction that is rolled back; an error is a problem.

        On an AUTOCOMMIT connection there is none (no savepoint either): its statements
        commit one by one, and write nothing but temporary tables.
        """
        in_transaction = self.conn.in_transaction()
        transaction = (
            None
            if autocommit(self.conn)
            else self.conn.begin_nested()
            if in_transaction
            else self.conn.begin()
        )
        try:
            body()
        except (SeqKeysError, sa.exc.SQLAlchemyError) as exc:
            why = _LOCKED if _lock_timed_out(exc) else f"{type(exc).__name__}: {exc}"
            self.add(check, subject, PROBLEM, f"could not check: {why}")
        finally:
            if transaction is not None and transaction.is_active:
                transaction.rollback()
            # A temporary table outlives a rollback on MariaDB, and on SQLite
            # its DROP inside the transaction was rolled back with it.
            for drop in self.temporary:
                self.conn.exec_driver_sql(drop)
                if not in_transaction:  # never the caller's transaction
                    self.conn.commit()
            self.temporary.clear()

    def drop_temporary(self, name: str) -> None:
        """Drop temporary table ``name`` after the check: that table only, never an
        application table of the same name (a DROP TABLE finds the real one when the
        temporary table is gone). MySQL's DROP TABLE also commits the caller's
        transaction: DROP TEMPORARY TABLE does not."""
        quoted = self.dialect.identifier_preparer.quote(name)
        drop = {
            "mysql": f"DROP TEMPORARY TABLE IF EXISTS {quoted}",
            "postgresql": f"DROP TABLE IF EXISTS pg_temp.{quoted}",
            "sqlite": f"DROP TABLE IF EXISTS temp.{quoted}",
        }.get(family(self.dialect), f"DROP TABLE IF EXISTS {quoted}")
        self.temporary.append(drop)

    def largest(self, key: _Key, sequence: str) -> int | None:
        """The largest key the column's table holds (None: no rows).

        Read from a Table, which follows a ``schema_translate_map`` (a tenant's
        own table); a MAX that is no integer (text in the column) raises
        :class:`InvalidSequenceError`, as a resync would refuse it.
        """
        source = data_table(key.column.table, key.column.name, None)
        value = self.conn.scalar(sa.select(sa.func.max(source.c[key.column.name])))
        try:
            return check_integer_key(value, source, sequence)
        except InvalidSequenceError as exc:
            raise _NoIntegerMaxError(value) from exc

    def database(self) -> dict[str, Any]:
        """The ``database`` part of the report."""
        version = self.dialect.server_version_info
        return {
            "url": self.url,
            "dialect": self.dialect.name,
            "server_version": ".".join(str(p) for p in version) if version else None,
            "key_columns": [k.subject for k in self.keys],
        }


#: why a check whose statement waited LOCK_TIMEOUT_S for a lock could not be done
_LOCKED = (
    f"the table is locked by another transaction (doctor waits {LOCK_TIMEOUT_S} s for a "
    "lock, never longer): run doctor again once that transaction ends"
)
#: what a server raises when a lock was not granted in time: PostgreSQL's SQLSTATE,
#: MySQL/MariaDB's error number (ER_LOCK_WAIT_TIMEOUT, for a row or a table's lock)
_PG_LOCK_NOT_AVAILABLE = "55P03"
_MYSQL_LOCK_WAIT_TIMEOUT = 1205


def _lock_timed_out(exc: BaseException) -> bool:
    """The error is the server's: a lock was not granted within doctor's lock timeout."""
    orig = getattr(exc, "orig", None)
    if orig is None:
        return False
    code = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    if code == _PG_LOCK_NOT_AVAILABLE:
        return True
    args: tuple[Any, ...] = tuple(getattr(orig, "args", ()))
    return bool(args) and args[0] == _MYSQL_LOCK_WAIT_TIMEOUT


#: the session settings that bound a lock wait: how to read them, how to set them
_LOCK_SETTINGS = {
    "postgresql": (
        "SELECT current_setting('lock_timeout')",
        # transaction-local in the caller's transaction (its own SET LOCAL stays local)
        "SELECT set_config('lock_timeout', :a, :local)",
    ),
    "mysql": (
        "SELECT @@SESSION.lock_wait_timeout, @@SESSION.innodb_lock_wait_timeout",
        "SET SESSION lock_wait_timeout = :a, innodb_lock_wait_timeout = :b",
    ),
}


@contextmanager
def _short_lock_waits(conn: sa.Connection) -> Iterator[None]:
    """The connection's lock waits bounded by LOCK_TIMEOUT_S while doctor runs, and
    its own settings put back after (the session's, never the server's globals).

    In the caller's transaction the settings are changed and put back in it (on
    PostgreSQL as transaction-local settings, so that a ``SET LOCAL`` of the
    caller's never outlives its transaction; a rollback undoes both); outside
    one, each is committed.
    """
    statements = _LOCK_SETTINGS.get(family(conn.dialect))
    if statements is None or dialect_key(conn.dialect) not in ("postgresql", "mysql", "mariadb"):
        yield
        return
    read, write = statements
    # an AUTOCOMMIT connection has no transaction to be local to: session settings
    was_in_transaction = conn.in_transaction() and not autocommit(conn)

    def put(values: dict[str, Any]) -> None:
        if family(conn.dialect) == "postgresql":
            values = {**values, "local": was_in_transaction}
        conn.execute(sa.text(write), values, execution_options=_UNTRANSLATED)
        if not was_in_transaction:  # doctor's checks each begin their own
            conn.commit()

    old = tuple(conn.execute(sa.text(read), execution_options=_UNTRANSLATED).one())
    short: dict[str, Any] = (
        {"a": f"{LOCK_TIMEOUT_S}s"}
        if family(conn.dialect) == "postgresql"
        else {"a": LOCK_TIMEOUT_S, "b": LOCK_TIMEOUT_S}
    )
    put(short)
    try:
        yield
    finally:
        if not conn.invalidated:
            put(dict(zip(("a", "b"), old, strict=False)))


#: no column of the MetaData has a default of this library: nothing would be checked
_NO_KEYS = (
    "no key column of this library was found in the MetaData: nothing was checked "
    "(no column's default or server default is one of its strategies)"
)
_NO_KEYS_FIX = (
    "check that the MetaData is the application's (Base.metadata), that the module "
    "declaring the models is imported where it is defined (an import of myapp.models "
    "in the module --models names), and that the key columns' default= or "
    "server_default= is this library's (TableSequence, PooledSequence, new_comb_guid, "
    "server_uuid7(), typeid_default(...), ...)"
)


def _run(conn: sa.Connection, metadata: sa.MetaData, url: str) -> DoctorReport:
    """Every check, family by family, each in a transaction of its own."""
    ctx = _Context(conn, metadata, url)
    if not ctx.keys:
        ctx.add("schema", "key columns", PROBLEM, _NO_KEYS, fix=_NO_KEYS_FIX)
    for key in ctx.keys:
        if _orders(key.strategy):
            ctx.guarded("order", key.subject, functools.partial(_check_order, ctx, key))
    for key in ctx.keys:
        if _integer_key(key.strategy):
            ctx.guarded("schema", key.subject, functools.partial(_check_key_column, ctx, key))
    _check_sequences(ctx)
    ctx.guarded("schema", "worker leases", functools.partial(_check_leases, ctx))
    ctx.guarded("clock", "server", functools.partial(_check_clock, ctx))
    _check_capabilities(ctx)
    return DoctorReport(ctx.database(), tuple(ctx.findings))


def _check_sequences(ctx: _Context) -> None:
    """The checks of the counters behind the keys: that each exists, and is not behind."""
    for key in ctx.keys:
        if isinstance(key.strategy, TableSequence | PooledSequence):
            ctx.guarded("behind", key.subject, functools.partial(_check_behind, ctx, key))
    for key in ctx.keys:
        counter = _counter_of(key.strategy)
        if counter is not None:
            ctx.guarded("schema", key.subject, functools.partial(_check_counter, ctx, counter))
            check = functools.partial(_check_bit_reversed_behind, ctx, key, counter)
            ctx.guarded("behind", key.subject, check)
        elif isinstance(key.strategy, BitReversed):  # another callable: no counter to read
            ctx.add(
                "behind",
                key.subject,
                SKIPPED,
                f"not checked: the counter behind {_name(key.strategy)} is a callable doctor "
                "cannot read; check yourself that it hands out counters past the largest "
                "reverse_bits(key) of the table's keys (doctor reads TableSequence, "
                "PooledSequence, BitReversedSequence and sa.Sequence counters)",
            )


def keys_behind(conn: sa.Connection, metadata: sa.MetaData) -> list[tuple[sa.Column[Any], object]]:
    """The key columns whose counter would hand out a key their table holds, with their
    defaults: what doctor's ``behind`` check calls a problem (for autogenerate's resyncs).

    Only the sequence checks run (no temporary table), in ``conn``'s transaction where it
    has one (each in a savepoint rolled back); a counter that does not exist, or that
    cannot be judged (a server's cached values, too many bit-reversed keys), is not
    listed: a resync would not settle it (doctor's finding says what does).

    :param conn: a connection to the database (not Spanner's inside a transaction).
    :param metadata: the models' ``MetaData``.
    """
    ctx = _Context(conn, metadata, _url_of(conn))
    with _short_lock_waits(conn):
        _check_sequences(ctx)
    behind = {
        f.subject
        for f in ctx.findings
        if f.check == "behind"
        and f.status == PROBLEM
        and "next_value" in f.details
        and not f.details.get("cached")
    }
    return [(key.column, key.strategy) for key in ctx.keys if key.subject in behind]


# -- order -------------------------------------------------------------------------------


def _check_order(ctx: _Context, key: _Key) -> None:
    """The column's real type keeps the keys its default mints in minting order."""
    strategy = key.strategy
    if dialect_key(ctx.dialect) == "spanner":
        ctx.add(
            "order",
            key.subject,
            SKIPPED,
            "Spanner: keys are meant to spread over its splits, not to follow time",
        )
        return
    if isinstance(strategy, CombGuidDefault) and strategy.layout_for(ctx.dialect) is None:
        ctx.add("order", key.subject, SKIPPED, "random keys here: no order is promised")
        return
    real = _real_column(ctx, key)
    if real is None:
        return
    if isinstance(strategy, ServerUuidFunction) and not _has_server_default(ctx, key, real):
        return
    back = _sorted_sample(ctx, key, real["type"])
    misplaced = len(back) - _longest_increasing(back)
    type_text = ctx.dialect.type_compiler_instance.process(real["type"])
    details = {"sample": ORDER_SAMPLE, "out_of_order": misplaced, "type": type_text}
    if misplaced:
        ctx.add(
            "order",
            key.subject,
            PROBLEM,
            f"{misplaced} of {ORDER_SAMPLE} keys minted by {_name(strategy)} come back out "
            f"of minting order from a {type_text} column: inserts land all over the index",
            fix=_order_fix(strategy, type_text),
            details=details,
        )
    else:
        ctx.add(
            "order",
            key.subject,
            OK,
            f"{ORDER_SAMPLE} keys of {_name(strategy)} sort in minting order in {type_text}",
            details=details,
        )


def _normal_default(text: str) -> str:
    """A default as compared: lower case, no spaces, no parentheses around it."""
    text = re.sub(r"\s+", "", text).lower()
    while True:
        bare = _function_text(text)
        if bare is None or bare == text:
            return text
        text = bare


def _has_server_default(ctx: _Context, key: _Key, real: dict[str, Any]) -> bool:
    """The real column's default is the model's server function, as compiled here;
    else a problem (the inserts get the column's keys, not the model's) and False."""
    strategy = key.strategy
    assert isinstance(strategy, ServerUuidFunction)
    compiled = _compiles(strategy, ctx.dialect)
    if compiled is None:  # not on this engine: the sample says why (could not check)
        return True
    have = _column_default(ctx, key, real)
    if have is not None and _normal_default(have) == _normal_default(compiled):
        return True
    function = _function_text(compiled)
    found = f"its default is {have}" if have is not None else "it has no default"
    more: tuple[str, ...] = (f"server_default=sa.text({compiled!r})",)
    if family(ctx.dialect) == "mysql":
        more = (f"existing_type={_type_code(real['type'])}", *more)
    ctx.add(
        "order",
        key.subject,
        PROBLEM,
        f"the key column's server default is not {_name(strategy)} ({function}): {found} "
        "in the database, so an insert without a key does not get the keys checked here",
        fix=f"in a migration: op.alter_column({_alembic_args(ctx, key, real, *more)})",
        details={"default": have, "expected": function},
    )
    return False


def _column_default(ctx: _Context, key: _Key, real: dict[str, Any]) -> str | None:
    """The real column's default as the database has it (None: no default).

    MySQL/MariaDB: read from information_schema, as SQLAlchemy's reflection drops
    some (MariaDB's ``nextval(`db`.`seq`)``).
    """
    if family(ctx.dialect) != "mysql":
        default = real.get("default")
        return None if default is None else str(default)
    table = key.column.table
    schema = ctx.schema(table.schema)
    query = sa.text(
        "SELECT COLUMN_DEFAULT FROM information_schema.COLUMNS "
        "WHERE TABLE_SCHEMA = COALESCE(:schema, DATABASE()) "
        "AND TABLE_NAME = :table AND COLUMN_NAME = :column"
    )
    params = {"schema": schema, "table": table.name, "column": key.column.name}
    value = ctx.conn.scalar(query, params)
    # MariaDB spells no default NULL (and a NULL default 'NULL'); MySQL None
    return None if value is None or str(value).upper() == "NULL" else str(value)


#: a statement on tables that are no tenant's (temporary, catalog): no schema_translate_map
_UNTRANSLATED: dict[str, Any] = {"schema_translate_map": None}


def _sorted_sample(ctx: _Context, key: _Key, real_type: Any) -> list[int]:
    """Mint the sample into a temporary table of the real type; its minting numbers by key."""
    strategy = key.strategy
    server_default: sa.ColumnElement[Any] | None = None
    if isinstance(strategy, ServerUuidFunction):
        server_default = type(strategy)()  # checked against the real column's type
    name = f"{_ORDER_TABLE}_{secrets.token_hex(4)}"
    table = sa.Table(
        name,
        sa.MetaData(),
        sa.Column("n", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("k", real_type, nullable=False, server_default=server_default),
        prefixes=["TEMPORARY"],
    )
    # a temporary table is no tenant's: a schema_translate_map would put it in a schema
    ctx.conn.execute(CreateTable(table), execution_options=_UNTRANSLATED)
    ctx.drop_temporary(name)  # made: dropped after the check (not made: nothing to drop)
    if isinstance(strategy, ServerUuidFunction):
        ctx.conn.execute(
            sa.insert(table),
            [{"n": n} for n in range(ORDER_SAMPLE)],
            execution_options=_UNTRANSLATED,
        )
    else:
        mint = _minter(strategy, ctx.dialect)
        # the declared type binds the keys: what the application sends
        sent = sa.table(name, sa.column("n"), sa.column("k", key.column.type))
        minted = []
        for n in range(ORDER_SAMPLE):
            if n % _PER_MILLISECOND == 0:
                # over many milliseconds: whether a type reorders a key can
                # depend on its time bits (MariaDB's UUID swaps by version bits)
                time.sleep(0.001)
            minted.append({"n": n, "k": mint()})
        ctx.conn.execute(sa.insert(sent), minted, execution_options=_UNTRANSLATED)
    query = sa.select(table.c.n).order_by(table.c.k)
    return list(ctx.conn.scalars(query, execution_options=_UNTRANSLATED))


def _real_column(ctx: _Context, key: _Key) -> dict[str, Any] | None:
    """The column as the database has it; None (and a problem) if it is missing."""
    table = key.column.table
    inspector = sa.inspect(ctx.conn)
    schema = ctx.schema(table.schema)  # a tenant's connection: its schema's table
    stored, column = _stored_name(ctx, table.name), _stored_name(ctx, key.column.name)
    if not inspector.has_table(stored, schema=schema):
        ctx.add(
            "schema",
            key.subject,
            PROBLEM,
            f"table {table.name!r} does not exist",
            fix="run the migrations that create it (alembic upgrade head)",
        )
        return None
    for reflected in inspector.get_columns(stored, schema=schema):
        if reflected["name"] == column:
            return dict(reflected)
    ctx.add(
        "schema",
        key.subject,
        PROBLEM,
        f"table {table.name!r} has no column {key.column.name!r}",
        fix="run the migrations that add it (alembic upgrade head)",
    )
    return None


def _stored_name(ctx: _Context, name: str) -> str:
    """``name`` as the server stores it: PostgreSQL cuts a name past 63 bytes of UTF-8
    there (never inside a character), silently, and the application's statements
    reach the object by the longer name all the same."""
    limit = facts(ctx.dialect).identifier_bytes
    if limit is None or len(name.encode()) <= limit:
        return name
    return name.encode()[:limit].decode(errors="ignore")


# -- schema: the real key column of an integer key ---------------------------------------


def _check_key_column(ctx: _Context, key: _Key) -> None:
    """The database's key column holds the strategy's integers, and mints no keys of its own."""
    real = _real_column(ctx, key)
    if real is None:
        ctx.no_max[key.subject] = "not checked: the key column does not exist (see schema)"
        return
    real_type = _underlying(real["type"])
    type_text = _type_text(ctx, real["type"])
    if real_type is not real["type"]:  # a DOMAIN: say what it is over
        type_text += f" (a domain over {_type_text(ctx, real_type)})"
    problems: list[tuple[str, str]] = []  # (message, fix)
    if isinstance(real_type, sa.String):  # text: MAX() compares text, '9' after '10'
        ctx.no_max[key.subject] = (
            f"not checked: the key column is {type_text}, text, whose MAX() compares text "
            "('9' sorts after '10'); fix its type first (see schema)"
        )
        problems.append(
            (
                f"the key column is {type_text} in the database, text, while "
                f"{_name(key.strategy)} hands out integers: keys sort as text, and the largest "
                "key cannot be read",
                _alter_type(ctx, key, real),
            )
        )
    elif not isinstance(real_type, sqltypes.Integer | sqltypes.Numeric):
        # a reflected type this library does not know (oid, money, YEAR, a range...):
        # never taken to hold the keys
        problems.append(
            (
                f"the key column is {type_text} in the database, a type doctor cannot tell "
                f"holds every key of {_name(key.strategy)} (64-bit integers): inserts may "
                "fail or keys may change",
                _alter_type(ctx, key, real),
            )
        )
    else:
        why = _integer_problem(ctx, key, real_type)
        if why is not None:
            problems.append(
                (
                    f"the key column is {type_text} in the database, too small for the keys of "
                    f"{_name(key.strategy)}: {why}",
                    _alter_type(ctx, key, real),
                )
            )
    minter = _own_minter(ctx, key, real)
    if minter is not None:
        what, fix = minter
        problems.append(
            (
                f"the key column has {what} of its own: an insert without a key takes one from "
                f"it, the same keys {_name(key.strategy)} hands out: inserts would collide",
                fix(ctx, key, real),
            )
        )
    for message, how in problems:
        ctx.add("schema", key.subject, PROBLEM, message, fix=how, details={"type": type_text})
    if not problems:
        ctx.add(
            "schema",
            key.subject,
            OK,
            f"the key column is {type_text}, with no key default of its own",
            details={"type": type_text},
        )


def _underlying(type_: Any) -> Any:
    """A reflected PostgreSQL DOMAIN's data type (a domain over a domain too)."""
    from sqlalchemy.dialects.postgresql import DOMAIN

    while isinstance(type_, DOMAIN):
        type_ = type_.data_type
    return type_


def _integer_key(strategy: object) -> bool:
    return isinstance(
        strategy, TableSequence | PooledSequence | Snowflake | BitReversed | BitReversedSequence
    )


def _integer_problem(ctx: _Context, key: _Key, real_type: Any) -> str | None:
    """Why the real type cannot hold the strategy's keys (the library's own judgement)."""
    dialect = dialect_key(ctx.dialect)
    if _unsigned(key.strategy):
        return u64_problem(real_type, dialect)
    return bigint_problem(real_type, dialect)


def _unsigned(strategy: object) -> bool:
    """A Snowflake whose layout's ids go past 2**63 - 1 (unsigned=True)."""
    return isinstance(strategy, Snowflake) and strategy.layout.max_id > 2**63 - 1


def _type_text(ctx: _Context, type_: Any) -> str:
    try:
        return str(ctx.dialect.type_compiler_instance.process(type_))
    except sa.exc.CompileError:
        return repr(type_)


def _alembic_args(ctx: _Context, key: _Key, real: dict[str, Any], *more: str) -> str:
    """``'table', 'column', <more>, schema=...`` for ``op.alter_column``."""
    table = key.column.table
    args = [repr(table.name), repr(key.column.name), *more]
    if real.get("nullable") is False:
        args.append("existing_nullable=False")
    if table.schema:
        args.append(f"schema={table.schema!r}")
    return ", ".join(args)


def _type_code(type_: Any) -> str:
    """The reflected type as Python in a migration: ``sa.INTEGER()``, ``mysql.BIGINT(...)``."""
    module = type(type_).__module__
    prefix = "sa"
    for name in ("mysql", "postgresql"):
        if module.startswith(f"sqlalchemy.dialects.{name}"):
            prefix = name
    return f"{prefix}.{type_!r}"


def _alter_type(ctx: _Context, key: _Key, real: dict[str, Any]) -> str:
    """The Alembic migration that gives the key column the type its strategy needs."""
    unsigned = _unsigned(key.strategy)
    # UnsignedBigInteger: NUMERIC(20, 0) on PostgreSQL, BIGINT UNSIGNED on MySQL/MariaDB,
    # BIGINT on SQLite (which binds NUMERIC as a float); it reads ints back
    wanted = "sqlalchemy_seqkeys.UnsignedBigInteger()" if unsigned else "sa.BigInteger()"
    more = [f"existing_type={_type_code(real['type'])}", f"type_={wanted}"]
    if family(ctx.dialect) == "postgresql":  # text to a number needs USING
        column = ctx.dialect.identifier_preparer.quote(key.column.name)
        target = "numeric(20, 0)" if unsigned else "bigint"
        more.append(f"postgresql_using={f'{column}::{target}'!r}")
    # the migration imports the package whose type it names (a comment, still Python)
    imports = "  # with `import sqlalchemy_seqkeys` at the top of the migration" if unsigned else ""
    if dialect_key(ctx.dialect) == "sqlite":  # no ALTER COLUMN: a batch copies the table
        table = key.column.table
        schema = f", schema={table.schema!r}" if table.schema else ""
        return (
            f"in a migration: with op.batch_alter_table({table.name!r}{schema}) as batch: "
            f"batch.alter_column({key.column.name!r}, {', '.join(more)}){imports}"
        )
    return f"in a migration: op.alter_column({_alembic_args(ctx, key, real, *more)}){imports}"


_MinterFix = Callable[[_Context, _Key, dict[str, Any]], str]


def _own_minter(ctx: _Context, key: _Key, real: dict[str, Any]) -> tuple[str, _MinterFix] | None:
    """What mints keys in the column itself (a sequence default, an identity,
    AUTO_INCREMENT) and the fix that removes it; None: nothing.

    SQLite's INTEGER PRIMARY KEY (AUTOINCREMENT or not) numbers a row inserted
    without a key too; it is what the library recommends there, so it is not one.
    """
    default = _column_default(ctx, key, real) or ""
    if real.get("identity"):
        return "an identity (GENERATED ... AS IDENTITY)", _drop_identity
    if re.search(r"\b(nextval|get_next_sequence_value)\s*\(", default, re.IGNORECASE):
        if _nextval_of_own_sequence(ctx, key, default):
            return None  # the pooled sequence's own values: what raw-SQL inserts should take
        return f"a server default {default}", _drop_default
    if family(ctx.dialect) == "mysql" and real.get("autoincrement") is True:
        return "AUTO_INCREMENT", _drop_auto_increment
    return None


#: a PostgreSQL default that is only nextval of a sequence named by a text literal:
#: ``nextval('s'::regclass)``, ``nextval('s'::text)``, ``nextval(('s'::text)::regclass)``
_PG_NEXTVAL = re.compile(
    r"\(*nextval\(\(*'((?:[^']|'')*)'(?:::text)?\)*(?:::regclass)?\)\)*", re.IGNORECASE
)
#: a MariaDB default that is only NEXTVAL of a sequence: `db`.`name`, or a bare name
_MY_NAME = r"(?:`((?:[^`]|``)*)`|(\w+))"
_MY_NEXTVAL = re.compile(rf"\(*nextval\({_MY_NAME}(?:\.{_MY_NAME})?\)\)*", re.IGNORECASE)


def _nextval_of_own_sequence(ctx: _Context, key: _Key, default: str) -> bool:
    """The column default is nothing but nextval of the key's own pooled sequence (same
    name and schema, as the server resolves them): its values are the pooled
    sequence's blocks' own, so raw-SQL inserts take keys no block hands out
    (docs/strategies/pooled.md); never a collision."""
    pooled = key.strategy
    if not isinstance(pooled, PooledSequence) or not incrementing_sequences(ctx.dialect):
        return False
    text = default.strip()
    schema = ctx.schema(pooled.schema)
    if family(ctx.dialect) == "postgresql":
        found = _PG_NEXTVAL.fullmatch(text)
        if found is None:
            return False
        query = sa.text("SELECT to_regclass(:have) = to_regclass(:want)")
        want = identifier_text(ctx.dialect, pooled.name, schema)
        have = found.group(1).replace("''", "'")
        return bool(ctx.conn.scalar(query, {"have": have, "want": want}))
    found = _MY_NEXTVAL.fullmatch(text) if family(ctx.dialect) == "mysql" else None
    if found is None:
        return False
    first = (found.group(1) or "").replace("``", "`") or found.group(2)
    second = (found.group(3) or "").replace("``", "`") or found.group(4)
    database, name = (first, second) if second else (None, first)
    here, folded = ctx.conn.execute(sa.text("SELECT DATABASE(), @@lower_case_table_names")).one()
    same = [(database or here, name), (schema or here, pooled.name)]
    if folded:  # names compared in lower case
        same = [(d.lower(), n.lower()) for d, n in same]
    return same[0] == same[1]


def _drop_default(ctx: _Context, key: _Key, real: dict[str, Any]) -> str:
    if dialect_key(ctx.dialect) == "spanner":
        return _alter_sql(ctx, key, "DROP DEFAULT")
    args = _alembic_args(ctx, key, real, "server_default=None")
    return f"in a migration: op.alter_column({args})"


def _drop_identity(ctx: _Context, key: _Key, real: dict[str, Any]) -> str:
    return _alter_sql(ctx, key, "DROP IDENTITY")


def _alter_sql(ctx: _Context, key: _Key, action: str) -> str:
    table = key.column.table
    name = identifier_text(ctx.dialect, table.name, table.schema)
    column = identifier_text(ctx.dialect, key.column.name)
    sql = f"ALTER TABLE {name} ALTER COLUMN {column} {action}"
    return f"in a migration: op.execute({sql!r})"


def _drop_auto_increment(ctx: _Context, key: _Key, real: dict[str, Any]) -> str:
    more = (f"existing_type={_type_code(real['type'])}", "autoincrement=False")
    return f"in a migration: op.alter_column({_alembic_args(ctx, key, real, *more)})"


# -- sequences behind the data -----------------------------------------------------------


def _check_behind(ctx: _Context, key: _Key) -> None:
    """The key's sequence hands out values past the largest key its table holds."""
    strategy = key.strategy
    if isinstance(strategy, PooledSequence) and incrementing_sequences(ctx.dialect):
        _behind_native(ctx, key, strategy)
        return
    assert isinstance(strategy, TableSequence | PooledSequence)
    name, table_name = strategy.name, strategy.table
    no_max = ctx.no_max.get(key.subject)
    # MAX(key) before the counter: every key it counts came from a value taken before,
    # so a row committed between the two reads never looks like a counter behind
    not_integer: _NoIntegerMaxError | None = None
    try:
        largest = None if no_max else ctx.largest(key, name)
    except _NoIntegerMaxError as exc:
        largest, not_integer = None, exc
    try:
        collation = inexact_collation(ctx.conn, table_name)
        next_value = read_next_value(ctx.conn, name, table=table_name)
    except SequencesTableNotFoundError:
        ctx.add(
            "schema",
            f"table {table_name}",
            PROBLEM,
            f"the sequences table {table_name!r} does not exist",
            fix=f"in a migration: op.create_sequences_table({table_name!r})",
        )
        return
    if collation is not None:
        ctx.add(
            "schema",
            f"table {table_name}",
            PROBLEM,
            f"the sequences table compares names case-insensitively ({collation})",
            fix=f"in a migration: op.make_sequence_names_case_sensitive({table_name!r})",
        )
    if not_integer is not None:
        _report_no_integer(ctx, key, not_integer.value)
        return
    if next_value is None:
        start = (largest or 0) + 1
        where = f", table={table_name!r}" if table_name != "sequences" else ""
        ctx.add(
            "schema",
            f"sequence {name}",
            PROBLEM,
            f"the sequences table has no row for {name!r}",
            fix=f"in a migration: op.create_pooled_sequence({name!r}, "
            f"{strategy.allocation_size}, start={start}{where})"
            if isinstance(strategy, PooledSequence)
            else f"in a migration: op.create_table_sequence({name!r}, start={start}{where})",
        )
        return
    if no_max:
        ctx.add("behind", key.subject, SKIPPED, no_max)
        return
    table = key.column.table
    if ctx.translate:  # a tenant's: seqkeys resync cannot reach its sequences table
        args = [repr(name), repr(table.name), repr(key.column.name)]
        args += [f"schema={table.schema!r}"] if table.schema else []
        args += [f"sequences_table={table_name!r}"] if table_name != DEFAULT_TABLE else []
        fix = (
            f"resync_table_sequence({_bind_text(ctx)}, {', '.join(args)}) "
            "(Python; moves it past MAX, never back)"
        )
    else:
        argv = ["--sequence", name, "--table", table.name, "--column", key.column.name]
        argv += ["--schema", table.schema] if table.schema else []
        argv += ["--sequences-table", table_name] if table_name != "sequences" else []
        fix = _seqkeys_command(ctx, "resync", argv)
    _report_behind(
        ctx,
        key,
        next_value,
        largest,
        problem=f"sequence {name!r} would hand out {next_value}",
        fix=fix,
        ok=f"sequence {name!r} hands out {next_value} next",
    )


def _bind_text(ctx: _Context) -> str:
    """The engine a printed Python fix runs on: a tenant's connection's map goes with it
    (the tables and sequences it names are the tenant's, as doctor read them)."""
    if not ctx.translate:
        return "engine"
    return f"engine.execution_options(schema_translate_map={ctx.translate!r})"


def _report_no_integer(ctx: _Context, key: _Key, value: object, what: str = "") -> None:
    """MAX(key) (or, ``what``, another key) read back as no integer: the sequence cannot
    be judged against the keys."""
    column = key.column.name
    what = what or f"the table's largest key, MAX({column}),"
    ctx.add(
        "behind",
        key.subject,
        PROBLEM,
        f"{what} is {value!r} ({type(value).__name__}), "
        "not an integer: the sequence cannot be judged against the keys the table holds "
        "(and a resync refuses the column)",
        fix=f"find the rows whose {column} is not an integer, and give them integer keys "
        "or remove them",
        details={"max_key": repr(value)},
    )


def _seqkeys_command(ctx: _Context, command: str, argv: list[str]) -> str:
    """``seqkeys COMMAND --url URL ARGV`` as a shell reads it: each argument quoted.

    A URL with a password (which doctor never prints) becomes ``"$DATABASE_URL"``,
    with a shell comment saying what to set it to.
    """
    url = '"$DATABASE_URL"' if ctx.url_has_password else shlex.quote(ctx.url)
    line = f"seqkeys {command} --url {url} {shlex.join(argv)}"
    if ctx.url_has_password:
        line += "  # set DATABASE_URL to the database's URL first (doctor does not print passwords)"
    return line


def _behind_native(ctx: _Context, key: _Key, pooled: PooledSequence) -> None:
    """A pooled native sequence: its INCREMENT BY and CYCLE, then its next block."""
    found = read_sequence_catalog(ctx.conn, pooled.sequence)
    name = pooled.name
    if found is None:
        schema = f", schema={pooled.schema!r}" if pooled.schema else ""
        ctx.add(
            "schema",
            f"sequence {name}",
            PROBLEM,
            f"there is no sequence {name!r}",
            fix=f"in a migration: op.create_pooled_sequence({name!r}, "
            f"{pooled.allocation_size}{schema})",
        )
        return
    increment, cycles = found
    if increment != pooled.allocation_size or cycles:
        _report_increment(ctx, pooled, increment, cycles)
    if _session_cache(ctx, key, pooled.sequence):
        return
    no_max = ctx.no_max.get(key.subject)
    if no_max:
        ctx.add("behind", key.subject, SKIPPED, no_max)
        return
    try:
        largest = ctx.largest(key, name)
    except _NoIntegerMaxError as exc:
        _report_no_integer(ctx, key, exc.value)
        return
    # after MAX(key): every key it counts came from a block taken before
    upcoming = _native_next(ctx.conn, pooled.sequence, increment)
    if upcoming is None:
        ctx.add("behind", key.subject, SKIPPED, "the sequence's value cannot be read here")
        return
    lowest, next_value = upcoming
    table = key.column.table
    schemas = f", schema={table.schema!r}" if table.schema else ""
    schemas += f", sequence_schema={pooled.schema!r}" if pooled.schema else ""
    fix = (
        f"resync_pooled_sequence({_bind_text(ctx)}, {name!r}, {table.name!r}, "
        f"{key.column.name!r}{schemas}) (Python; moves it past MAX, never back)"
    )
    if lowest != next_value and largest is not None and lowest <= largest < next_value:
        ctx.add(
            "behind",
            key.subject,
            PROBLEM,
            f"sequence {name!r} may start its next block at a key the table holds: the "
            f"server caches its values, so that block starts somewhere from {lowest} to "
            f"{next_value}, and the table holds keys up to {largest}: inserts may collide",
            fix=_nocache_fix(ctx, pooled.sequence, next_value),
            details={
                "next_value": next_value,
                "lowest_next_value": lowest,
                "max_key": largest,
                "cached": True,
            },
        )
        return
    _report_behind(
        ctx,
        key,
        next_value,
        largest,
        problem=f"sequence {name!r} would start its next block at {next_value}",
        fix=fix,
        ok=f"sequence {name!r} starts its next block at {_range(lowest, next_value)}",
    )


def _session_cache(ctx: _Context, key: _Key, sequence: sa.Sequence) -> bool:
    """PostgreSQL: True, and a finding, when the sequence has CACHE > 1.

    Each session then takes that many values at once and hands them out later, below
    values other sessions took since: the value doctor reads says nothing of them, and a
    resync (a setval) does not reach them. A problem for the library's own sequences
    (created CACHE 1; a ``PooledSequence`` refuses it); a user's ``sa.Sequence`` that
    caches works, and is "not checked".
    """
    read_cache = facts(ctx.dialect).read_session_cache
    if read_cache is None:
        return False
    cache = read_cache(ctx.conn, sequence)
    if cache is None or cache <= 1:
        return False
    sql_name = identifier_text(ctx.dialect, sequence.name, ctx.schema(sequence.schema))
    own = isinstance(sequence, OwnSequence)
    ctx.add(
        "behind",
        key.subject,
        PROBLEM if own else SKIPPED,
        ("" if own else "not checked: ")
        + f"sequence {sequence.name!r} has CACHE {cache}: each session takes {cache} values "
        "at once and hands them out after other sessions took higher ones, so its next value "
        "cannot be read (inserts may collide with keys imported since), and a resync "
        "cannot move the values sessions hold"
        + ("; the library creates its sequences CACHE 1" if own else ""),
        fix=f"ALTER SEQUENCE {sql_name} CACHE 1, then restart the application (its sessions "
        "keep the values they cached until they end), then run doctor again",
        details={"cache": cache},
    )
    return True


def _nocache_fix(ctx: _Context, sequence: sa.Sequence, next_value: int) -> str:
    """MariaDB: the statement that ends the doubt of a cached sequence, moving it forward."""
    sql_name = identifier_text(ctx.dialect, sequence.name, ctx.schema(sequence.schema))
    return (
        f"ALTER SEQUENCE {sql_name} NOCACHE (the values the server cached are skipped: it "
        f"hands out {next_value} next, past the table's keys, and doctor reads it exactly; "
        "a resync cannot be seen while it caches)"
    )


def _report_increment(ctx: _Context, pooled: PooledSequence, increment: int, cycles: bool) -> None:
    """A native sequence whose blocks overlap: INCREMENT BY not the allocation size, or CYCLE."""
    name = pooled.name
    sql_name = identifier_text(ctx.dialect, name, pooled.schema)
    why = (
        f"INCREMENT BY {increment}, not the allocation size {pooled.allocation_size}"
        if increment != pooled.allocation_size
        else "CYCLE"
    )
    ctx.add(
        "behind",
        f"sequence {name}",
        PROBLEM,
        f"sequence {name!r} has {why}: its blocks would overlap other writers' keys",
        fix=f"ALTER SEQUENCE {sql_name} INCREMENT BY {pooled.allocation_size}"
        + (f" {_NO_CYCLE.get(family(ctx.dialect), 'NO CYCLE')}" if cycles else "")
        + " "
        f"(or declare PooledSequence({name!r}, batch_size={increment}))",
        details={"increment": increment, "allocation_size": pooled.allocation_size},
    )


def _report_behind(
    ctx: _Context,
    key: _Key,
    next_value: int,
    largest: int | None,
    *,
    problem: str,
    fix: str,
    ok: str,
) -> None:
    """A problem when the next value is at or below the largest key, else ok."""
    details = {"next_value": next_value, "max_key": largest}
    if largest is not None and next_value <= largest:
        ctx.add(
            "behind",
            key.subject,
            PROBLEM,
            f"{problem}, but the table already holds keys up to {largest}: inserts would collide",
            fix=fix,
            details=details,
        )
    else:
        ctx.add("behind", key.subject, OK, f"{ok}, {_past(largest)}", details=details)


# -- schema: bit-reversed keys' counters, worker-lease tables ----------------------------


#: what a bit-reversed key's counter can be, for doctor
_Counter = BitReversedSequence | TableSequence | PooledSequence | sa.Sequence


def _native_counter(ctx: _Context, counter: _Counter) -> sa.Sequence | None:
    """The native sequence a counter takes its values from here (None: a sequences-table
    row). A ``sa.Sequence`` is one on every engine (on one without sequences: no counter)."""
    if isinstance(counter, sa.Sequence):
        return counter
    if isinstance(counter, BitReversedSequence) and has_sequences(ctx.dialect):
        return counter.sequence
    if isinstance(counter, PooledSequence) and incrementing_sequences(ctx.dialect):
        return counter.sequence
    return None


def _counter_row(counter: _Counter) -> tuple[str, str]:
    """The name and sequences table of a counter kept in a row."""
    if isinstance(counter, BitReversedSequence):
        return counter.counter.name, counter.counter.table
    assert not isinstance(counter, sa.Sequence)
    return counter.name, counter.table


def _check_counter(ctx: _Context, counter: _Counter) -> None:
    """A bit-reversed key's counter exists: its native sequence, or its row."""
    name = counter.name
    subject = f"sequence {name}"
    sequence = _native_counter(ctx, counter)
    if isinstance(counter, sa.Sequence) and not has_sequences(ctx.dialect):
        engine = facts(ctx.dialect).display_name or ctx.dialect.name
        ctx.add(
            "schema",
            subject,
            PROBLEM,
            f"this engine has no sequences: {engine} cannot hand out the counters of "
            f"BitReversed(Sequence({name!r})), so inserts would fail",
            fix=f"declare the key default=BitReversedSequence({name!r}) (a sequences-table "
            f"row where there are no sequences), created in a migration by "
            f"op.create_bit_reversed_sequence({name!r}), or "
            f"BitReversed(TableSequence({name!r}, mode=...))",
        )
        return
    if isinstance(counter, PooledSequence):
        schema = f", schema={counter.schema!r}" if counter.schema else ""
        fix = (
            f"in a migration: op.create_pooled_sequence({name!r}, "
            f"{counter.allocation_size}{schema})"
        )
    elif isinstance(counter, BitReversedSequence | sa.Sequence):
        fix = f"in a migration: op.create_bit_reversed_sequence({name!r})"
    else:
        fix = f"in a migration: op.create_table_sequence({name!r})"
    catalog = facts(ctx.dialect).read_sequence_catalog
    if isinstance(counter, PooledSequence) and sequence is not None and catalog is not None:
        found = catalog(ctx.conn, sequence)
        exists = found is not None
        if found is not None and (found[0] != counter.allocation_size or found[1]):
            _report_increment(ctx, counter, *found)
    elif sequence is not None:
        schema_name = ctx.schema(sequence.schema)
        exists = sequence.name in sa.inspect(ctx.conn).get_sequence_names(schema=schema_name)
    else:
        row, table = _counter_row(counter)
        try:
            exists = read_next_value(ctx.conn, row, table=table) is not None
        except SequencesTableNotFoundError:
            exists = False
    if exists:
        ctx.add("schema", subject, OK, f"the bit-reversed key's counter {name!r} exists")
    else:
        ctx.add(
            "schema",
            subject,
            PROBLEM,
            f"the bit-reversed key's counter {name!r} does not exist: inserts would fail",
            fix=fix,
        )


class _TooManyKeysError(Exception):
    """The table holds more than BIT_REVERSED_SCAN_LIMIT rows: its keys are not all read."""


#: where a bit-reversed key's counter stands: the lowest and highest counter it may hand
#: out next (equal unless the server caches values), or why that is not known
_Position = tuple[int, int] | str


def _check_bit_reversed_behind(ctx: _Context, key: _Key, counter: _Counter) -> None:
    """A bit-reversed key's counter hands out counters past every one the table's keys
    reverse to (``reverse_bits(key)``: ``MAX(key)`` says nothing of them)."""
    strategy = key.strategy
    assert isinstance(strategy, BitReversed)
    if counter is not strategy and isinstance(counter, BitReversedSequence):
        # BitReversed(BitReversedSequence(...)): reversed twice, the keys are the counters
        ctx.add("behind", key.subject, SKIPPED, "not checked: the keys are bit-reversed twice")
        return
    no_max = ctx.no_max.get(key.subject)
    position = no_max or _counter_position(ctx, counter)  # whether it can be read at all
    if isinstance(position, str):
        ctx.add("behind", key.subject, SKIPPED, position)
        return
    sequence = _native_counter(ctx, counter)
    if sequence is not None and _session_cache(ctx, key, sequence):
        return
    try:
        largest = _largest_counter(ctx, key, strategy.skip_range)
    except _NoIntegerMaxError as exc:
        _report_no_integer(ctx, key, exc.value, what="a key the table holds")
        return
    except _TooManyKeysError:
        ctx.add(
            "behind",
            key.subject,
            SKIPPED,
            f"not checked: the table holds more than {BIT_REVERSED_SCAN_LIMIT:,} rows, and a "
            "bit-reversed key's counter can only be judged by reading every key (doctor reads "
            f"at most {BIT_REVERSED_SCAN_LIMIT:,}); the resync in a migration reads them all "
            "and never moves the counter back",
            fix=_bit_reversed_fix(ctx, key, counter),
        )
        return
    # read again after the keys: every key read came from a counter taken before
    position = _counter_position(ctx, counter)
    if isinstance(position, str):
        ctx.add("behind", key.subject, SKIPPED, position)
        return
    lowest, next_value = position
    what = f"sequence {counter.name!r}"
    details: dict[str, Any] = {
        "next_value": next_value,
        "lowest_next_value": lowest,
        "max_counter": largest,
    }
    if largest is None or largest < lowest:
        past = (
            "the table has no keys yet"
            if largest is None
            else f"past the largest counter of the table's keys, {largest}"
        )
        ctx.add(
            "behind",
            key.subject,
            OK,
            f"{what} hands out counter {_range(lowest, next_value)} next, {past}",
            details=details,
        )
        return
    held = f"the table already holds key {reverse_bits(largest)}, of counter {largest}"
    if largest >= next_value:
        ctx.add(
            "behind",
            key.subject,
            PROBLEM,
            f"{what} would hand out counter {next_value} next (key "
            f"{reverse_bits(next_value)}), but {held}: inserts would collide",
            fix=_bit_reversed_fix(ctx, key, counter),
            details=details,
        )
    else:
        assert sequence is not None  # only a server's cache leaves a range
        ctx.add(
            "behind",
            key.subject,
            PROBLEM,
            f"{what} may hand out a counter whose key the table holds: the server caches its "
            f"values, so it hands out a counter from {lowest} to {next_value} next, and "
            f"{held}: inserts may collide",
            fix=_nocache_fix(ctx, sequence, next_value),
            details={**details, "cached": True},
        )


def _counter_position(ctx: _Context, counter: _Counter) -> _Position:
    """The counters the key's counter may hand out next, read without taking one."""
    missing = "not checked: the counter does not exist (see schema)"
    sequence = _native_counter(ctx, counter)
    if sequence is not None:
        if not has_sequences(ctx.dialect):
            return "not checked: there are no sequences here (see schema)"
        if natively_bit_reversed(ctx.dialect) or facts(ctx.dialect).read_sequence_next is None:
            return (
                f"not checked: doctor cannot read the counter of sequence {sequence.name!r} on "
                f"{facts(ctx.dialect).display_name or ctx.dialect.name}; compare it "
                + (
                    f"(GET_INTERNAL_SEQUENCE_STATE(SEQUENCE {_sequence_text(ctx, counter)})) "
                    if natively_bit_reversed(ctx.dialect)
                    else ""
                )
                + "with the largest reverse_bits(key) of the table's keys yourself"
            )
        catalog = read_sequence_catalog(ctx.conn, sequence)
        upcoming = None if catalog is None else _native_next(ctx.conn, sequence, catalog[0])
        return missing if upcoming is None else upcoming
    row, table = _counter_row(counter)
    try:
        next_value = read_next_value(ctx.conn, row, table=table)
    except SequencesTableNotFoundError:
        return missing
    return missing if next_value is None else (next_value, next_value)


def _largest_counter(ctx: _Context, key: _Key, skip_range: tuple[int, int] | None) -> int | None:
    """The largest ``reverse_bits(key)`` of the table's keys (None: no key); past
    BIT_REVERSED_SCAN_LIMIT rows, :class:`_TooManyKeysError`. Keys in ``skip_range``
    are never handed out, and negative ones or past 2**63 - 1 are no counter's: left out.

    Read a page at a time in key order (the key column is indexed), in doctor's
    rolled-back transaction: no server-side cursor, which PostgreSQL refuses on an
    AUTOCOMMIT connection.
    """
    source = data_table(key.column.table, key.column.name, None)
    column = source.c[key.column.name]
    after = sa.bindparam("after", type_=sa.BigInteger)
    page = sa.select(column).where(column > after).order_by(column)
    low, high = skip_range or (1, 0)
    largest: int | None = None
    read, last = 0, -1
    while True:
        wanted = min(_KEYS_PER_PAGE, BIT_REVERSED_SCAN_LIMIT + 1 - read)
        keys = list(ctx.conn.scalars(page.limit(wanted), {"after": last}))
        read += len(keys)
        if read > BIT_REVERSED_SCAN_LIMIT:
            raise _TooManyKeysError
        for value in keys:
            try:
                number = check_integer_key(value, source, key.column.name)
            except InvalidSequenceError as exc:
                raise _NoIntegerMaxError(value) from exc
            assert number is not None  # column > after: never NULL
            if number > _MAX_COUNTER:  # this and every key after it: no counter's value
                return largest
            last = number
            if not low <= number <= high:
                counter = reverse_bits(number)
                largest = counter if largest is None else max(largest, counter)
        if len(keys) < wanted:
            return largest


def _sequence_text(ctx: _Context, counter: _Counter) -> str:
    """The native sequence behind a bit-reversed key as SQL names it here."""
    sequence = counter if isinstance(counter, sa.Sequence) else getattr(counter, "sequence", None)
    assert isinstance(sequence, sa.Sequence)
    return identifier_text(ctx.dialect, sequence.name, ctx.schema(sequence.schema))


def _bit_reversed_fix(ctx: _Context, key: _Key, counter: _Counter) -> str:
    """The migration line that moves the counter past every key's counter, never back
    (the op reads the keys again when it runs). A tenant's connection: the schemas
    doctor read (its ``schema_translate_map``'s), named."""
    table = key.column.table
    args = [repr(counter.name), repr(table.name), repr(key.column.name)]
    schema = ctx.schema(table.schema)
    args += [f"schema={schema!r}"] if schema else []
    sequence = None if isinstance(counter, TableSequence) else _native_counter(ctx, counter)
    if isinstance(counter, TableSequence):
        op = "resync_bit_reversed_table_sequence"
    else:
        # a PooledSequence's counters are its blocks' keys: moved as a native one
        op = "resync_bit_reversed_sequence"
        declared = counter if isinstance(counter, sa.Sequence) else counter.sequence
        sequence_schema = ctx.schema(declared.schema)
        args += [f"sequence_schema={sequence_schema!r}"] if sequence_schema else []
    rows = getattr(counter, "table", DEFAULT_TABLE)
    args += [f"sequences_table={rows!r}"] if rows != DEFAULT_TABLE else []
    # keys the strategy never hands out (legacy keys it was adopted over): no counters
    skip_range = getattr(key.strategy, "skip_range", None)
    args += [f"skip_range={tuple(skip_range)!r}"] if skip_range else []
    fix = f"in a migration: op.{op}({', '.join(args)})"
    if sequence is None and ctx.translate:  # its row is in the tenant's sequences table
        fix += f"  # run with the tenant's schema_translate_map={ctx.translate!r}"
    return fix


def _lease_tables(ctx: _Context) -> dict[str, float | None]:
    """Lease table name -> the smallest max_skew of the leases using it (None: unknown)."""
    found: dict[str, float | None] = {}
    for table in ctx.metadata.tables.values():
        if table.info.get("seqkeys") == "workers":
            found.setdefault(table.name, None)
    for key in ctx.keys:
        lease = getattr(key.strategy, "lease", None)
        lease_table = getattr(lease, "table", None)
        if isinstance(lease_table, sa.Table):
            skew = float(getattr(lease, "max_skew", 0.0))
            old = found.get(lease_table.name)
            found[lease_table.name] = skew if old is None else min(old, skew)
    return found


def _check_leases(ctx: _Context) -> None:
    """Each worker-lease table exists and has its ``high_water_ms`` column."""
    inspector = sa.inspect(ctx.conn)
    for name in sorted(_lease_tables(ctx)):
        subject = f"table {name}"
        if not inspector.has_table(name, schema=ctx.schema(None)):
            ctx.add(
                "schema",
                subject,
                PROBLEM,
                f"the worker-lease table {name!r} does not exist",
                fix=f"in a migration: op.create_worker_lease_table({name!r})",
            )
        elif MARK_COLUMN not in {
            c["name"] for c in inspector.get_columns(name, schema=ctx.schema(None))
        }:
            ctx.add(
                "schema",
                subject,
                PROBLEM,
                f"the worker-lease table {name!r} has no {MARK_COLUMN} column (version 0.1): "
                "leases refuse it",
                fix=f"in a migration: op.upgrade_worker_lease_table({name!r})",
            )
        else:
            ctx.add("schema", subject, OK, "the worker-lease table is current")


# -- clock -------------------------------------------------------------------------------


def _check_clock(ctx: _Context) -> None:
    """This host's clock against the server's, beside the leases' ``max_skew``."""
    query = sa.text(f"SELECT {facts(ctx.dialect).now_ms_sql}")
    before = time.time_ns()
    server_ms = int(ctx.conn.scalar(query))
    after = time.time_ns()
    host_ms = (before + after) // 2_000_000
    skew = (server_ms - host_ms) / 1000
    uncertainty = (after - before) / 2e9
    limits = [s for s in _lease_tables(ctx).values() if s is not None]
    details = {"skew_s": round(skew, 3), "uncertainty_s": round(uncertainty, 3)}
    if not limits:
        ctx.add(
            "clock",
            "server",
            INFO,
            f"the server's clock is {skew:+.3f} s from this host's (no worker lease here)",
            details=details,
        )
        return
    limit = min(limits)
    details["max_skew_s"] = limit
    if abs(skew) > limit + uncertainty:
        ctx.add(
            "clock",
            "server",
            PROBLEM,
            f"the server's clock is {skew:+.3f} s from this host's, beyond the lease's "
            f"max_skew={limit:g} s: the lease refuses to start",
            fix="fix the clocks (NTP), or raise WorkerLease(max_skew=...)",
            details=details,
        )
    else:
        ctx.add(
            "clock",
            "server",
            OK,
            f"the server's clock is {skew:+.3f} s from this host's, within the lease's "
            f"max_skew={limit:g} s",
            details=details,
        )


# -- capabilities ------------------------------------------------------------------------


def _check_capabilities(ctx: _Context) -> None:
    """What the server offers: RETURNING, a UUIDv7 function, ``server_uuid()``."""
    dialect = ctx.dialect
    returning = bool(dialect.insert_returning)
    ctx.add(
        "capabilities",
        "RETURNING",
        INFO,
        "INSERT .. RETURNING: the ORM reads server-made keys back with the insert"
        if returning
        else "no INSERT .. RETURNING: the ORM cannot read a key the server mints",
        details={"returning": returning},
    )
    native = _function_text(_compiles(ServerUuid7(), dialect))
    ctx.add(
        "capabilities",
        "UUIDv7",
        INFO,
        f"the server mints UUIDv7: {native}" if native else "the server has no UUIDv7 function",
        details={"server_uuid7": native},
    )
    server = _function_text(_compiles(ServerUuid(), dialect)) if returning else None
    # only the keys whose declared column server_uuid() compiles for (on MariaDB
    # before 11.7 it is UUID() into a UUID column, never CHAR(36) nor BINARY(16))
    client_guids = [
        k.subject
        for k in ctx.keys
        if (isinstance(k.strategy, CombGuidDefault) or k.strategy is new_uuid7)
        and _server_uuid_fits(k.column, dialect)
    ]
    if server and client_guids:
        message = (
            f"server_uuid() is available here ({server}): the server could mint the keys of "
            f"{', '.join(client_guids)} (see choosing.md, Server-minted keys)"
        )
    elif server:
        message = f"server_uuid() is available here ({server})"
    else:
        message = "server_uuid() is not available here: keys are minted on the client"
    ctx.add("capabilities", "server_uuid()", INFO, message, details={"server_uuid": server})


def _counter_of(strategy: object) -> _Counter | None:
    """The counter behind a bit-reversed key (None: not a bit-reversed key, or one of a
    callable doctor cannot read)."""
    if isinstance(strategy, BitReversedSequence):
        return strategy
    if isinstance(strategy, BitReversed) and isinstance(
        strategy.source, BitReversedSequence | TableSequence | PooledSequence | sa.Sequence
    ):
        return strategy.source
    return None


def _range(lowest: int, highest: int) -> str:
    return (
        str(highest) if lowest == highest else f"{lowest} to {highest} (the server caches values)"
    )


def _past(largest: int | None) -> str:
    return "the table has no rows yet" if largest is None else f"past the table's {largest}"


def _orders(strategy: object) -> bool:
    return (
        isinstance(strategy, CombGuidDefault | ServerUuidFunction | TypeIDDefault)
        or strategy is new_uuid7
    )


def _minter(strategy: object, dialect: sa.Dialect) -> Callable[[], object]:
    if isinstance(strategy, CombGuidDefault):
        return strategy.minter(dialect)
    if isinstance(strategy, TypeIDDefault):  # TypeIDs: a UUIDv7 each, bound by TypeIDType
        return strategy
    return new_uuid7


def _name(strategy: object) -> str:
    if strategy is new_uuid7:
        return "new_uuid7"
    if isinstance(strategy, ServerUuid):
        return "server_uuid()"
    if isinstance(strategy, ServerUuid7):
        return "server_uuid7()"
    return repr(strategy)


def _order_fix(strategy: object, type_text: str) -> str:
    if isinstance(strategy, TypeIDDefault):
        return f"declare the column TypeIDType({strategy.prefix!r}), as the model does"
    if type_text.upper().startswith("UUID"):
        return (
            "store COMB keys as CombGuid() (CHAR(36)) or CombGuid(binary=True) (BINARY(16)); "
            "MariaDB's UUID type keeps only UUIDv7 (new_uuid7) in order"
        )
    return "declare the column with the type the key strategy expects (CombGuid)"


def _compiles(element: sa.ColumnElement[Any], dialect: sa.Dialect) -> str | None:
    try:
        return str(element.compile(dialect=dialect))
    except SeqKeysError:
        return None


def _function_text(compiled: str | None) -> str | None:
    """A server function as written, without the parentheses of a column default
    (MySQL's ``(UUID())`` is the function ``UUID()``)."""
    if compiled and compiled.startswith("(") and compiled.endswith(")"):
        depth = 0
        for at, char in enumerate(compiled):
            depth += {"(": 1, ")": -1}.get(char, 0)
            if depth == 0:
                return compiled[1:-1] if at == len(compiled) - 1 else compiled
    return compiled


def _server_uuid_fits(column: sa.Column[Any], dialect: sa.Dialect) -> bool:
    """``server_default=server_uuid()`` compiles for the column's declared type here."""
    trial = sa.Column(column.name, column.type, server_default=server_uuid())
    assert isinstance(trial.server_default, sa.DefaultClause)
    return _compiles(trial.server_default.arg, dialect) is not None  # type: ignore[arg-type]


def _longest_increasing(values: list[int]) -> int:
    """The length of the longest increasing subsequence (the keys already in place)."""
    tails: list[int] = []
    for value in values:
        at = bisect.bisect_left(tails, value)
        if at == len(tails):
            tails.append(value)
        else:
            tails[at] = value
    return len(tails)


def _native_next(
    conn: sa.Connection, sequence: sa.Sequence, increment: int
) -> tuple[int, int] | None:
    """The lowest and highest value the next ``nextval`` may return, read without calling it."""
    read = facts(conn.dialect).read_sequence_next
    return None if read is None else read(conn, sequence, increment)


def _url_of(bind: sa.Engine | sa.Connection) -> str:
    return shown(bind.engine.url)


def _check(conn: sa.Connection, metadata: sa.MetaData, url: str) -> DoctorReport:
    if not isinstance(metadata, sa.MetaData):
        raise SeqKeysError(
            f"doctor() takes a MetaData (e.g. Base.metadata), not {type(metadata).__name__}"
        )
    missing = no_database(conn)
    if missing is not None:  # MySQL's reflection would fail on every table (AssertionError)
        raise SeqKeysError(f"doctor() cannot look up the tables: {missing}")
    if conn.in_transaction() and dialect_key(conn.dialect) == "spanner":
        raise SeqKeysError(
            "doctor() on Spanner takes an Engine or a Connection outside a transaction: "
            "each check runs in a transaction it rolls back, and Spanner has no savepoints "
            "to nest one in yours"
        )
    with _short_lock_waits(conn):
        return _run(conn, metadata, url)


def doctor(bind: sa.Engine | sa.Connection, metadata: sa.MetaData) -> DoctorReport:
    """Check every key column of ``metadata`` against the database ``bind`` reaches.

    Returns a :class:`DoctorReport`; nothing outside temporary tables is
    written, and every check's transaction is rolled back.

    :param bind: an :class:`~sqlalchemy.engine.Engine` (a connection is taken
        and returned) or a :class:`~sqlalchemy.engine.Connection` (used as it
        is); for an ``AsyncEngine`` use :func:`doctor_async`.
    :param metadata: the application's ``MetaData`` (``Base.metadata``): its
        tables' key columns and their defaults are what is checked.
    :raises SeqKeysError: ``metadata`` is no ``MetaData``, or ``bind``'s URL names no
        database and the connection has none (MySQL's ``mysql+pymysql://user@host/``):
        the message shows the URL with ``DBNAME`` where the database goes.

    Example::

        report = doctor(engine, Base.metadata)
        print(report.format())
        assert report.healthy, report.problems
    """
    if isinstance(bind, sa.Connection):
        return _check(bind, metadata, _url_of(bind))
    if not isinstance(bind, sa.Engine):
        raise SeqKeysError(
            f"doctor() takes an Engine or Connection, not {type(bind).__name__}; "
            "for an AsyncEngine, await doctor_async(engine, metadata)"
        )
    with bind.connect() as conn:
        return _check(conn, metadata, _url_of(bind))


async def doctor_async(bind: AsyncEngine | AsyncConnection, metadata: sa.MetaData) -> DoctorReport:
    """:func:`doctor` for an ``AsyncEngine`` or ``AsyncConnection``.

    The same checks and report; the SQL runs in SQLAlchemy's greenlet.

    :param bind: an :class:`~sqlalchemy.ext.asyncio.AsyncEngine` (a connection
        is taken and returned) or an
        :class:`~sqlalchemy.ext.asyncio.AsyncConnection` (used as it is).
    :param metadata: the application's ``MetaData``, as for :func:`doctor`.

    Example::

        report = await doctor_async(async_engine, Base.metadata)
    """
    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

    if not isinstance(bind, (AsyncEngine, AsyncConnection)):  # checked before bind.engine
        raise SeqKeysError(
            f"doctor_async() takes an AsyncEngine or AsyncConnection, not {type(bind).__name__}"
        )
    url = shown(bind.engine.url)
    if isinstance(bind, AsyncConnection):
        return await bind.run_sync(_check, metadata, url)
    async with bind.connect() as conn:
        return await conn.run_sync(_check, metadata, url)


# -- the command line (seqkeys doctor) ----------------------------------------------------


def load_metadata(spec: str) -> sa.MetaData:
    """The MetaData that ``module:attr`` names: a MetaData, or a declarative base's.

    Example::

        load_metadata("myapp.models:Base")      # Base.metadata
        load_metadata("myapp.models:metadata")
    """
    import importlib
    import os
    import sys

    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise SeqKeysError(
            f"--models takes module:attribute (e.g. myapp.models:Base), not {spec!r}"
        )
    if os.getcwd() not in sys.path:  # as `python -m` would: the models of the current directory
        sys.path.insert(0, os.getcwd())
    try:
        found: Any = importlib.import_module(module_name)
    except Exception as exc:  # the module's own error (ValueError, SyntaxError...): say which
        raise SeqKeysError(
            f"cannot load --models {spec}: importing {module_name} raised "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    try:
        for part in attr.split("."):
            found = getattr(found, part)
    except AttributeError as exc:
        raise SeqKeysError(f"cannot load --models {spec}: {type(exc).__name__}: {exc}") from exc
    if isinstance(found, sa.MetaData):
        return found
    metadata = getattr(found, "metadata", None)
    if isinstance(metadata, sa.MetaData):
        return metadata
    raise SeqKeysError(
        f"--models {spec} names a {type(found).__name__}, not a MetaData or a declarative base"
    )


def run_command(engine: sa.Engine, metadata: sa.MetaData, models: str, *, as_json: bool) -> int:
    """``seqkeys doctor`` once its arguments are checked (``cli``): print the report;
    0 when healthy, 1 on a problem, 2 when ``models`` hold no key column."""
    import sys

    if not _keys(metadata):  # nothing to check is no clean bill of health
        engine.dispose()
        tables = len(metadata.tables)
        print(
            f"seqkeys doctor: --models {models} holds no key column of this library "
            f"({tables} table{'s' if tables != 1 else ''}): nothing would be checked. "
            + _NO_KEYS_FIX[0].upper()
            + _NO_KEYS_FIX[1:],
            file=sys.stderr,
        )
        return 2
    try:
        report = doctor(engine, metadata)
    except (SeqKeysError, sa.exc.SQLAlchemyError) as exc:
        print(f"seqkeys doctor: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        engine.dispose()
    print(report.to_json() if as_json else report.format())
    return 0 if report.healthy else 1
