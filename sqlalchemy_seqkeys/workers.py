"""Snowflake worker ids leased from a table in your database: leases for sync and async.

Each :class:`WorkerLease` claims a row of ``seqkeys_workers`` (worker id, owner,
expiry by the server's clock, and the high-water mark: the highest timestamp its
holder may mint) and renews it in the background; a generator bound to the lease
(``Snowflake(worker_id=lease)``) checks it as it mints. :class:`AsyncWorkerLease`
wraps a ``WorkerLease`` as ``AsyncEngine`` wraps ``Engine``: the same SQL, run in
SQLAlchemy's greenlet, renewed by an asyncio task (see ``_background``).

User guide: docs/strategies/snowflake.md and docs/production.md (Worker leases).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import sys
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Coroutine, Iterator
from typing import TYPE_CHECKING, Any, Generic, NoReturn, TypeVar, overload

import sqlalchemy as sa
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.expression import FunctionElement

from . import _fork
from ._aio import pause
from ._background import GreenletLock, Periodic, StartTask, periodic, retrieve_error, within
from ._dialect import check_identifier, facts, insert_ignoring_conflict
from ._lease import Lease, Minter, floor_error
from ._validate import (
    check_flag,
    check_instance,
    check_int,
    check_name,
    check_seconds,
    checked_clock,
)
from .errors import (
    ClockSkewError,
    ForkedWorkerError,
    InvalidLeaseError,
    LeaseTableOutdatedError,
    SeqKeysError,
    WorkerIdNotBoundError,
    WorkerIdsExhaustedError,
    WorkerLeaseDatabaseError,
    WorkerLeaseLostError,
)
from .sequences._retry import backoff, describe, is_transient
from .sequences.table import library_table

if TYPE_CHECKING:  # asyncio and sqlalchemy.ext.asyncio: imported when an async lease starts
    import asyncio

    from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = ["AsyncWorkerLease", "WorkerLease", "workers_table"]

DEFAULT_TABLE = "seqkeys_workers"
MARK_COLUMN = "high_water_ms"
_MAX_TTL_S = 86400.0
#: the shortest ttl (seconds): renewed every ttl / 3, a lease of 0.25 s writes its row
#: at most 12 times a second, and the row outlives a round trip and a scheduler's
#: wake-up (shorter, a renewal cannot keep up: a ttl under 1 ms was a row written
#: already expired, renewed in a busy loop)
_MIN_TTL_S = 0.25
_M = TypeVar("_M", bound=Minter)
_T = TypeVar("_T")


def _suspend_counting_clock() -> Callable[[], float]:
    # CLOCK_BOOTTIME goes on through a host suspend; CLOCK_MONOTONIC does not,
    # and a lease must count the time its holder was asleep.
    boottime = getattr(time, "CLOCK_BOOTTIME", None)
    if boottime is not None:
        try:
            time.clock_gettime(boottime)
        except OSError:  # pragma: no cover - a kernel without it
            return time.monotonic
        return lambda: time.clock_gettime(boottime)
    return time.monotonic  # pragma: no cover - not Linux


_lease_clock = _suspend_counting_clock()
_lease_locks: dict[int, threading.Lock] = {}
_log = logging.getLogger(__name__)
#: a forked child whose own lease could not be claimed tries again after this
#: wait, doubled at each failure up to the second bound (seconds)
_RECLAIM_BACKOFF_S = (1.0, 30.0)
#: the longest a close waits for the database (and never longer than the ttl,
#: after which the row expires by itself)
_CLOSE_GRACE_S = 5.0
#: a lease table's CREATE is tried this often: the ones a concurrent CREATE beat
#: check again, and find the table
_CREATE_TRIES = 3
#: a claim aborted by the database (Spanner's aborted transaction, a deadlock, a
#: serialization failure) runs again this many times in all, after a wait drawn
#: from 0 to base * 2**n seconds, at most the second bound: the Spanner emulator
#: aborts all but one of the read-write transactions running at once
_CLAIM_ATTEMPTS = 10
_CLAIM_BACKOFF_S = (0.01, 1.0)
#: a renewal aborted runs again at once, after a wait drawn from 0 to base * 2**n
#: seconds (at most the second bound), while the lease is still certain
_RENEW_ATTEMPTS = 6
_RENEW_BACKOFF_S = (0.005, 0.25)


class _NoAnswerError(Exception):
    """The database did not answer a lease's write in the time it had."""


@contextlib.contextmanager
def _holding(lock: threading.Lock | GreenletLock, timeout: float) -> Iterator[bool]:
    """``lock`` held for the block if it could be taken within ``timeout`` seconds."""
    held = lock.acquire(timeout=max(timeout, 0.0))
    try:
        yield held
    finally:
        if held:
            lock.release()


def _db_errors(engine: object) -> tuple[type[BaseException], ...]:
    """What a lease's database work on ``engine`` fails with.

    SQLAlchemy's errors; the driver's own, which SQLAlchemy lets through in a
    few places (an isolation-level switch on a dropped connection); socket and
    timeout errors; Google's API errors (Spanner's client raises them bare).
    """
    errors: list[type[BaseException]] = [sa.exc.SQLAlchemyError, OSError]
    error = getattr(getattr(getattr(engine, "dialect", None), "dbapi", None), "Error", None)
    if isinstance(error, type) and issubclass(error, Exception):
        errors.append(error)
    google = sys.modules.get("google.api_core.exceptions")
    if google is not None:
        errors.append(google.GoogleAPIError)
    # SQLAlchemy 2.0's asyncpg adapter lets a refused connect's own error through
    asyncpg = sys.modules.get("asyncpg.exceptions")
    if asyncpg is not None:
        errors.extend((asyncpg.PostgresError, asyncpg.InterfaceError))
    return tuple(errors)


def _is_disconnect(conn: sa.Connection, exc: BaseException) -> bool:
    """True if ``exc`` says the server dropped ``conn``."""
    if isinstance(exc, sa.exc.DBAPIError):
        return exc.connection_invalidated
    dialect = conn.dialect
    error = getattr(dialect.dbapi, "Error", None)
    if not (isinstance(error, type) and isinstance(exc, error)):
        return False
    return bool(dialect.is_disconnect(exc, None, None))  # type: ignore[arg-type]


def _lost_connection(exc: BaseException) -> bool:
    """True if ``exc`` says the connection dropped (the write's outcome may be unknown)."""
    return isinstance(exc, sa.exc.DBAPIError) and exc.connection_invalidated


def _connection_failed(exc: BaseException) -> bool:
    """True unless ``exc`` is the server's answer to a statement on a live connection.

    SQLAlchemy wraps a statement's error with the statement; an error while
    connecting has none, and a dropped connection is invalidated. Errors it does
    not wrap (sockets, pool timeouts, a driver's own) are taken as the connection's.
    """
    if not isinstance(exc, sa.exc.DBAPIError):
        return True
    return exc.statement is None or exc.connection_invalidated


