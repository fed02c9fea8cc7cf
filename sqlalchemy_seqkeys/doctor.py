"""``doctor``: a checkup of every key column of a MetaData against the live database.

For every column whose default (or server default) is one of this library's
strategies, :func:`doctor` asks the database:

- **order**: are the keys the column's own default mints kept in minting order
  by the column's real type? It mints 1,000 keys, inserts them into a
  temporary table whose key column has the type (and collation) the database
  reports for the real column, reads them back ``ORDER BY`` the key and counts
  how many are out of place (COMB keys in MariaDB's ``UUID`` type, a type that
  round-trips badly). Skipped where order is not promised (random keys,
  Spanner);
- **behind**: a table sequence or pooled native sequence whose next value is at
  or below the largest key already in its table (the fix: the resync command),
  and a native sequence whose ``INCREMENT BY`` is not the allocation size;
- **schema**: the sequences and worker-lease tables exist and are current
  (names compared exactly, ``high_water_ms``), and each declared sequence has
  its row or native sequence;
- **clock**: this host's clock against the server's, beside the lease's
  ``max_skew``;
- **capabilities**: ``RETURNING``, a server UUIDv7 function, ``server_uuid()``.

It writes nothing but the temporary tables it drops, runs every check in a
transaction it rolls back, and never moves a sequence: a finding carries the
command that fixes it. ``report.healthy`` is False when any finding is a
problem (``seqkeys doctor`` then exits with 1)::

    report = doctor(engine, Base.metadata)
    print(report.format())
    if not report.healthy:
        for finding in report.problems:
            print(finding.fix)
"""

from __future__ import annotations

import bisect
import functools
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from ._columns import declared_default
from ._dialect import (
    dialect_key,
    facts,
    family,
    has_sequences,
    identifier_text,
    incrementing_sequences,
)
from .bitreverse import BitReversed, BitReversedSequence
from .dialects import read_sequence_catalog
from .errors import SeqKeysError, SequencesTableNotFoundError
from .pooled import PooledSequence
from .sequences import TableSequence
from .sequences.table import inexact_collation, read_next_value
from .server_keys import ServerUuid
from .snowflake import Snowflake
from .types import CombGuidDefault
from .uuid7 import new_uuid7
from .uuid7_sql import ServerUuid7
from .workers import MARK_COLUMN

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

__all__ = ["DoctorFinding", "DoctorReport", "doctor", "doctor_async"]

#: keys minted for the order check
ORDER_SAMPLE = 1000
_ORDER_TABLE = "seqkeys_doctor_order"
#: keys minted a millisecond (so the sample covers 100 of them)
_PER_MILLISECOND = 10

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
        return {
            "check": self.check,
            "subject": self.subject,
            "status": self.status,
            "message": self.message,
            "fix": self.fix,
            "details": self.details,
        }


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
        | BitReversedSequence,
    ) or (given is new_uuid7):
        return given
    server = column.server_default
    if isinstance(server, sa.DefaultClause) and isinstance(server.arg, ServerUuid | ServerUuid7):
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