def _reason(exc: BaseException) -> str:
    """The first line of a database error, as the driver put it."""
    text = str(getattr(exc, "orig", None) or exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    return line if len(line) <= 300 else line[:297] + "..."


class server_now_ms(FunctionElement[int]):  # noqa: N801 - reads like the SQL function it is
    """The database server's current time in Unix milliseconds (one per dialect)."""

    type = sa.BigInteger()
    inherit_cache = True


@compiles(server_now_ms)
def _server_now_ms(element: Any, compiler: Any, **kw: Any) -> str:
    return facts(compiler.dialect).now_ms_sql


def workers_table(metadata: sa.MetaData, name: str = DEFAULT_TABLE) -> sa.Table:
    """Declare the worker-lease table on ``metadata`` (or return the one already there).

    A :class:`WorkerLease` creates its table when it is missing; declare it
    with the models where migrations create every table (Alembic
    autogenerate then proposes it).

    :param metadata: the models' ``MetaData``.
    :param name: the table's name (``table=`` of the leases that use it).

    Example::

        workers_table(Base.metadata)
    """
    check_instance(metadata, sa.MetaData, "metadata", InvalidLeaseError)
    check_name(name, "name", InvalidLeaseError)
    return library_table(
        metadata,
        name,
        "workers",
        sa.Column("worker_id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("owner", sa.String(64), nullable=False),
        # the database server's Unix ms; 0 once the holder released the row
        sa.Column("expires_at", sa.BigInteger, nullable=False),
        # the holder's clock, Unix ms: no id of this worker has a later timestamp
        sa.Column(MARK_COLUMN, sa.BigInteger, nullable=False),
    )


#: a won claim: (worker id, the previous holder's mark, our mark), all Unix ms but the id
_Claim = tuple[int, int, int]


class _Row:
    """The SQL of one lease on its table: claim, renew, release (one transaction each).

    Functions of a sync ``Connection``: a sync engine's, or an async
    engine's run in SQLAlchemy's greenlet. Every write is one compare-and-set.
    """

    def __init__(
        self,
        table: sa.Table,
        *,
        ttl: float,
        max_worker_id: int,
        max_skew: float,
        now_ns: Callable[[], int],
    ) -> None:
        self.table = table
        self.owner = uuid.uuid4().hex
        self.ttl_ms = int(ttl * 1000)
        self.max_worker_id = max_worker_id
        self.max_skew = max_skew
        self.now_ns = now_ns
        #: how a claim waits before it runs again (an async lease's awaits)
        self.sleep: Callable[[float], None] = time.sleep

    def server_and_client_ms(self, conn: sa.Connection) -> tuple[int, int]:
        """The server's Unix ms and ours; raise ClockSkewError if they differ too much."""
        before = self.now_ns()
        server_ms = int(conn.scalar(sa.select(server_now_ms())))  # type: ignore[arg-type]
        after = self.now_ns()
        client_ms = (before + after) // 2_000_000
        skew_ms = client_ms - server_ms
        # the round trip widens what can be told apart
        if abs(skew_ms) > self.max_skew * 1000 + (after - before) / 2e6:
            raise ClockSkewError(
                f"this host's clock is {skew_ms / 1000:+.3f} s from the database server's "
                f"({server_ms} Unix ms on the server), beyond max_skew={self.max_skew:g} s; "
                "fix the clocks (NTP), or raise WorkerLease(max_skew=...)"
            )
        return server_ms, client_ms

    def _claim_on(self, conn: sa.Connection, tried: dict[int, int] | None = None) -> _Claim | None:
        """One claim, or None if another process outraced it.

        ``tried``: worker id -> the previous holder's mark, of the claims this
        start sent whose outcome it does not know (their answer was lost); a
        row found under this lease's owner is one of them, committed after all,
        and is adopted rather than a second id claimed.
        """
        t = self.table
        tried = {} if tried is None else tried
        server_ms, client_ms = self.server_and_client_ms(conn)
        rows = self._rows(conn)
        ours = [row for row in rows if row.owner == self.owner]
        if ours:
            return self._adopt(conn, ours[0], tried, client_ms)
        used = {row.worker_id for row in rows}
        free = [row for row in rows if row.expires_at < server_ms]
        # First an id whose last holder's ids this clock has passed, then
        # one never used, then the one whose last holder's ids end soonest.
        ready = [row for row in free if row.high_water_ms < client_ms]
        never = next((i for i in range(self.max_worker_id + 1) if i not in used), None)
        if ready or never is None:
            if not free:
                raise WorkerIdsExhaustedError(
                    f"all {self.max_worker_id + 1} worker ids in {t.name!r} are leased "
                    "by live processes; wait for one to close or expire, or use a "
                    "layout with more worker bits"
                )
            row = (
                min(ready, key=lambda r: r.worker_id)
                if ready
                else min(free, key=lambda r: (r.high_water_ms, r.worker_id))
            )
            mark = max(row.high_water_ms, client_ms + self.ttl_ms)
            tried[int(row.worker_id)] = int(row.high_water_ms)
            taken = conn.execute(
                sa.update(t)
                .where(
                    t.c.worker_id == row.worker_id,
                    t.c.owner == row.owner,
                    t.c[MARK_COLUMN] == row.high_water_ms,
                    t.c.expires_at < server_now_ms(),
                )
                .values(
                    owner=self.owner,
                    expires_at=server_now_ms() + self.ttl_ms,
                    **{MARK_COLUMN: mark},
                )
            ).rowcount
            if taken != 1:
                return None  # another process took or renewed it first
            return int(row.worker_id), int(row.high_water_ms), mark
        mark = client_ms + self.ttl_ms
        tried[never] = 0
        inserted = conn.execute(
            insert_ignoring_conflict(conn.dialect, t, ["worker_id"])
            .values(
                worker_id=never,
                owner=self.owner,
                expires_at=server_now_ms() + self.ttl_ms,
                **{MARK_COLUMN: mark},
            )
            .execution_options(preserve_rowcount=True)
        ).rowcount
        return (never, 0, mark) if inserted == 1 else None

    def _adopt(
        self, conn: sa.Connection, row: Any, tried: dict[int, int], client_ms: int
    ) -> _Claim | None:
        """Hold ``row``, written under our owner by a claim whose answer was lost.

        The owner is drawn anew at each start: no other process writes it, so
        the row is ours alone. Renewed here (a compare-and-set on the owner);
        its floor is the previous holder's mark as that claim read it (or, not
        known, the row's own mark: waiting past it is always safe).
        """
        t = self.table
        worker_id = int(row.worker_id)
        floor = tried.get(worker_id, int(row.high_water_ms))
        mark = max(int(row.high_water_ms), client_ms + self.ttl_ms)
        renewed = conn.execute(
            sa.update(t)
            .where(t.c.worker_id == worker_id, t.c.owner == self.owner)
            .values(expires_at=server_now_ms() + self.ttl_ms, **{MARK_COLUMN: mark})
        ).rowcount
        return (worker_id, floor, mark) if renewed == 1 else None

    def _rows(self, conn: sa.Connection) -> list[Any]:
        t = self.table
        query = sa.select(t.c.worker_id, t.c.owner, t.c.expires_at, t.c[MARK_COLUMN]).where(
            t.c.worker_id <= self.max_worker_id
        )
        return list(conn.execute(query))

    def claim(self, conn: sa.Connection) -> tuple[_Claim, float]:
        """Claim a worker id: one attempt after another until one wins; and when it was sent.

        A claim is a transaction of its own that reads every row, then writes
        one. One the database aborted (Spanner aborts all but one of the
        transactions running at once; a deadlock, a serialization failure)
        wrote nothing, and runs again after a jittered wait (:attr:`sleep`), up to
        ``_CLAIM_ATTEMPTS`` in all. One whose connection dropped may have
        committed unseen: its row carries this start's owner, which no other
        process writes, and the next attempt finds and adopts it
        (:meth:`_claim_on`) rather than claiming a second id. A write that
        committed after that attempt's read (the dropped connection's COMMIT
        landing late) leaves a row nobody renews, which expires after the ttl:
        never two holders of one id.
        """
        tried: dict[int, int] = {}
        races = aborts = 0
        while True:
            sent = _lease_clock()
            try:
                _standalone(conn)  # again on a connection opened anew after a drop
                with conn.begin():
                    claim = self._claim_on(conn, tried)
            except sa.exc.DBAPIError as exc:
                if is_transient(exc):
                    aborts += 1
                    if aborts < _CLAIM_ATTEMPTS:
                        self.sleep(backoff(aborts, *_CLAIM_BACKOFF_S))
                        continue
                    if not _lost_connection(exc):
                        raise self._contended_error(aborts, exc) from exc
                    raise
                try:
                    outdated = self._outdated(conn)
                except Exception:  # no table at all, or no database: the error says so
                    outdated = False
                if outdated:
                    raise self._outdated_error() from exc
                raise
            if claim is not None:
                return claim, sent
            races += 1
            if races >= self.max_worker_id + 2:
                raise WorkerIdsExhaustedError(
                    f"could not claim a worker id in {self.table.name!r}: other processes "
                    "kept taking them"
                )

    def _contended_error(self, attempts: int, exc: BaseException) -> WorkerLeaseDatabaseError:
        return WorkerLeaseDatabaseError(
            f"could not claim a worker id in {self.table.name!r}: the database aborted the "
            f"claim's transaction {attempts} times in a row (contention with other "
            f"transactions on the lease table; last: {describe(exc)}); nothing was minted. "
            "Processes starting leases at once contend for the table: start them a moment "
            "apart, or claim again"
        )

    def renew(
        self, conn: sa.Connection, worker_id: int, mark_ms: int, at_least_ms: int
    ) -> int | None:
        """Renew the row and move the mark on: the new mark, or None if the row is gone."""
        t = self.table
        with _standalone(conn).begin():
            _, client_ms = self.server_and_client_ms(conn)
            mark = max(mark_ms, client_ms + self.ttl_ms, at_least_ms)
            renewed = conn.execute(
                sa.update(t)
                .where(t.c.worker_id == worker_id, t.c.owner == self.owner)
                .values(expires_at=server_now_ms() + self.ttl_ms, **{MARK_COLUMN: mark})
            ).rowcount
        return mark if renewed == 1 else None

    def release(self, conn: sa.Connection, worker_id: int, mark: int) -> None:
        """Release the row, keeping ``mark``."""
        t = self.table
        with _standalone(conn).begin():
            conn.execute(
                sa.update(t)
                .where(t.c.worker_id == worker_id, t.c.owner == self.owner)
                .values(expires_at=0, **{MARK_COLUMN: mark})
            )

    def _outdated(self, conn: sa.Connection) -> bool:
        """True if the table lacks the mark column (asked after a failed claim)."""
        columns = {c["name"] for c in sa.inspect(conn).get_columns(self.table.name)}
        return MARK_COLUMN not in columns

    def _outdated_error(self) -> LeaseTableOutdatedError:
        name = self.table.name
        table_arg = "" if name == DEFAULT_TABLE else f"table={name!r}"
        return LeaseTableOutdatedError(
            f"the worker-lease table {name!r} has no {MARK_COLUMN!r} column: it was created "
            "by an older sqlalchemy-seqkeys. Add it in an Alembic migration: "
            f"op.upgrade_worker_lease_table({table_arg}) (an operation of the seqkeys Alembic "
            "plugin; alembic revision --autogenerate proposes it), or drop the table while no "
            "process holds a lease (WorkerLease creates it anew)"
        )


class _HeldWorkerId:
    """A held worker id: its state, its checks and the Lease protocol.

    :class:`_RenewedWorkerId` adds the row's renewal and release.
    """

    _kind: str
    _token: int
    _worker_id: int | None
    _minter: Minter | None
    _bind_lock: threading.Lock
    _lost: str | None
    _closed: threading.Event
    _valid_until: float
    _mark_ms: int
    _floor_ms: int
    _extend: Callable[[int], None]
    _children: _Children
    _renew_lock: threading.Lock | GreenletLock
    _start_task: StartTask | None
    _row: _Row
    _state_lock: threading.RLock
    _job: Periodic | None
    #: background renewals that failed in a row (0: the last one committed)
    _failing: int = 0
    clock: Callable[[], int]
    engine: sa.Engine
    table: sa.Table
    owner: str
    ttl: float

    def _started_or_implicit(self) -> None:
        raise NotImplementedError

    def _now_ns(self) -> int:
        # The clock the ids are minted with: the bound generators' once there are any.
        minter = self._minter
        return minter.clock() if minter is not None else self.clock()

    def _in_owner_process(self) -> bool:
        """False in a process forked from the one that made the lease."""
        return _fork.process_token() == self._token

    def _check_table_name(self) -> None:
        """Raise InvalidLeaseError (and close) for a name the engine cannot hold; no I/O.

        PostgreSQL cuts a name past 63 bytes, silently: the first start would
        create the table under the cut name, every later one fail on "already
        exists", and two names alike in their first 63 bytes share one table.
        """
        try:
            check_identifier(
                self.engine.dialect, self.table.name, "lease table name", InvalidLeaseError
            )
        except InvalidLeaseError:
            self._closed.set()
            raise

    def _database_error(self, exc: BaseException) -> WorkerLeaseDatabaseError:
        if _connection_failed(exc):
            return WorkerLeaseDatabaseError(
                f"could not claim a worker id in {self.table.name!r}: the database failed "
                f"({_reason(exc)}); nothing was minted. Check that the server is up and "
                "accepts connections (max_connections, the pool's size), then claim again"
            )
        return WorkerLeaseDatabaseError(
            f"could not claim a worker id in {self.table.name!r}: the database refused the "
            f"lease's SQL ({_reason(exc)}); nothing was minted. Fix what the server's message "
            "names (the table, its name, this user's privileges; create_table=True creates a "
            "missing table), then claim again"
        )

    def _lost_error(self) -> WorkerLeaseLostError:
        if self._lost is not None:
            reason = self._lost
        elif self._closed.is_set():
            reason = "it was closed"
        elif not self._in_owner_process():
            reason = "this process is a fork of the one that holds it"
        else:
            reason = "it was not renewed before it expired"
        return WorkerLeaseLostError(
            f"the lease on worker id {self._worker_id} is no longer certain ({reason}); "
            f"minting with it could duplicate another process's ids. Take a new {self._kind}"
        )

    def __repr__(self) -> str:
        held = "unclaimed" if self._worker_id is None else f"worker_id={self._worker_id}"
        return f"{self._kind}({held}, owner={self.owner[:8]})"

    @property
    def worker_id(self) -> int:
        """The worker id this lease holds (raises WorkerIdNotBoundError before start)."""
        if self._worker_id is None:
            self._started_or_implicit()
        if self._worker_id is None:
            how = (
                "`with WorkerLease(engine) as lease:` or lease.start()"
                if self._kind == "WorkerLease"
                else f"`async with {self._kind}(engine) as lease:` or `await lease.start()`"
            )
            raise WorkerIdNotBoundError(
                f"this {self._kind} has not claimed a worker id yet; claim it with {how}, "
                "then bind generators to it"
            )
        return self._worker_id

    @property
    def valid(self) -> bool:
        """True while the lease is certainly ours: renewed in time and not closed."""
        return (
            self._lost is None
            and not self._closed.is_set()
            and self._in_owner_process()
            and _lease_clock() < self._valid_until
        )

    def check(self) -> int:
        """Return the worker id, or raise WorkerLeaseLostError if the lease may be gone.

        Example::

            lease.check()   # 5
        """
        self._started_or_implicit()
        self.assert_held()
        return self.worker_id

    # -- the Lease protocol (what a Snowflake bound to it calls; see _lease) ---------

    @property
    def floor_ms(self) -> int:
        """The previous holder's high-water mark (Unix ms): ids from here carry later ones."""
        return self._floor_ms

    @property
    def mark_ms(self) -> int:
        """This holder's high-water mark (Unix ms), committed in the row."""
        return self._mark_ms

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed.is_set()

    @property
    def reclaimable(self) -> bool:
        """True for a lease claimed implicitly in a forked child: claimed anew once lost."""
        return self._children.root is not self

    def assert_held(self) -> None:
        """Raise unless the lease is certainly ours; read after the minting clock."""
        if (
            _lease_clock() >= self._valid_until
            or self._lost is not None
            or self._closed.is_set()
            or not self._in_owner_process()
        ):
            if self._worker_id is None:
                self.worker_id  # noqa: B018 - raises the not-started error
            raise self._lost_error()

    def extend_mark(self, until_ms: int) -> None:
        """Move the mark past ``until_ms`` now: a generator's clock jumped forward.

        Renews the row now, then checks the lease: a renewal that fails raises
        :class:`~sqlalchemy_seqkeys.WorkerLeaseLostError` (a ``SeqKeysError``
        it raised, as it is), and so does a lease no longer certain.

        :param until_ms: the Unix millisecond the committed mark must reach (the
            timestamp the generator is about to mint).
        """
        try:
            self._extend(until_ms)
        except SeqKeysError:
            raise
        except Exception as exc:
            raise WorkerLeaseLostError(
                f"the lease on worker id {self._worker_id} could not be renewed to mint past "
                f"{until_ms} Unix ms (the database did not answer: {exc!r}); minting on could "
                f"duplicate another process's ids. Take a new {self._kind}"
            ) from exc
        self.assert_held()

    def bind_minter(self, make: Callable[[_M | None], _M]) -> _M:
        """Under the lease's lock, the minter every generator bound to it shares.

        :param make: called with the lease's current minter (None for the first
            generator bound); what it returns becomes the shared one.
        """
        with self._bind_lock:
            minter = make(self._minter)  # type: ignore[arg-type]
            self._minter = minter
            return minter

    def in_this_process(self, clock: Callable[[], int]) -> Lease:
        """The lease of the current process: after a fork, one claimed for it (once).

        :param clock: the bound generators' clock (nanoseconds since the Unix
            epoch), which a lease claimed for a forked child mints with.
        """
        if self._kind != "WorkerLease" and not self._in_owner_process():
            raise ForkedWorkerError(
                f"this process was forked from the one that holds {self._kind} worker id "
                f"{self._worker_id}, whose renewals run on the parent's event loop; claim a "
                "lease in this process and bind the generator to it: "
                f"`async with {self._kind}(engine) as lease: ids.bind(lease)`"
            )
        return self._children.lease_for(_fork.process_token(), clock)

    def for_child(self) -> Lease:
        """The lease of the current process: after a fork, one claimed for it (once).

        A forked child cannot mint with its parent's lease. Every generator
        bound to this lease calls this on its first id in a child, and they
        all get the same new lease, claimed on a fresh pool (SQLAlchemy's rule
        after fork). In the process that claimed it, this is the lease itself.

        Example::

            child_lease = lease.for_child()   # in a forked child
        """
        minter = self._minter
        return self.in_this_process(minter.clock if minter is not None else self.clock)


class _RenewedWorkerId(_HeldWorkerId):
    """The upkeep of a held worker id's row: its renewal, and its release.

    :class:`WorkerLease` adds the lifecycle (construct, claim, start, close).
    """

    def _job_name(self) -> str:
        # the renewal thread's (or task's) name
        return f"seqkeys-lease-{self._worker_id}-{self.owner[:8]}"

    def _renew_once(self, at_least_ms: int = 0, wait: float | None = None) -> None:
        """Renew the row and move the mark on; raise if the lease is gone.

        ``wait``: seconds to wait for a renewal or release under way (default
        the ttl); past it an extension (``at_least_ms``) raises and the
        background job skips this turn.
        """
        with _holding(self._renew_lock, self.ttl if wait is None else wait) as held:
            if not held:
                if at_least_ms:
                    raise _NoAnswerError
                return
            if self._closed.is_set() or self._lost is not None:
                return
            if at_least_ms and self._mark_ms >= at_least_ms:
                return  # another caller's extension got there first
            sent, mark = self._renew_row(at_least_ms)
            if mark is None:
                self._lost = "its row was taken over after it expired"
                raise self._lost_error()
            # Only once committed: the row's mark is never below ours.
            self._mark_ms = mark
            self._valid_until = sent + self.ttl

    def _renew_row(self, at_least_ms: int) -> tuple[float, int | None]:
        """The renewal's transaction, run again at once after an abort: (sent, new mark).

        Under the renewal lock. A renewal writes our own row by its owner, so
        running it again is safe whatever became of the one before (aborted,
        or its answer lost: its mark stays at or above ours). It runs again
        only while the lease is certain (its last renewal's ``sent + ttl``)
        and not closed; else the error goes up, to be tried at the next turn.
        ``sent`` is that of the attempt that committed: the lease counts from
        before it was sent.
        """
        assert self._worker_id is not None
        number = 0
        while True:
            sent = _lease_clock()
            try:
                with self.engine.connect() as conn:
                    mark = self._row.renew(conn, self._worker_id, self._mark_ms, at_least_ms)
            except sa.exc.DBAPIError as exc:
                number += 1
                wait = backoff(number, *_RENEW_BACKOFF_S)
                if (
                    not is_transient(exc)
                    or number >= _RENEW_ATTEMPTS
                    or self._closed.is_set()
                    or _lease_clock() + wait >= self._valid_until
                ):
                    raise
                _log.debug(
                    "renewal of worker id %s in %r failed (%s); running it again",
                    self._worker_id,
                    self.table.name,
                    describe(exc),
                )
                (pause if self._start_task is not None else time.sleep)(wait)
                continue
            return sent, mark

    def _extend_now(self, until_ms: int) -> None:
        """Renew now so that the mark reaches ``until_ms``, within the lease's validity.

        A renewal stuck on a locked row or a silent server is not waited for
        past the moment the lease stops being certain: the caller gets
        :class:`~sqlalchemy_seqkeys.WorkerLeaseLostError` then, not a hang.
        """
        left = self._valid_until - _lease_clock()
        if left <= 0:
            return  # extend_mark's check says why
        try:
            done = within(
                left,
                lambda: self._renew_once(until_ms, wait=left),
                f"{self._job_name()}-extend",
                self._start_task,
            )
        except _NoAnswerError:
            done = False
        if not done:
            raise self._unanswered_error(until_ms, left)

    def _renewal_failed(self, exc: BaseException) -> None:
        """A background renewal failed: a warning at the first of a run, then debug lines."""
        if self._closed.is_set():
            return  # a renewal a close overlapped: the close says what became of the row
        self._failing += 1
        left = self._valid_until - _lease_clock()
        level = logging.WARNING if self._failing == 1 else logging.DEBUG
        _log.log(
            level,
            "could not renew the lease on worker id %s in %r (%s; %d failed in a row); "
            "it stays valid %.3g s more from its last renewal and is renewed again every "
            "ttl / 3 (%g s)",
            self._worker_id,
            self.table.name,
            describe(exc),
            self._failing,
            max(left, 0.0),
            self.ttl / 3,
            exc_info=exc if self._failing == 1 else None,
        )

    def _unanswered_error(self, until_ms: int, left: float) -> WorkerLeaseLostError:
        return WorkerLeaseLostError(
            f"the lease on worker id {self._worker_id} could not be renewed to mint past "
            f"{until_ms} Unix ms: the database did not answer within the {left:.3g} s the "
            "lease had left (a renewal waits on a locked lease row or a server that does "
            "not answer); minting on could duplicate another process's ids. Take a new "
            f"{self._kind}"
        )

    def _renew_scheduled(self) -> bool:
        """One renewal of the background job: a failure is retried, a loss stops it."""
        try:
            self._renew_once()
        except ClockSkewError as exc:
            self._lost = str(exc)
            _log.warning("the lease on worker id %s is lost: %s", self._worker_id, exc)
        except WorkerLeaseLostError as exc:
            _log.warning("%s", exc)
        except Exception as exc:  # retried at the next interval; expiry is the guard
            self._renewal_failed(exc)
        else:
            if self._failing:
                self._failing = 0
                _log.info(
                    "the lease on worker id %s in %r renewed again",
                    self._worker_id,
                    self.table.name,
                )
        if self._closed.is_set():
            return False  # closed: its renewal ends (close() stops it too)
        if self._lost is None:
            return True
        minter = self._minter  # not even the rest of this tick: its generators stop at once
        if minter is not None:
            minter.halt()
        return False

    # -- releasing -----------------------------------------------------------------

    def _check_renewable(self) -> None:
        """Raise InvalidLeaseError (and close) where the renewal thread cannot reach the
        database: an in-memory SQLite one the thread would not share. Before any claim.

        An AsyncWorkerLease renews on its loop's thread, through the engine's own
        pool there (``_twin``): it never asks.
        """
        try:
            why = _unrenewable(self.engine)
        except _db_errors(self.engine) as exc:
            self._closed.set()
            raise self._database_error(exc) from exc
        if why is not None:
            self._closed.set()
            raise InvalidLeaseError(
                f"a WorkerLease cannot be renewed on this engine: {why}. Nothing was claimed"
            )

    def _mark_closed(self) -> tuple[Periodic | None, bool] | None:
        """Mark the lease closed, no I/O: its renewal job and whether a worker id was
        claimed (to release); None if it was closed already."""
        with self._state_lock:
            if self._closed.is_set():
                return None
            self._closed.set()
            self._valid_until = 0.0
            return self._job, self._worker_id is not None

    def _release_and_join(self, job: Periodic | None) -> None:
        """Release the row (closed, its renewal ``job`` stopped), waiting ``min(ttl, 5)`` s."""
        mark = self._release_mark()
        grace = min(self.ttl, _CLOSE_GRACE_S)
        try:
            release = lambda: self._release_held(mark)  # noqa: E731
            if not within(grace, release, f"{self._job_name()}-release", self._start_task):
                raise _NoAnswerError
        except _NoAnswerError:
            self._not_released(f"the database did not answer within {grace:g} s")
        except _db_errors(self.engine) as exc:
            self._not_released(_reason(exc), exc)
        finally:
            if job is not None:
                job.join(1)

    def _not_released(self, reason: str, exc: BaseException | None = None) -> None:
        _log.warning(
            "could not release worker id %s in %r (%s); the lease is closed here and its "
            "row expires by itself at most ttl=%g s after its last renewal, keeping its "
            "high-water mark for the next holder",
            self._worker_id,
            self.table.name,
            reason,
            self.ttl,
            exc_info=exc,
        )

    def _release_held(self, mark: int) -> None:
        # After a renewal under way. Left waiting by a close that gave up, it
        # releases once the database answers (the row, if still ours).
        with self._renew_lock:
            self._release(mark)

    def _release(self, mark: int) -> None:
        # A connection the server dropped while it sat in the pool fails once
        # and is invalidated: the release goes through on a new one.
        assert self._worker_id is not None
        for attempt in (1, 2):
            with self.engine.connect() as conn:
                try:
                    self._row.release(conn, self._worker_id, mark)
                    return
                except _db_errors(self.engine) as exc:
                    if attempt == 2 or not _is_disconnect(conn, exc):
                        raise
                    conn.invalidate()

    def _release_mark(self) -> int:
        """Stop every generator on the lease; the mark a successor must pass."""
        with self._bind_lock:
            minter = self._minter
        last_ms = minter.halt() if minter is not None else -1
        return max(self._floor_ms, last_ms)


class WorkerLease(_RenewedWorkerId):
    """A worker id leased from ``table``, renewed in the background until :meth:`close`.

    Constructing one does no I/O: ``with WorkerLease(engine) as lease:`` (or
    :meth:`start`) claims a free worker id, starts a daemon thread that renews
    it every ``ttl / 3``, and waits (up to ``max_wait``) for this clock to
    pass the timestamps the worker id's previous holder minted; leaving the
    block (:meth:`close`) releases it. A lease used before it was started
    (the behaviour of 0.x, where the constructor claimed) claims on first use
    with a :class:`DeprecationWarning`; that goes away in the next minor version.

    :param engine: an :class:`~sqlalchemy.engine.Engine` (for an ``AsyncEngine``
        use :class:`AsyncWorkerLease`).
    :param ttl: seconds a lease lives without renewal.
    :param table: the lease table's name.
    :param max_worker_id: the largest worker id handed out (1023 for the
        default snowflake layout).
    :param create_table: create the table at start if it is missing.
    :param clock: nanoseconds since the Unix epoch (default ``time.time_ns``;
        a :class:`~sqlalchemy_seqkeys.Snowflake` bound to the lease mints with
        it, and its own ``clock=``, if given, replaces it here).
    :param max_skew: seconds the clock may be from the database server's.
    :param max_wait: seconds :meth:`start` waits for this clock to pass the
        previous holder's ids.

    Starting raises :class:`~sqlalchemy_seqkeys.WorkerIdsExhaustedError`
    when every id is held by a live lease, and
    :class:`~sqlalchemy_seqkeys.ClockSkewError` when the clocks disagree
    beyond those bounds; a bad argument raises
    :class:`~sqlalchemy_seqkeys.InvalidLeaseError` at construction. So does
    starting on in-memory SQLite that the renewal thread would not share (each
    connection has a database of its own): use a database file, or
    ``poolclass=StaticPool`` with ``connect_args={"check_same_thread": False}``.

    Example::

        with WorkerLease(engine, ttl=30) as lease:
            ids = Snowflake(worker_id=lease)
            ids()
    """

    def __init__(
        self,
        engine: sa.Engine,
        *,
        ttl: float = 30.0,
        table: str = DEFAULT_TABLE,
        max_worker_id: int = 1023,
        create_table: bool = True,
        clock: Callable[[], int] | None = None,
        max_skew: float = 2.0,
        max_wait: float = 5.0,
    ) -> None:
        # Every argument is checked here; the database is touched at start().
        if not isinstance(engine, sa.Engine):
            hint = (
                "for an AsyncEngine use `async with AsyncWorkerLease(engine) as lease:`"
                if _is_async_engine(engine)
                else "use sqlalchemy.create_engine(url)"
            )
            raise InvalidLeaseError(f"engine must be an sqlalchemy Engine, not {engine!r}; {hint}")
        self.ttl = check_seconds(ttl, "ttl", InvalidLeaseError, max=_MAX_TTL_S)
        if self.ttl < _MIN_TTL_S:
            raise InvalidLeaseError(
                f"ttl must be at least {_MIN_TTL_S:g} s, not {ttl!r}: the lease is renewed "
                "every ttl / 3, and its row must outlive a round trip to the database; pass "
                "a longer ttl (30 s suits most services)"
            )
        self.max_worker_id = check_int(
            max_worker_id, "max_worker_id", InvalidLeaseError, min=0, max=2**31 - 1
        )
        check_name(table, "table", InvalidLeaseError)
        self.clock: Callable[[], int] = (
            checked_clock(clock, "clock", InvalidLeaseError) or time.time_ns
        )
        self.create_table = check_flag(create_table, "create_table", InvalidLeaseError)
        self.max_skew = check_seconds(max_skew, "max_skew", InvalidLeaseError)
        self.max_wait = check_seconds(max_wait, "max_wait", InvalidLeaseError)
        self.engine = engine
        self._row = _Row(
            workers_table(sa.MetaData(), table),
            ttl=self.ttl,
            max_worker_id=self.max_worker_id,
            max_skew=self.max_skew,
            now_ns=self._now_ns,
        )
        self.table = self._row.table
        self.owner = self._row.owner
        self._token = _fork.process_token()
        self._worker_id: int | None = None
        self._minter: Minter | None = None
        self._bind_lock = threading.Lock()
        #: start()'s lock, per process: one a parent's thread held at a fork is not the child's
        self._start_locks: dict[int, threading.Lock] = {}
        #: held (briefly, never across I/O) where close() and a start under way meet:
        #: a claim is recorded and its renewal started, or the lease marked closed.
        #: Reentrant: a signal handler's close() may interrupt a start in its thread.
        self._state_lock = threading.RLock()
        self._started = False
        self._lost: str | None = None
        self._closed = threading.Event()
        self._valid_until = 0.0
        self._mark_ms = 0
        self._floor_ms = 0
        # What an AsyncWorkerLease replaces (see its start): the lock around
        # the row's writes, how a write waited for runs, the name in messages, how a generator
        # extends the mark.
        self._renew_lock: threading.Lock | GreenletLock = threading.Lock()
        #: None: a write of the row waited for a bounded time runs on a thread; else as a task
        self._start_task: StartTask | None = None
        self._kind = "WorkerLease"
        self._extend: Callable[[int], None] = self._extend_now
        self._job: Periodic | None = None
        self._children = _Children(self)

    # -- lifecycle -----------------------------------------------------------------

    def start(self) -> WorkerLease:
        """Claim a worker id, start renewing it and wait past its previous holder's ids.

        For code that cannot use ``with`` (pair it with :meth:`close`); returns the lease.

        Example::

            lease = WorkerLease(engine, ttl=30).start()
            try:
                ids = Snowflake(worker_id=lease)
            finally:
                lease.close()
        """
        with _fork.process_lock(self._start_locks):
            self._start_locked()
        return self

    def _start_locked(self) -> None:
        self._begin_start()
        self._check_renewable()
        self._claim(self._start_renewal)
        try:
            self._wait_past_floor()
        except BaseException:
            self.close()
            raise

    def _start_renewal(self) -> None:
        self._job = periodic(self.ttl / 3, self._renew_scheduled, name=self._job_name())
        self._job.start()

    def __enter__(self) -> WorkerLease:
        # a closed lease refuses (start() says so), however it was started
        return self if self._started and not self._closed.is_set() else self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _begin_start(self) -> None:
        if self._started or self._closed.is_set():
            what = "closed" if self._closed.is_set() else "started already"
            if self._started and not self._in_owner_process():
                what += (
                    " in the process this one was forked from (its copy here holds nothing); "
                    "construct a new one in this process"
                )
            raise InvalidLeaseError(
                f"this {self._kind} was {what}; a lease is claimed once (create another "
                "one for another worker id)"
            )
        self._started = True
        # The process that starts the lease holds it, whichever process built it
        # (gunicorn --preload: built at import, started in each worker after the
        # fork), and under an owner of its own: a parent and a child starting
        # copies of one lease built before the fork never renew each other's row.
        self._token = _fork.process_token()
        self.owner = self._row.owner = uuid.uuid4().hex
        self._check_table_name()

    def _claim(self, begin: Callable[[], None]) -> None:
        """Claim a worker id and ``begin`` renewing it, unless the lease is closed meanwhile.

        A close() that overlaps the claim (another thread's, a signal
        handler's, another task's) finds no worker id to release: the claim,
        once it is won, releases the row itself and raises; nothing renews it.
        """
        if self._closed.is_set():
            raise self._closed_while_starting()
        try:
            if self.create_table:
                self._create_table()
            with self.engine.connect() as conn:
                # an AsyncWorkerLease's waits await (in SQLAlchemy's greenlet)
                self._row.sleep = pause if self._start_task is not None else time.sleep
                claim, sent = self._row.claim(conn)
        except BaseException as exc:
            self._closed.set()
            if isinstance(exc, _db_errors(self.engine)):
                raise self._database_error(exc) from exc
            raise
        with self._state_lock:
            closed = self._closed.is_set()
            self._worker_id, self._floor_ms, self._mark_ms = claim
            if not closed:
                self._valid_until = sent + self.ttl
                begin()
        if closed:
            self._release_and_join(None)
            raise self._closed_while_starting()

    def _closed_while_starting(self) -> WorkerLeaseLostError:
        held = "" if self._worker_id is None else f" (worker id {self._worker_id}, released)"
        return WorkerLeaseLostError(
            f"this {self._kind} was closed while start() was claiming a worker id{held}: a "
            "close() from another thread or task came first, and the lease holds nothing. "
            f"Take a new {self._kind} to claim one"
        )

    def _create_table(self) -> None:
        """Create the table if it is missing; one another process created meanwhile will do.

        Processes starting at once on a fresh database all find the table
        missing, and all but one CREATE fail ("already exists"; PostgreSQL
        also "duplicate key value violates unique constraint
        pg_type_typname_nsp_index"). The failed ones check again and use the
        table that won; an error the table does not explain is raised.
        """
        for attempt in range(1, _CREATE_TRIES + 1):
            try:
                self.table.create(self.engine, checkfirst=True)
                return
            except _db_errors(self.engine):
                if attempt == _CREATE_TRIES:
                    raise
                # the CREATE that won has committed (ours waited for it): the
                # next check finds the table; a failure of another kind fails again
                (pause if self._start_task is not None else time.sleep)(0.01 * attempt)

    def _wait_past_floor(self) -> None:
        # The previous holder minted up to the floor on its own clock; ids
        # from here must carry later timestamps.
        deadline = time.monotonic() + self.max_wait
        while (ahead := self._floor_ms - self._now_ns() // 1_000_000) >= 0:
            if self._closed.is_set():
                raise self._closed_while_starting()
            if time.monotonic() >= deadline:
                raise floor_error(self.worker_id, ahead, self.max_wait, self._kind)
            # An AsyncWorkerLease's wait awaits (in SQLAlchemy's greenlet); a sync
            # lease's sleeps: its start holds a threading lock that a second start
            # from another greenlet of the same loop would block the loop on.
            (pause if self._start_task is not None else time.sleep)(min((ahead + 1) / 1000, 0.05))

    def _started_or_implicit(self) -> None:
        # The 0.x behaviour: a lease claimed when it was created (never an async one).
        if self._started or self._closed.is_set() or self._kind != "WorkerLease":
            return
        if not self._in_owner_process():
            return
        warnings.warn(
            "a WorkerLease no longer claims a worker id when it is created; claiming on "
            "first use is deprecated and goes away in the next minor version. Use `with "
            "WorkerLease(engine) as lease:` or `lease = WorkerLease(engine).start()`",
            DeprecationWarning,
            stacklevel=3,
        )
        with _fork.process_lock(self._start_locks):
            if not self._started:
                self._start_locked()

    def close(self) -> None:
        """Stop renewing and release the id, keeping the row's high-water mark.

        The mark is lowered to the last timestamp the bound generators minted,
        so that the next holder waits only as long as the clocks disagree. A
        close that cannot reach the server, or gets no answer within
        ``min(ttl, 5)`` seconds (a row another transaction holds, a server that
        stopped answering), logs a warning and raises nothing: the row expires
        after its ttl, as after a crash.

        Example::

            lease.close()
        """
        if not self._in_owner_process():
            # A forked child's copy: the parent still owns the row (and the Event's
            # lock may have been held by a parent's thread at the fork); the lease
            # claimed for this child, if any, is closed.
            child = self._children.leases.get(_fork.process_token())
            if child is not None and child is not self:
                child.close()
            return
        if self._closed.is_set():
            return
        marked = self._mark_closed()
        if marked is None:
            return
        job, claimed = marked
        if job is not None:
            job.stop()
        if not claimed:
            return  # never claimed, or a start under way: it releases what it wins
        self._release_and_join(job)


class _Children:
    """The leases claimed in processes forked from the one that claimed ``root``: one each.

    Shared by the root and every child lease (a child's generators claim
    anew, here, once its lease is lost).
    """

    def __init__(self, root: WorkerLease) -> None:
        self.root = root
        self.leases: dict[int, WorkerLease] = {}
        #: process token -> when a forked child may claim again, the last wait, its error
        self.retries: dict[int, tuple[float, float, SeqKeysError]] = {}

    def lease_for(self, token: int, clock: Callable[[], int]) -> WorkerLease:
        """The lease of the process ``token``: the root's own, or one claimed for it."""
        root = self.root
        if token == root._token:
            return root
        if root.closed:  # (a flag read: the Event's lock may have been held at the fork)
            raise WorkerLeaseLostError(
                f"the {root._kind} on worker id {root._worker_id} was closed before this "
                "process was forked from the one that held it; a closed lease stays closed. "
                f"Take a new {root._kind} in this process"
            )
        with _fork.process_lock(_lease_locks):
            lease = self.leases.get(token)
            if lease is not None and (_usable(lease) or lease.closed):
                return lease  # usable, or closed by the application: it stays closed
            return self._claim(token, lease, clock)

    def _claim(self, token: int, lost: WorkerLease | None, clock: Callable[[], int]) -> WorkerLease:
        """A new lease for the forked process ``token``, in place of ``lost`` (if any)."""
        retry = self.retries.get(token)
        if retry is not None and time.monotonic() < retry[0]:
            # Not yet: a server that refused a moment ago is not asked again at once.
            last = retry[2]
            raise _child_claim_error(last, retry[0] - time.monotonic(), again=True) from (
                last.__cause__ or last
            )
        root = self.root
        floor_ms, lost_worker = -1, None
        if lost is None:
            root.engine.dispose(close=False)  # SQLAlchemy's rule in a forked child
        else:
            # Its generators stop first; a claim of the same worker id (its row
            # deleted, or released below) starts past the ids it minted.
            floor_ms, lost_worker = lost._release_mark(), lost._worker_id
            lost.close()
            del self.leases[token]
        lease = WorkerLease(
            root.engine,
            table=root.table.name,
            create_table=False,
            clock=clock,
            **{key: getattr(root, key) for key in _SETTINGS},
        )
        lease._children = self
        try:
            lease.start()
        except SeqKeysError as exc:
            wait = _RECLAIM_BACKOFF_S[0] if retry is None else retry[1] * 2
            wait = min(wait, _RECLAIM_BACKOFF_S[1])
            self.retries[token] = (time.monotonic() + wait, wait, exc)
            raise _child_claim_error(exc, wait) from (exc.__cause__ or exc)
        self.retries.pop(token, None)
        if lease._worker_id == lost_worker:
            lease._floor_ms = max(lease._floor_ms, floor_ms)
        self.leases[token] = lease
        return lease


def _usable(lease: WorkerLease) -> bool:
    """Not lost, not closed, renewed in time, and its generators still on it."""
    minter = lease._minter
    return lease.valid and (minter is None or not minter.relinquished())


#: the arguments a lease keeps as its attributes
_SETTINGS = ("ttl", "max_worker_id", "max_skew", "max_wait")


def _child_claim_error(exc: SeqKeysError, retry_in: float, again: bool = False) -> SeqKeysError:
    """``exc`` (a failed claim in a forked child) saying when the next call claims again.

    ``again``: raised from the backoff, without asking the database.
    """
    when = "the last claim failed, and is not tried again yet" if again else "it failed"
    message = (
        f"this process, forked from the holder of a WorkerLease, needs a worker id of its "
        f"own and {when}: {exc} (a call from {retry_in:.1f} s on claims again)"
    )
    try:
        return type(exc)(message)
    except TypeError:  # pragma: no cover - an error class with other arguments
        return WorkerLeaseDatabaseError(message)


class _FromSyncLease(Generic[_T]):
    """A read-only attribute of :class:`AsyncWorkerLease`: its sync lease's attribute of that name.

    :param doc: what ``help()`` and the reference show for it.
    """

    def __init__(self, doc: str) -> None:
        self.__doc__ = doc

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, lease: None, owner: type | None = None) -> _FromSyncLease[_T]: ...
    @overload
    def __get__(self, lease: AsyncWorkerLease, owner: type | None = None) -> _T: ...
    def __get__(
        self, lease: AsyncWorkerLease | None, owner: type | None = None
    ) -> _FromSyncLease[_T] | _T:
        if lease is None:
            return self  # looked up on the class (help(), the docs)
        value: _T = getattr(lease.sync_lease, self._name)
        return value

    def __set__(self, lease: AsyncWorkerLease, value: NoReturn) -> NoReturn:
        raise AttributeError(f"AsyncWorkerLease.{self._name} is read only")

    def __delete__(self, lease: AsyncWorkerLease) -> NoReturn:
        raise AttributeError(f"AsyncWorkerLease.{self._name} is read only")


class _AsyncLeaseTasks:
    """An :class:`AsyncWorkerLease`'s tasks: writes left running on its loop, the extension
    a jumped clock needs, and the twin pool's disposal once they end."""

    sync_lease: WorkerLease
    _db: AsyncEngine | None
    _own_db: bool
    _loop: asyncio.AbstractEventLoop | None
    _detached: set[asyncio.Task[None]]

    async def _dispose_when_idle(self) -> None:
        """Dispose of the twin pool now, or once the tasks left running on it end."""
        import asyncio

        # (not the task this runs in: a close's own)
        current = asyncio.current_task()
        running = {task for task in self._detached if not task.done() and task is not current}
        if running:  # their connections go back to the twin pool first
            name = f"{self.sync_lease._job_name()}-dispose"
            self._detach(self._dispose_after(running), name)
        else:
            await self._dispose()

    async def _dispose_after(self, tasks: set[asyncio.Task[None]]) -> None:
        import asyncio

        await asyncio.wait(tasks)
        await self._dispose()

    async def _dispose(self) -> None:
        if self._own_db and self._db is not None:
            self._own_db = False
            await self._db.dispose()

    def _extend(self, until_ms: int) -> None:
        # A generator reached the mark while the lease is valid: its clock
        # jumped forward. The renewal must commit before it mints on.
        import asyncio

        from ._aio import in_greenlet, on_loop
        from ._compat import greenlet_spawn

        sync, loop = self.sync_lease, self._loop
        assert loop is not None
        if on_loop() is loop:
            if in_greenlet():
                sync._extend_now(until_ms)  # in SQLAlchemy's greenlet: the SQL awaits
                return
            # Straight from a coroutine: a database round trip cannot be awaited
            # here. Start it; the caller may try again.
            self._detach(greenlet_spawn(_try_renew, sync, until_ms), f"{sync._job_name()}-extend")
            raise ClockSkewError(
                f"this host's clock jumped past the high-water mark of the lease on worker id "
                f"{sync._worker_id} ({until_ms - sync._mark_ms} ms past it); the lease is "
                "extending it now, so retry in a moment. A Snowflake called from a coroutine "
                "cannot wait for the database without blocking the loop; as a column default "
                "under AsyncSession it waits by itself"
            )
        if loop.is_closed():
            raise sync._lost_error()
        left = sync._valid_until - _lease_clock()
        if left <= 0:
            return  # extend_mark's check says why
        # another thread: the lease's loop renews, while the lease is certain
        extension = greenlet_spawn(sync._extend_now, until_ms)
        try:
            asyncio.run_coroutine_threadsafe(extension, loop).result(timeout=left)
        except concurrent.futures.TimeoutError:
            raise sync._unanswered_error(until_ms, left) from None

    async def _release(self, job: Any, claimed: bool) -> None:
        """The closed lease's I/O: stop the renewal ``job``, release the row if
        ``claimed``, dispose of the twin pool."""
        from ._compat import greenlet_spawn

        sync = self.sync_lease
        try:
            # a renewal stuck on a silent server may not end even when cancelled
            grace = min(sync.ttl, _CLOSE_GRACE_S)
            running = None if job is None else await job.stop_async(grace)
            if running is not None:
                self._detached.add(running)
            if claimed:
                await greenlet_spawn(sync._release_and_join, None)
        finally:
            await self._dispose_when_idle()

    def _detach(self, work: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        """``work`` as a task of the running loop that nobody needs to await.

        The lease's twin pool is disposed only once its detached tasks end
        (their connections go back to it).
        """
        import asyncio

        task = asyncio.get_running_loop().create_task(work, name=name)
        for tasks in (_extensions, self._detached):  # asyncio keeps weak references
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        task.add_done_callback(retrieve_error)  # read even if nobody waits for it any more
        return task


class AsyncWorkerLease(_AsyncLeaseTasks):
    """:class:`WorkerLease` for an :class:`~sqlalchemy.ext.asyncio.AsyncEngine`.

    The same arguments, guarantees and lifecycle, wrapped as ``AsyncEngine``
    wraps ``Engine``: :attr:`sync_lease` is a :class:`WorkerLease` whose SQL
    runs in SQLAlchemy's greenlet. The constructor does no I/O: ``async with``
    (or ``await lease.start()``) claims a worker id, an asyncio task renews it
    every ``ttl / 3``, and leaving the block (or ``await lease.close()``)
    releases it. Nothing blocks the event loop. Its one connection comes from
    a twin of the engine's pool (``Pool.recreate()``), so a renewal never
    waits behind the application's requests.

    The renewal task needs the loop to run: a loop blocked for longer than
    the ttl loses the lease, and its generators raise
    :class:`~sqlalchemy_seqkeys.WorkerLeaseLostError`. Generators bound to the
    lease mint from coroutines, from SQLAlchemy's greenlet (column defaults
    under ``AsyncSession``) and from other threads alike. A forked child
    cannot renew its parent's lease: its generators raise
    :class:`~sqlalchemy_seqkeys.ForkedWorkerError` until bound to one of its own.

    :param engine: an :class:`~sqlalchemy.ext.asyncio.AsyncEngine` (for an
        ``Engine`` use :class:`WorkerLease`).
    :param ttl: seconds a lease lives without renewal.
    :param table: the lease table's name.
    :param max_worker_id: the largest worker id handed out (1023 for the
        default snowflake layout).
    :param create_table: create the table at start if it is missing.
    :param clock: nanoseconds since the Unix epoch (default ``time.time_ns``).
    :param max_skew: seconds the clock may be from the database server's.
    :param max_wait: seconds :meth:`start` waits for this clock to pass the
        previous holder's ids.

    The keywords, their defaults and their checks (a bad value raises
    :class:`~sqlalchemy_seqkeys.InvalidLeaseError`) are :class:`WorkerLease`'s.

    Example (a FastAPI lifespan)::

        ids = Snowflake()        # the models' key default, bound at startup

        @contextlib.asynccontextmanager
        async def lifespan(app):
            async with AsyncWorkerLease(engine, ttl=30) as lease:
                ids.bind(lease)
                yield
    """

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        ttl: float = 30.0,
        table: str = DEFAULT_TABLE,
        max_worker_id: int = 1023,
        create_table: bool = True,
        clock: Callable[[], int] | None = None,
        max_skew: float = 2.0,
        max_wait: float = 5.0,
    ) -> None:
        if not _is_async_engine(engine):
            hint = (
                "for a sync Engine use `with WorkerLease(engine) as lease:`"
                if isinstance(engine, sa.Engine)
                else "use sqlalchemy.ext.asyncio.create_async_engine(url)"
            )
            raise InvalidLeaseError(f"engine must be an AsyncEngine, not {engine!r}; {hint}")
        self.engine = engine
        #: the :class:`WorkerLease` this one wraps (its SQL runs in the greenlet)
        self.sync_lease = sync = WorkerLease(
            engine.sync_engine,
            ttl=ttl,
            table=table,
            max_worker_id=max_worker_id,
            create_table=create_table,
            clock=clock,
            max_skew=max_skew,
            max_wait=max_wait,
        )
        sync._kind = "AsyncWorkerLease"
        sync._extend = self._extend
        self.ttl, self.max_worker_id, self.max_wait = sync.ttl, sync.max_worker_id, sync.max_wait
        self.max_skew, self.clock, self.create_table = sync.max_skew, sync.clock, sync.create_table
        self.table = sync.table
        self._db: AsyncEngine | None = None  # the twin pool's engine, while started
        self._own_db = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._job: Any = None  # the renewal task's Periodic
        #: True while start() claims: a close() then leaves the twin pool to the start
        self._claiming = False
        #: its tasks left running (a write the database has not answered yet)
        self._detached: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> AsyncWorkerLease:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> AsyncWorkerLease:
        """Claim a worker id and start renewing it; return the lease.

        For code that cannot use ``async with`` (pair it with :meth:`close`).

        Example::

            lease = await AsyncWorkerLease(engine, ttl=30).start()
            try:
                ...
            finally:
                await lease.close()
        """
        import asyncio

        from ._compat import greenlet_spawn

        sync = self.sync_lease
        sync._begin_start()
        self._loop = asyncio.get_running_loop()
        # The twin pool shares the engine's dialect, which learns the server
        # (schema, version, modes) on the engine's first connection: let that
        # happen on the engine itself, where concurrent first connects wait for it.
        try:
            async with self.engine.connect():
                pass
        except _db_errors(self.engine) as exc:
            sync._closed.set()
            raise sync._database_error(exc) from exc
        if sync.closed:  # by a close() while it connected
            raise sync._closed_while_starting()
        self._db, self._own_db = _twin(self.engine)
        sync.engine = self._db.sync_engine
        sync._renew_lock = GreenletLock()
        sync._start_task = self._detach
        self._claiming = True
        # The claim runs to its end whatever becomes of this start: cancelled midway,
        # its INSERT or UPDATE may have committed unseen, and the row held for the ttl.
        claim = self._detach(
            greenlet_spawn(sync._claim, self._start_renewal), f"{sync._job_name()}-claim"
        )
        try:
            await asyncio.shield(claim)
        except asyncio.CancelledError:
            try:
                await self._abandon_claim(claim)
            finally:
                await self._dispose_when_idle()
            raise
        except BaseException:
            # a release left running (closed while it claimed; the database slow to answer)
            await self._dispose_when_idle()
            raise
        finally:
            self._claiming = False
        try:
            await greenlet_spawn(sync._wait_past_floor)
        except BaseException:
            await self.close()  # (runs on to its end, even if cancelled meanwhile)
            raise
        return self

    async def _abandon_claim(self, claim: asyncio.Task[None]) -> None:
        """The start was cancelled while ``claim`` ran: release what it wins, waiting at
        most ``min(ttl, 5)`` s for its answer (past that, it releases when it ends)."""
        import asyncio

        sync = self.sync_lease
        with sync._state_lock:
            # not recorded yet: closed now, the claim releases the row it wins itself
            recorded = sync._worker_id is not None and not sync._closed.is_set()
            if not recorded:
                sync._closed.set()
                sync._valid_until = 0.0
        if recorded:  # it ended, and began renewing, as the cancellation came
            self._claiming = False
            await self.close()  # (runs on to its end, even if cancelled again)
        else:
            await asyncio.wait({claim}, timeout=min(sync.ttl, _CLOSE_GRACE_S))

    def _start_renewal(self) -> None:
        # in the claim's greenlet, on the loop's thread
        self._job = periodic(
            self.ttl / 3,
            self.sync_lease._renew_scheduled,
            name=self.sync_lease._job_name(),
            loop=self._loop,
            on_cancel=self._close_from_renewal,
        )
        self._job.start()

    async def close(self) -> None:
        """Stop renewing and release the id, keeping the row's high-water mark.

        As :meth:`WorkerLease.close`; awaited (``async with`` does it on exit).
        The lease is closed before the first await: nothing is minted under it
        from then on. Cancelled part-way (a TaskGroup sibling failing, a second
        Ctrl-C), it runs on to its end (at most ``min(ttl, 5)`` s for the
        release), then raises the ``CancelledError``.

        Example::

            await lease.close()
        """
        await self._close(stop_renewal=True)

    async def _close_from_renewal(self) -> None:
        # The renewal task, cancelled unstopped (the loop shuts down): it is ending.
        await self._close(stop_renewal=False)

    async def _close(self, *, stop_renewal: bool) -> None:
        import asyncio

        sync = self.sync_lease
        if sync.closed or not sync._in_owner_process():
            return  # closed, or a forked child's copy: the parent owns the row
        marked = sync._mark_closed()  # before any await
        if marked is None:
            return
        claimed = marked[1]
        if self._claiming and not claimed:
            # A start under way, its claim not recorded (recording it does not
            # await): it releases what it wins, then disposes of the twin pool.
            return
        if claimed:
            sync._release_mark()  # its generators stop now (the release reads the mark again)
        # Shielded: a cancellation that came midway would leave the row held for the
        # ttl, nothing renewing it, and the twin pool open.
        job = self._job if stop_renewal else None
        releasing = self._detach(self._release(job, claimed), f"{sync._job_name()}-close")
        try:
            await asyncio.shield(releasing)
        except asyncio.CancelledError:
            await asyncio.wait({releasing})  # (cancelled again: it ends by itself)
            raise

    #: ``contextlib.aclosing`` calls it
    aclose = close

    # -- the lease's state and the Lease protocol: the sync lease's ------------------

    worker_id = _FromSyncLease[int](
        "The worker id this lease holds (raises WorkerIdNotBoundError before start)."
    )
    valid = _FromSyncLease[bool](
        "True while the lease is certainly ours: renewed in time and not closed."
    )
    owner = _FromSyncLease[str](
        "The lease row's owner: drawn anew when the lease is started, in the process that "
        "starts it."
    )
    floor_ms = _FromSyncLease[int]("The previous holder's high-water mark (Unix ms).")
    mark_ms = _FromSyncLease[int]("This holder's high-water mark (Unix ms).")
    closed = _FromSyncLease[bool]("True once :meth:`close` was called.")

    def check(self) -> int:
        """Return the worker id, or raise WorkerLeaseLostError if the lease may be gone.

        Example::

            lease.check()   # 5
        """
        return self.sync_lease.check()

    @property
    def reclaimable(self) -> bool:
        """False: a forked child binds a lease of its own."""
        return False

    def assert_held(self) -> None:
        """Raise unless the lease is certainly ours."""
        self.sync_lease.assert_held()

    def extend_mark(self, until_ms: int) -> None:
        """Move the mark past ``until_ms`` now.

        :param until_ms: the Unix millisecond the mark must reach.
        """
        self.sync_lease.extend_mark(until_ms)

    def bind_minter(self, make: Callable[[_M | None], _M]) -> _M:
        """Under the lease's lock, the minter every generator bound to it shares.

        :param make: called with the current minter (or None); returns the one to share.
        """
        return self.sync_lease.bind_minter(make)

    def in_this_process(self, clock: Callable[[], int]) -> Lease:
        """This lease in the process that claimed it; raises ForkedWorkerError in a fork.

        :param clock: the bound generators' clock.
        """
        self.sync_lease.in_this_process(clock)
        return self

    def __repr__(self) -> str:
        return repr(self.sync_lease)


def _try_renew(lease: WorkerLease, until_ms: int) -> None:
    # An extension started from a coroutine: the renewal job retries anyway.
    with contextlib.suppress(Exception):
        lease._renew_once(until_ms)


#: extensions started from coroutines (asyncio keeps only weak references to tasks)
_extensions: set[asyncio.Task[Any]] = set()


def _standalone(conn: sa.Connection) -> sa.Connection:
    """``conn``, its statements each committed by the server as it runs them.

    Every write of a lease is one compare-and-set that needs no transaction
    around it. Inside one, a process paused between the UPDATE and its COMMIT
    (SIGSTOP, a suspended VM, a long GC pause) would keep the row locked, and
    the process taking the id over once the lease expired would wait on that
    lock: forever on PostgreSQL, ``innodb_lock_wait_timeout`` and then an error
    on MariaDB.
    """
    if facts(conn.dialect).lease_autocommit:
        conn.execution_options(isolation_level="AUTOCOMMIT")
    return conn


def _is_async_engine(engine: object) -> bool:
    # An AsyncEngine exists only once its module was imported: no import here.
    module = sys.modules.get("sqlalchemy.ext.asyncio")
    return module is not None and isinstance(engine, module.AsyncEngine)


def _unrenewable(engine: sa.Engine) -> str | None:
    """Why a thread of its own cannot renew a lease on ``engine``; None if it can.

    An in-memory SQLite database is its connection's own (a shared-cache one,
    ``cache=shared``, every connection of the process opens). The renewal
    thread reaches it only through a pool whose one connection every thread
    shares (``StaticPool``: of the pools ``shares_one_connection`` names, as
    ``_twin`` asks, not ``SingletonThreadPool``, whose one connection is per
    thread), and only if that connection takes calls from other threads.
    """
    if not _per_connection_memory(engine.url):
        return None
    file_db = "a database file (sqlite:///ids.db)"
    shared = (
        'create_engine("sqlite://", poolclass=StaticPool, '
        'connect_args={"check_same_thread": False})'
    )
    pool = type(engine.pool).__name__
    if not isinstance(engine.pool, sa.pool.StaticPool):
        return (
            f"its SQLite database is in memory, where every connection has a database of "
            f"its own, and its pool ({pool}) opens another connection for the lease's "
            "renewal thread: an empty database, in which the lease could not be renewed "
            f"and would expire one ttl after start. Use {file_db}, or one in-memory "
            f"connection for every thread: {shared}"
        )
    refused = _other_threads_refused(engine)
    if refused is None:
        return None
    return (
        "its in-memory SQLite database is the one connection of its StaticPool, which "
        f"refuses threads other than the one that opened it ({refused}), the lease's "
        'renewal thread among them. Pass connect_args={"check_same_thread": False} to '
        f"create_engine ({shared}), or use {file_db}"
    )


def _per_connection_memory(url: sa.URL) -> bool:
    """True for an in-memory SQLite database of each connection's own: ``sqlite://``,
    ``:memory:``, a ``mode=memory`` URI, unless ``cache=shared`` (as
    ``sequences.table``'s ``database_key`` reads it, a shared cache apart)."""
    return (
        url.get_backend_name() == "sqlite"
        and (url.database in (None, "", ":memory:") or url.query.get("mode") == "memory")
        and url.query.get("cache") != "shared"
    )


def _other_threads_refused(engine: sa.Engine) -> str | None:
    """The error the engine's (one) connection raises in another thread (None: none).

    sqlite3 checks the thread as a cursor is made (``check_same_thread``):
    nothing runs on the connection, and it stays as it was.
    """
    failed: list[str] = []

    def probe(driver: Any) -> None:
        try:
            driver.cursor().close()
        except Exception as exc:  # reported: the renewal would fail alike
            failed.append(f"{type(exc).__name__}: {exc}")

    with engine.connect() as conn:
        thread = threading.Thread(
            target=probe, args=(conn.connection.driver_connection,), name="seqkeys-lease-probe"
        )
        thread.start()
        thread.join()
    return failed[0] if failed else None


def _twin(engine: AsyncEngine) -> tuple[AsyncEngine, bool]:
    """An AsyncEngine over a twin of ``engine``'s pool (the lease's own), and if it is new."""
    from sqlalchemy.ext.asyncio import AsyncEngine

    from .sequences._lane import shares_one_connection, twin_engine

    sync = engine.sync_engine
    if shares_one_connection(sync):  # in-memory SQLite: no second connection to open
        return engine, False
    return AsyncEngine(twin_engine(sync)), True