class _Run:
    def __init__(self, conn: sa.Connection, metadata: sa.MetaData, url: str) -> None:
        self.conn = conn
        self.metadata = metadata
        self.url = url
        self.dialect = conn.dialect
        self.findings: list[DoctorFinding] = []
        #: quoted names of the temporary tables to drop after the check's transaction
        self.temporary: list[str] = []
        self.keys = _keys(metadata)

    def add(self, check: str, subject: str, status: str, message: str, **kw: Any) -> None:
        finding = DoctorFinding(check, subject, status, message, **kw)
        if finding not in self.findings:  # a table two keys share is reported once
            self.findings.append(finding)

    def guarded(self, check: str, subject: str, body: Callable[[], None]) -> None:
        """Run ``body`` in a transaction that is rolled back; an error is a problem."""
        in_transaction = self.conn.in_transaction()
        transaction = self.conn.begin_nested() if in_transaction else self.conn.begin()
        try:
            body()
        except (SeqKeysError, sa.exc.SQLAlchemyError) as exc:
            self.add(check, subject, PROBLEM, f"could not check: {type(exc).__name__}: {exc}")
        finally:
            if transaction.is_active:
                transaction.rollback()
            # A temporary table outlives a rollback on MariaDB, and on SQLite
            # its DROP inside the transaction was rolled back with it.
            for table in self.temporary:
                self.conn.exec_driver_sql(f"DROP TABLE IF EXISTS {table}")
                if not in_transaction:  # never the caller's transaction
                    self.conn.commit()
            self.temporary.clear()

    def run(self) -> DoctorReport:
        for key in self.keys:
            if _orders(key.strategy):
                self.guarded("order", key.subject, functools.partial(self.order, key))
        for key in self.keys:
            if isinstance(key.strategy, TableSequence | PooledSequence):
                self.guarded("behind", key.subject, functools.partial(self.behind, key))
        for key in self.keys:
            counter = _counter_of(key.strategy)
            if counter is not None:
                self.guarded("schema", key.subject, functools.partial(self.counter, counter))
        self.guarded("schema", "worker leases", self.leases)
        self.guarded("clock", "server", self.clock)
        self.capabilities()
        version = self.dialect.server_version_info
        database = {
            "url": self.url,
            "dialect": self.dialect.name,
            "server_version": ".".join(str(p) for p in version) if version else None,
            "key_columns": [k.subject for k in self.keys],
        }
        return DoctorReport(database, tuple(self.findings))

    # -- order -----------------------------------------------------------------------

    def order(self, key: _Key) -> None:
        strategy, column = key.strategy, key.column
        if dialect_key(self.dialect) == "spanner":
            self.add(
                "order",
                key.subject,
                SKIPPED,
                "Spanner: keys are meant to spread over its splits, not to follow time",
            )
            return
        if isinstance(strategy, CombGuidDefault) and strategy.layout_for(self.dialect) is None:
            self.add("order", key.subject, SKIPPED, "random keys here: no order is promised")
            return
        real = self.real_column(key)
        if real is None:
            return
        name = self.dialect.identifier_preparer.quote(_ORDER_TABLE)
        server_default: sa.ColumnElement[Any] | None = None
        if isinstance(strategy, ServerUuid | ServerUuid7):
            server_default = type(strategy)()  # checked against the real column's type
        table = sa.Table(
            _ORDER_TABLE,
            sa.MetaData(),
            sa.Column("n", sa.Integer, primary_key=True, autoincrement=False),
            sa.Column(
                "k",
                real["type"],
                nullable=False,
                server_default=server_default,
            ),
            prefixes=["TEMPORARY"],
        )
        self.temporary.append(name)
        table.create(self.conn)
        if isinstance(strategy, ServerUuid | ServerUuid7):
            rows = [{"n": n} for n in range(ORDER_SAMPLE)]
            self.conn.execute(sa.insert(table), rows)
        else:
            mint = _minter(strategy, self.dialect)
            # the declared type binds the keys: what the application sends
            sent = sa.table(_ORDER_TABLE, sa.column("n"), sa.column("k", column.type))
            minted = []
            for n in range(ORDER_SAMPLE):
                if n % _PER_MILLISECOND == 0:
                    # over many milliseconds: whether a type reorders a key can
                    # depend on its time bits (MariaDB's UUID swaps by version bits)
                    time.sleep(0.001)
                minted.append({"n": n, "k": mint()})
            self.conn.execute(sa.insert(sent), minted)
        back = list(self.conn.scalars(sa.select(table.c.n).order_by(table.c.k)))
        misplaced = len(back) - _longest_increasing(back)
        type_text = self.dialect.type_compiler_instance.process(real["type"])
        details = {"sample": ORDER_SAMPLE, "out_of_order": misplaced, "type": type_text}
        if misplaced:
            self.add(
                "order",
                key.subject,
                PROBLEM,
                f"{misplaced} of {ORDER_SAMPLE} keys minted by {_name(strategy)} come back out "
                f"of minting order from a {type_text} column: inserts land all over the index",
                fix=_order_fix(strategy, type_text),
                details=details,
            )
        else:
            self.add(
                "order",
                key.subject,
                OK,
                f"{ORDER_SAMPLE} keys of {_name(strategy)} sort in minting order in {type_text}",
                details=details,
            )

    def real_column(self, key: _Key) -> dict[str, Any] | None:
        """The column as the database has it; None (and a problem) if it is missing."""
        table = key.column.table
        inspector = sa.inspect(self.conn)
        if not inspector.has_table(table.name, schema=table.schema):
            self.add(
                "schema",
                key.subject,
                PROBLEM,
                f"table {table.name!r} does not exist",
                fix="run the migrations that create it (alembic upgrade head)",
            )
            return None
        for reflected in inspector.get_columns(table.name, schema=table.schema):
            if reflected["name"] == key.column.name:
                return dict(reflected)
        self.add(
            "schema",
            key.subject,
            PROBLEM,
            f"table {table.name!r} has no column {key.column.name!r}",
            fix="run the migrations that add it (alembic upgrade head)",
        )
        return None

    # -- sequences behind the data ---------------------------------------------------

    def behind(self, key: _Key) -> None:
        strategy = key.strategy
        if isinstance(strategy, PooledSequence) and incrementing_sequences(self.dialect):
            self.behind_native(key, strategy)
            return
        assert isinstance(strategy, TableSequence | PooledSequence)
        name, table_name = strategy.name, strategy.table
        try:
            collation = inexact_collation(self.conn, table_name)
            next_value = read_next_value(self.conn, name, table=table_name)
        except SequencesTableNotFoundError:
            self.add(
                "schema",
                f"table {table_name}",
                PROBLEM,
                f"the sequences table {table_name!r} does not exist",
                fix=f"in a migration: op.create_sequences_table({table_name!r})",
            )
            return
        if collation is not None:
            self.add(
                "schema",
                f"table {table_name}",
                PROBLEM,
                f"the sequences table compares names case-insensitively ({collation})",
                fix=f"in a migration: op.make_sequence_names_case_sensitive({table_name!r})",
            )
        largest = self.largest(key)
        if next_value is None:
            start = (largest or 0) + 1
            self.add(
                "schema",
                f"sequence {name}",
                PROBLEM,
                f"the sequences table has no row for {name!r}",
                fix=f"in a migration: op.create_pooled_sequence({name!r}, "
                f"{strategy.allocation_size}, start={start})"
                if isinstance(strategy, PooledSequence)
                else f"in a migration: op.create_table_sequence({name!r}, start={start})",
            )
            return
        table = key.column.table
        details = {"next_value": next_value, "max_key": largest}
        if largest is not None and next_value <= largest:
            schema = f" --schema {table.schema}" if table.schema else ""
            self.add(
                "behind",
                key.subject,
                PROBLEM,
                f"sequence {name!r} would hand out {next_value}, but the table already holds "
                f"keys up to {largest}: inserts would collide",
                fix=f"seqkeys resync --url {self.url} --sequence {name} --table {table.name} "
                f"--column {key.column.name}{schema}"
                + (f" --sequences-table {table_name}" if table_name != "sequences" else ""),
                details=details,
            )
        else:
            self.add(
                "behind",
                key.subject,
                OK,
                f"sequence {name!r} hands out {next_value} next, {_past(largest)}",
                details=details,
            )

    def behind_native(self, key: _Key, pooled: PooledSequence) -> None:
        found = read_sequence_catalog(self.conn, pooled.sequence)
        name = pooled.name
        if found is None:
            self.add(
                "schema",
                f"sequence {name}",
                PROBLEM,
                f"there is no sequence {name!r}",
                fix=f"in a migration: op.create_pooled_sequence({name!r}, "
                f"{pooled.allocation_size})",
            )
            return
        increment, cycles = found
        sql_name = identifier_text(self.dialect, name, pooled.schema)
        if increment != pooled.allocation_size or cycles:
            why = (
                f"INCREMENT BY {increment}, not the allocation size {pooled.allocation_size}"
                if increment != pooled.allocation_size
                else "CYCLE"
            )
            self.add(
                "behind",
                f"sequence {name}",
                PROBLEM,
                f"sequence {name!r} has {why}: its blocks would overlap other writers' keys",
                fix=f"ALTER SEQUENCE {sql_name} INCREMENT BY {pooled.allocation_size}"
                + (f" {_NO_CYCLE.get(family(self.dialect), 'NO CYCLE')}" if cycles else "")
                + " "
                f"(or declare PooledSequence({name!r}, batch_size={increment}))",
                details={"increment": increment, "allocation_size": pooled.allocation_size},
            )
        next_value = _native_next(self.conn, pooled.sequence, increment)
        largest = self.largest(key)
        details = {"next_value": next_value, "max_key": largest}
        if next_value is None:
            self.add("behind", key.subject, SKIPPED, "the sequence's value cannot be read here")
        elif largest is not None and next_value <= largest:
            table = key.column.table
            self.add(
                "behind",
                key.subject,
                PROBLEM,
                f"sequence {name!r} would start its next block at {next_value}, but the "
                f"table already holds keys up to {largest}: inserts would collide",
                fix=f"resync_pooled_sequence(engine, {name!r}, {table.name!r}, "
                f"{key.column.name!r}) (Python; moves it past MAX, never back)",
                details=details,
            )
        else:
            self.add(
                "behind",
                key.subject,
                OK,
                f"sequence {name!r} starts its next block at {next_value}, {_past(largest)}",
                details=details,
            )

    def largest(self, key: _Key) -> int | None:
        table = key.column.table
        source = sa.table(table.name, sa.column(key.column.name), schema=table.schema)
        value = self.conn.scalar(sa.select(sa.func.max(source.c[key.column.name])))
        return None if value is None else int(value)

    # -- bit-reversed keys' counters ------------------------------------------------

    def counter(self, counter: BitReversedSequence | TableSequence | sa.Sequence) -> None:
        """A bit-reversed key's counter exists: its native sequence, or its row."""
        name = counter.name
        subject = f"sequence {name}"
        native = isinstance(counter, sa.Sequence) or (
            isinstance(counter, BitReversedSequence) and has_sequences(self.dialect)
        )
        if native:
            schema = getattr(counter, "schema", None)
            exists = name in sa.inspect(self.conn).get_sequence_names(schema=schema)
            fix = f"in a migration: op.create_bit_reversed_sequence({name!r})"
        else:
            assert not isinstance(counter, sa.Sequence)  # a Sequence counts as native
            table = counter.table
            try:
                exists = read_next_value(self.conn, name, table=table) is not None
            except SequencesTableNotFoundError:
                exists = False
            fix = f"in a migration: op.create_table_sequence({name!r})"
            if isinstance(counter, BitReversedSequence):
                fix = f"in a migration: op.create_bit_reversed_sequence({name!r})"
        if exists:
            self.add("schema", subject, OK, f"the bit-reversed key's counter {name!r} exists")
        else:
            self.add(
                "schema",
                subject,
                PROBLEM,
                f"the bit-reversed key's counter {name!r} does not exist: inserts would fail",
                fix=fix,
            )

    # -- worker leases, clock --------------------------------------------------------

    def lease_tables(self) -> dict[str, float | None]:
        """Lease table name -> the smallest max_skew of the leases using it (None: unknown)."""
        found: dict[str, float | None] = {}
        for table in self.metadata.tables.values():
            if table.info.get("seqkeys") == "workers":
                found.setdefault(table.name, None)
        for key in self.keys:
            lease = getattr(key.strategy, "lease", None)
            lease_table = getattr(lease, "table", None)
            if isinstance(lease_table, sa.Table):
                skew = float(getattr(lease, "max_skew", 0.0))
                old = found.get(lease_table.name)
                found[lease_table.name] = skew if old is None else min(old, skew)
        return found

    def leases(self) -> None:
        inspector = sa.inspect(self.conn)
        for name in sorted(self.lease_tables()):
            subject = f"table {name}"
            if not inspector.has_table(name):
                self.add(
                    "schema",
                    subject,
                    PROBLEM,
                    f"the worker-lease table {name!r} does not exist",
                    fix=f"in a migration: op.create_worker_lease_table({name!r})",
                )
            elif MARK_COLUMN not in {c["name"] for c in inspector.get_columns(name)}:
                self.add(
                    "schema",
                    subject,
                    PROBLEM,
                    f"the worker-lease table {name!r} has no {MARK_COLUMN} column (version 0.1): "
                    "leases refuse it",
                    fix=f"in a migration: op.upgrade_worker_lease_table({name!r})",
                )
            else:
                self.add("schema", subject, OK, "the worker-lease table is current")

    def clock(self) -> None:
        query = sa.text(f"SELECT {facts(self.dialect).now_ms_sql}")
        before = time.time_ns()
        server_ms = int(self.conn.scalar(query))
        after = time.time_ns()
        host_ms = (before + after) // 2_000_000
        skew = (server_ms - host_ms) / 1000
        uncertainty = (after - before) / 2e9
        limits = [s for s in self.lease_tables().values() if s is not None]
        details = {"skew_s": round(skew, 3), "uncertainty_s": round(uncertainty, 3)}
        if not limits:
            self.add(
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
            self.add(
                "clock",
                "server",
                PROBLEM,
                f"the server's clock is {skew:+.3f} s from this host's, beyond the lease's "
                f"max_skew={limit:g} s: the lease refuses to start",
                fix="fix the clocks (NTP), or raise WorkerLease(max_skew=...)",
                details=details,
            )
        else:
            self.add(
                "clock",
                "server",
                OK,
                f"the server's clock is {skew:+.3f} s from this host's, within the lease's "
                f"max_skew={limit:g} s",
                details=details,
            )

    # -- capabilities ----------------------------------------------------------------

    def capabilities(self) -> None:
        dialect = self.dialect
        returning = bool(dialect.insert_returning)
        self.add(
            "capabilities",
            "RETURNING",
            INFO,
            "INSERT .. RETURNING: the ORM reads server-made keys back with the insert"
            if returning
            else "no INSERT .. RETURNING: the ORM cannot read a key the server mints",
            details={"returning": returning},
        )
        native = _compiles(ServerUuid7(), dialect)
        self.add(
            "capabilities",
            "UUIDv7",
            INFO,
            f"the server mints UUIDv7: {native}" if native else "the server has no UUIDv7 function",
            details={"uuidv7": native},
        )
        server = _compiles(ServerUuid(), dialect) if returning else None
        client_guids = [
            k.subject
            for k in self.keys
            if isinstance(k.strategy, CombGuidDefault) or k.strategy is new_uuid7
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
        self.add("capabilities", "server_uuid()", INFO, message, details={"server_uuid": server})


def _counter_of(strategy: object) -> BitReversedSequence | TableSequence | sa.Sequence | None:
    """The counter behind a bit-reversed key (None: not a bit-reversed key)."""
    if isinstance(strategy, BitReversedSequence):
        return strategy
    if isinstance(strategy, BitReversed) and isinstance(
        strategy.source, BitReversedSequence | TableSequence | sa.Sequence
    ):
        return strategy.source
    return None


def _past(largest: int | None) -> str:
    return "the table has no rows yet" if largest is None else f"past the table's {largest}"


def _orders(strategy: object) -> bool:
    return isinstance(strategy, CombGuidDefault | ServerUuid | ServerUuid7) or strategy is new_uuid7


def _minter(strategy: object, dialect: sa.Dialect) -> Callable[[], uuid.UUID]:
    if isinstance(strategy, CombGuidDefault):
        return strategy.minter(dialect)
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


def _native_next(conn: sa.Connection, sequence: sa.Sequence, increment: int) -> int | None:
    """The value the sequence's next ``nextval`` returns, read without calling it; None: unknown."""
    read = facts(conn.dialect).read_sequence_next
    return None if read is None else read(conn, sequence, increment)


def _url_of(bind: sa.Engine | sa.Connection) -> str:
    return bind.engine.url.render_as_string(hide_password=True)


def _check(conn: sa.Connection, metadata: sa.MetaData, url: str) -> DoctorReport:
    if not isinstance(metadata, sa.MetaData):
        raise SeqKeysError(
            f"doctor() takes a MetaData (e.g. Base.metadata), not {type(metadata).__name__}"
        )
    return _Run(conn, metadata, url).run()


def doctor(bind: sa.Engine | sa.Connection, metadata: sa.MetaData) -> DoctorReport:
    """Check every key column of ``metadata`` against the database ``bind`` reaches.

    Returns a :class:`DoctorReport`; nothing outside temporary tables is
    written, and every check's transaction is rolled back.

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

    Example::

        report = await doctor_async(async_engine, Base.metadata)
    """
    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

    if not isinstance(bind, (AsyncEngine, AsyncConnection)):  # checked before bind.engine
        raise SeqKeysError(
            f"doctor_async() takes an AsyncEngine or AsyncConnection, not {type(bind).__name__}"
        )
    url = bind.engine.url.render_as_string(hide_password=True)
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
        for part in attr.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as exc:
        raise SeqKeysError(f"cannot load --models {spec}: {type(exc).__name__}: {exc}") from exc
    if isinstance(found, sa.MetaData):
        return found
    metadata = getattr(found, "metadata", None)
    if isinstance(metadata, sa.MetaData):
        return metadata
    raise SeqKeysError(
        f"--models {spec} names a {type(found).__name__}, not a MetaData or a declarative base"
    )


def run_command(url: str, models: str, *, as_json: bool = False) -> int:
    """``seqkeys doctor``: print the report; 0 when healthy, 1 on a problem, 2 on bad arguments."""
    import sys

    try:
        metadata = load_metadata(models)
    except SeqKeysError as exc:
        print(f"seqkeys doctor: {exc}", file=sys.stderr)
        return 2
    try:
        engine = sa.create_engine(url)
    except (sa.exc.ArgumentError, ImportError) as exc:
        print(f"seqkeys doctor: cannot use --url: {exc}", file=sys.stderr)
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
