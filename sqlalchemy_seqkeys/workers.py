"""``WorkerLease``: snowflake worker ids leased from a table in your database.

Two live processes must never mint with the same worker id, and a process
that takes a worker id over must never mint an id its previous holder minted.
A lease makes the database the referee: each process claims a row of
``seqkeys_workers`` and renews it from a background thread (from an asyncio
task with :class:`AsyncWorkerLease`)::

    import sqlalchemy as sa
    from sqlalchemy_seqkeys import Snowflake, WorkerLease

    engine = sa.create_engine("sqlite:///ids.db")
    with WorkerLease(engine, ttl=30) as lease:   # claims a free worker id
        ids = Snowflake(worker_id=lease)         # bound to the lease: checked as it mints
        print(ids.decode(ids()).worker_id)

The row holds ``worker_id`` (primary key), ``owner`` (a random token),
``expires_at`` (the database server's Unix milliseconds) and
``high_water_ms``: the highest timestamp, in Unix milliseconds of the
holder's own clock, that the holder may put in an id.

Guarantees
----------
- **Exclusive**: claims are atomic (a compare-and-set ``UPDATE`` of an expired
  or released row, or an insert that the primary key lets only one process
  win), so two processes racing for the last free id cannot both get it.
  Expiry is judged by the database server's clock alone, read with a
  zone-independent expression on every engine (on MySQL/MariaDB
  ``UNIX_TIMESTAMP(NOW())`` is an hour off in the repeated autumn hour of a
  daylight-saving zone; this library does not use it).
- **Bounded in time, not only in ownership**: the holder writes its
  high-water mark (its clock plus the ttl) at the claim and at each renewal,
  and its generators never mint past it. A clean :meth:`~WorkerLease.close`
  keeps the row, released, with the mark lowered to the last timestamp
  actually minted. Whoever takes the worker id next, after a close, a crash
  (once the row expired) or a pause, mints nothing until its own clock has
  passed the mark: it waits up to ``max_wait`` seconds, then raises
  :class:`~sqlalchemy_seqkeys.ClockSkewError` naming the skew. So
  no two holders of a worker id ever mint the same millisecond, whatever
  their clocks say.
- **Paused or suspended holders stop**: the process counts its lease as
  valid for ``ttl`` from before each successful renewal was sent, on
  ``CLOCK_BOOTTIME`` where the platform has it (it keeps counting while the
  host is suspended; else ``time.monotonic``). A generator checks that
  *after* reading the clock, whenever a new tick begins, and raises
  :class:`~sqlalchemy_seqkeys.WorkerLeaseLostError` once the lease may have
  passed to another process (a SIGSTOP, a VM pause, a long GC, an
  unreachable database). Within one tick it goes on without a check; those
  ids lie under the high-water mark that the next holder must pass.
- **Clocks checked against the server**: at the claim and at each renewal
  the holder's clock is compared with the database server's; beyond
  ``max_skew`` seconds the claim raises
  :class:`~sqlalchemy_seqkeys.ClockSkewError` (a renewal stops
  minting with that message).
- **Forks**: a forked child (``os.fork()`` or a libc ``fork()``) never mints
  with its parent's lease; its first id leases a worker id of its own, once
  per process, however many threads and generators ask at the same moment.
  A claim the database refuses raises
  :class:`~sqlalchemy_seqkeys.WorkerLeaseDatabaseError`, and a later call
  claims again (not sooner than 1 s after, doubling to 30 s). Once that
  lease is lost, the next call raises
  :class:`~sqlalchemy_seqkeys.WorkerLeaseLostError` and the one after leases
  a new worker id. A bare libc ``fork()`` while the renewal thread waits for
  the GIL can hang the child inside CPython (see ``_fork``): under uWSGI use
  ``lazy-apps``, a ``postfork`` lease or ``py-call-osafterfork``.
- **Database errors** on the claim are
  :class:`~sqlalchemy_seqkeys.WorkerLeaseDatabaseError` (the driver's error is
  the ``__cause__``). A close that cannot reach the server stops the lease
  here, logs a warning and raises nothing: the row expires after its ttl, as
  after a crash, keeping its mark.

asyncio
-------
:class:`AsyncWorkerLease` is the same lease for an
:class:`~sqlalchemy.ext.asyncio.AsyncEngine`, as ``AsyncSession`` is
``Session``'s: its constructor does no I/O, ``async with`` (or ``await
lease.start()``) claims, an asyncio task renews every ``ttl / 3``, and leaving
the block (``await lease.close()``) releases. Claim, renewal and release run
the same SQL as :class:`WorkerLease`, through ``AsyncConnection.run_sync``, on
a twin of the engine's pool (so that a renewal never waits behind the
application's requests for a connection); a wait (for the previous holder's
mark) is an ``asyncio.sleep``. Every guarantee above holds: a renewal that
does not happen in time (a loop blocked past the ttl, an unreachable
database) makes its generators raise
:class:`~sqlalchemy_seqkeys.WorkerLeaseLostError`. A forked child cannot
renew its parent's asyncio lease; its generators raise
:class:`~sqlalchemy_seqkeys.ForkedWorkerError` until they are bound (with
:meth:`Snowflake.bind <sqlalchemy_seqkeys.Snowflake.bind>`) to a lease of its own::

    from sqlalchemy.ext.asyncio import create_async_engine

    ids = Snowflake()                     # declared with the models, bound at startup

    async def main() -> None:
        engine = create_async_engine("sqlite+aiosqlite:///ids.db")
        async with AsyncWorkerLease(engine, ttl=30) as lease:
            ids.bind(lease)
            print(ids.decode(ids()).worker_id)
        await engine.dispose()

Not covered: a generator not bound to its lease
(``Snowflake(worker_id=lease.worker_id)``), a lease table emptied or
restored while its worker ids are in use, and two tables used for the same
ids.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import sqlalchemy as sa
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.expression import FunctionElement

from . import _aio, _fork
from ._dialect import facts, insert_ignoring_conflict
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
    InvalidSnowflakeError,
    LeaseTableOutdatedError,
    NoWorkerIdError,
    SeqKeysError,
    WorkerLeaseDatabaseError,
    WorkerLeaseLostError,
)
from .sequences.table import library_table
from .snowflake import _Core

if TYPE_CHECKING:  # sqlalchemy.ext.asyncio needs greenlet, an optional package
    from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = ["AsyncWorkerLease", "WorkerLease", "workers_table"]

DEFAULT_TABLE = "seqkeys_workers"
MARK_COLUMN = "high_water_ms"
_MAX_TTL_S = 86400.0


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
#: the engine a lease talks to: an Engine, or an AsyncEngine
_E = TypeVar("_E")
_lease_locks: dict[int, threading.Lock] = {}
_log = logging.getLogger(__name__)
#: a forked child whose own lease could not be claimed tries again after this
#: wait, doubled at each failure up to the second bound (seconds)
_RECLAIM_BACKOFF_S = (1.0, 30.0)


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
    autogenerate then proposes it). Example::

        workers_table(Base.metadata)
    """
    check_instance(metadata, sa.MetaData, "metadata", InvalidSnowflakeError)
    check_name(name, "name", InvalidSnowflakeError)
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


class _Lease(Generic[_E]):
    """What :class:`WorkerLease` and :class:`AsyncWorkerLease` share.

    The constructor and its checks; the row's SQL, as functions of a sync
    ``Connection`` (a sync engine's, or an async one's facade inside
    ``run_sync``); and the checks a generator makes as it mints. Only the
    scheduling differs: a thread and blocking calls, or a task and awaits.
    """

    _is_worker_lease = True  # how snowflake.py, which imports no SQLAlchemy, knows one

    @property
    def _reclaimable(self) -> bool:
        """True if a generator bound to this lease may claim a new one once it is lost."""
        return False

    ttl: float
    max_worker_id: int
    max_skew: float
    max_wait: float
    clock: Callable[[], int]
    table: sa.Table
    owner: str

    def __init__(
        self,
        engine: _E,
        *,
        ttl: float = 30.0,
        table: str = DEFAULT_TABLE,
        max_worker_id: int = 1023,
        create_table: bool = True,
        clock: Callable[[], int] | None = None,
        max_skew: float = 2.0,
        max_wait: float = 5.0,
    ) -> None:
        # Every argument is checked before the database is touched.
        self._check_engine(engine)
        self.ttl = check_seconds(ttl, "ttl", InvalidSnowflakeError, max=_MAX_TTL_S)
        self.max_worker_id = check_int(
            max_worker_id, "max_worker_id", InvalidSnowflakeError, min=0, max=2**31 - 1
        )
        check_name(table, "table", InvalidSnowflakeError)
        clock = checked_clock(clock, "clock", InvalidSnowflakeError)
        check_flag(create_table, "create_table", InvalidSnowflakeError)
        self.max_skew = check_seconds(max_skew, "max_skew", InvalidSnowflakeError)
        self.max_wait = check_seconds(max_wait, "max_wait", InvalidSnowflakeError)
        self.clock = clock or time.time_ns
        self.table = workers_table(sa.MetaData(), table)
        self.owner = uuid.uuid4().hex
        self._token = _fork.process_token()
        self._worker_id: int | None = None
        self._core: _Core | None = None
        self._bind_lock = threading.Lock()
        self._lost: str | None = None
        self._closed = threading.Event()
        self._valid_until = 0.0
        self._mark_ms = 0
        self._floor_ms = 0
        self.engine = engine
        self.create_table = bool(create_table)
        self._open()

    @staticmethod
    def _check_engine(engine: object) -> None:
        """Raise InvalidSnowflakeError unless ``engine`` is the front end's kind."""
        raise NotImplementedError

    def _open(self) -> None:
        """The front end's own start (a sync lease claims here, an async one later)."""
        raise NotImplementedError

    @property
    def worker_id(self) -> int:
        """The worker id this lease holds."""
        if self._worker_id is None:
            raise self._unclaimed_error()
        return self._worker_id

    def _database_error(self, exc: BaseException) -> WorkerLeaseDatabaseError:
        return WorkerLeaseDatabaseError(
            f"could not claim a worker id in {self.table.name!r}: the database failed "
            f"({_reason(exc)}); nothing was minted. Check that the server is up and accepts "
            "connections (max_connections, the pool's size), then claim again"
        )

    def _release_failed(self, exc: BaseException) -> None:
        # A close that cannot reach the server is not an error of the caller's:
        # the row simply expires (as after a crash), keeping its mark.
        _log.warning(
            "could not release worker id %s in %r (%s); the lease is closed here and its "
            "row expires by itself at most ttl=%g s after its last renewal, keeping its "
            "high-water mark for the next holder",
            self._worker_id,
            self.table.name,
            _reason(exc),
            self.ttl,
            exc_info=exc,
        )

    def _unclaimed_error(self) -> NoWorkerIdError:
        return NoWorkerIdError(
            f"this {type(self).__name__} has not claimed a worker id yet; claim it with "
            "`async with AsyncWorkerLease(engine) as lease:` or `await lease.start()`, "
            "then bind generators to it"
        )

    def __repr__(self) -> str:
        held = "unclaimed" if self._worker_id is None else f"worker_id={self._worker_id}"
        return f"{type(self).__name__}({held}, owner={self.owner[:8]})"

    # -- clocks ----------------------------------------------------------------------

    def _now_ns(self) -> int:
        # The clock the ids are minted with: the bound generators' once there are any.
        core = self._core
        return core.clock() if core is not None else self.clock()

    def _server_and_client_ms(self, conn: sa.Connection) -> tuple[int, int]:
        """The server's Unix ms and ours; raise ClockSkewError if they differ too much."""
        before = self._now_ns()
        server_ms = int(conn.scalar(sa.select(server_now_ms())))  # type: ignore[arg-type]
        after = self._now_ns()
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

    # -- the row's SQL (one transaction each; the caller opens it) --------------------

    def _claim_on(self, conn: sa.Connection) -> tuple[int, int, int] | None:
        """One claim: (worker id, previous holder's mark, our mark), or None if outraced."""
        t = self.table
        ttl_ms = int(self.ttl * 1000)
        server_ms, client_ms = self._server_and_client_ms(conn)
        rows = self._rows(conn)
        used = {row.worker_id for row in rows}
        free = [row for row in rows if row.expires_at < server_ms]
        # First an id whose last holder's ids this clock has passed, then
        # one never used, then the one whose last holder's ids end soonest.
        ready = [row for row in free if row.high_water_ms < client_ms]
        never = next((i for i in range(self.max_worker_id + 1) if i not in used), None)
        if ready or never is None:
            if not free:
                raise NoWorkerIdError(
                    f"all {self.max_worker_id + 1} worker ids in {t.name!r} are leased "
                    "by live processes; wait for one to close or expire, or use a "
                    "layout with more worker bits"
                )
            row = (
                min(ready, key=lambda r: r.worker_id)
                if ready
                else min(free, key=lambda r: (r.high_water_ms, r.worker_id))
            )
            mark = max(row.high_water_ms, client_ms + ttl_ms)
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
                    expires_at=server_now_ms() + ttl_ms,
                    **{MARK_COLUMN: mark},
                )
            ).rowcount
            if taken != 1:
                return None  # another process took or renewed it first
            return int(row.worker_id), int(row.high_water_ms), mark
        mark = client_ms + ttl_ms
        inserted = conn.execute(
            insert_ignoring_conflict(conn.dialect, t, ["worker_id"])
            .values(
                worker_id=never,
                owner=self.owner,
                expires_at=server_now_ms() + ttl_ms,
                **{MARK_COLUMN: mark},
            )
            .execution_options(preserve_rowcount=True)
        ).rowcount
        return (never, 0, mark) if inserted == 1 else None

    def _rows(self, conn: sa.Connection) -> list[Any]:
        t = self.table
        query = sa.select(t.c.worker_id, t.c.owner, t.c.expires_at, t.c[MARK_COLUMN]).where(
            t.c.worker_id <= self.max_worker_id
        )
        return list(conn.execute(query))

    def _renew_on(self, conn: sa.Connection, at_least_ms: int) -> int | None:
        """Renew the row and move the mark on: the new mark, or None if the row is gone."""
        t = self.table
        ttl_ms = int(self.ttl * 1000)
        _, client_ms = self._server_and_client_ms(conn)
        mark = max(self._mark_ms, client_ms + ttl_ms, at_least_ms)
        renewed = conn.execute(
            sa.update(t)
            .where(t.c.worker_id == self.worker_id, t.c.owner == self.owner)
            .values(expires_at=server_now_ms() + ttl_ms, **{MARK_COLUMN: mark})
        ).rowcount
        return mark if renewed == 1 else None

    def _release_on(self, conn: sa.Connection, mark: int) -> None:
        t = self.table
        conn.execute(
            sa.update(t)
            .where(t.c.worker_id == self.worker_id, t.c.owner == self.owner)
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

    def _claim_in(self, conn: sa.Connection) -> None:
        """Claim a worker id on ``conn``: one attempt after another, until one wins."""
        _standalone(conn)
        for _ in range(self.max_worker_id + 2):
            sent = _lease_clock()
            try:
                with conn.begin():
                    claim = self._claim_on(conn)
            except sa.exc.DBAPIError as exc:
                try:
                    outdated = self._outdated(conn)
                except Exception:  # no table at all, or no database: the error says so
                    outdated = False
                if outdated:
                    raise self._outdated_error() from exc
                raise
            if claim is not None:
                self._claimed(claim, sent)
                return
        raise NoWorkerIdError(
            f"could not claim a worker id in {self.table.name!r}: other processes kept taking them"
        )

    def _renewal_sent(self, at_least_ms: int) -> float | None:
        """When a renewal starts (the lease counts from then), or None if none is due.

        The caller holds the front end's renewal lock until :meth:`_renew_in` is done.
        """
        if self._closed.is_set() or self._lost is not None:
            return None
        if at_least_ms and self._mark_ms >= at_least_ms:
            return None  # another caller's extension got there first
        return _lease_clock()

    def _renew_in(self, conn: sa.Connection, at_least_ms: int, sent: float) -> None:
        """Renew the row and move the mark on; raise if the lease is gone."""
        with _standalone(conn).begin():
            mark = self._renew_on(conn, at_least_ms)
        self._renewed(mark, sent)

    def _release_in(self, conn: sa.Connection, mark: int) -> None:
        """Release the row, keeping ``mark``."""
        with _standalone(conn).begin():
            self._release_on(conn, mark)

    @contextlib.contextmanager
    def _scheduled_renewal(self) -> Iterator[None]:
        """Around each renewal of the background loop: failures are retried, a loss stops."""
        try:
            yield
        except ClockSkewError as exc:
            self._lost = str(exc)
        except WorkerLeaseLostError:
            pass
        except Exception:  # a failed renewal is retried; expiry is the guard
            pass
        if self._lost is not None:
            self._renewal_failed()

    # -- bookkeeping ---------------------------------------------------------------

    def _claimed(self, claim: tuple[int, int, int], sent: float) -> None:
        self._worker_id, self._floor_ms, self._mark_ms = claim
        self._valid_until = sent + self.ttl

    def _renewed(self, mark: int | None, sent: float) -> None:
        if mark is None:
            self._lost = "its row was taken over after it expired"
            raise self._lost_error()
        # Only once committed: the row's mark is never below ours.
        self._mark_ms = mark
        self._valid_until = sent + self.ttl

    def _ahead_of_floor_ms(self, deadline: float) -> int:
        """How far the previous holder's ids are ahead of our clock (< 0: passed them).

        Raises ClockSkewError once ``deadline`` (monotonic) has passed.
        """
        # The previous holder minted up to _floor_ms on its own clock; ids from
        # here must carry later timestamps.
        ahead = self._floor_ms - self._now_ns() // 1_000_000
        if ahead >= 0 and time.monotonic() >= deadline:
            raise ClockSkewError(
                f"worker id {self.worker_id} was last used by a process whose ids reach "
                f"{ahead} ms past this host's clock (its clock ran ahead, or this one is "
                f"behind); waited max_wait={self.max_wait:g} s for this clock to pass them. "
                "Fix the clocks (NTP), or raise WorkerLease(max_wait=...)"
            )
        return ahead

    def _release_mark(self) -> int:
        """Stop every generator on the lease; the mark a successor must pass."""
        with self._bind_lock:
            core = self._core
        tick = core.stop(None) if core is not None else -1
        if core is None or tick < 0:
            return self._floor_ms
        return max(self._floor_ms, core.last_ms_of(tick))

    def _renewal_failed(self) -> None:
        # Not even the rest of this tick: the generators stop at once.
        core = self._core
        if core is not None:
            core.stop(None)

    # -- checking ------------------------------------------------------------------

    def _in_owner_process(self) -> bool:
        """False in a process forked from the one that made the lease."""
        return _fork.process_token() == self._token

    @property
    def valid(self) -> bool:
        """True while the lease is certainly ours: renewed in time and not closed."""
        return (
            self._lost is None
            and not self._closed.is_set()
            and self._in_owner_process()
            and _lease_clock() < self._valid_until
        )

    def _usable(self) -> bool:
        """In the process that claimed it: not lost, not closed, renewed in time, and
        its generators still on it."""
        core = self._core
        return (
            self._lost is None
            and not self._closed.is_set()
            and _lease_clock() < self._valid_until
            and (core is None or not core.relinquished())
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
            f"minting with it could duplicate another process's ids. Take a new "
            f"{type(self).__name__}"
        )

    def _assert_held(self) -> None:
        # Read after the clock: a pause between the two cannot slip an id through.
        if (
            _lease_clock() >= self._valid_until
            or self._lost is not None
            or self._closed.is_set()
            or not self._in_owner_process()
        ):
            if self._worker_id is None:
                raise self._unclaimed_error()
            raise self._lost_error()

    def check(self) -> int:
        """Return the worker id, or raise WorkerLeaseLostError if the lease may be gone.

        Example::

            lease.check()   # 5
        """
        self._assert_held()
        return self.worker_id

    # -- what each front end does its own way -----------------------------------------

    def _extend_mark(self, until_ms: int) -> None:
        """Move the mark past ``until_ms`` now (a generator's clock jumped forward)."""
        raise NotImplementedError

    def _in_this_process(self, clock: Callable[[], int]) -> _Lease[Any]:
        """The lease of the current process (after a fork, one of its own)."""
        raise NotImplementedError


class WorkerLease(_Lease[sa.Engine]):
    """A worker id leased from ``table``, renewed in the background until :meth:`close`.

    ``ttl`` (seconds) is how long a lease lives without renewal; it is renewed
    every ``ttl / 3``. ``max_worker_id`` bounds the ids handed out (1023 for
    the default snowflake layout). ``create_table=True`` creates the table if
    it is missing. ``clock`` returns nanoseconds since the Unix epoch (default
    ``time.time_ns``; a :class:`~sqlalchemy_seqkeys.Snowflake` bound to the
    lease mints with it, and its own ``clock=``, if given, replaces it here).
    ``max_skew`` (seconds) is how far that clock may be from the database
    server's; ``max_wait`` (seconds) is how long the constructor waits for
    this clock to pass the timestamps the worker id's previous holder minted.

    Raises :class:`~sqlalchemy_seqkeys.NoWorkerIdError` when every id is held
    by a live lease, and :class:`~sqlalchemy_seqkeys.ClockSkewError`
    when the clocks disagree beyond those bounds. For an
    :class:`~sqlalchemy.ext.asyncio.AsyncEngine`, use :class:`AsyncWorkerLease`.

    Example::

        with WorkerLease(engine, ttl=30) as lease:
            ids = Snowflake(worker_id=lease)
            ids()
    """

    @staticmethod
    def _check_engine(engine: object) -> None:
        if not isinstance(engine, sa.Engine):
            hint = (
                "for an AsyncEngine use `async with AsyncWorkerLease(engine) as lease:`"
                if _is_async_engine(engine)
                else "use sqlalchemy.create_engine(url)"
            )
            raise InvalidSnowflakeError(
                f"engine must be an sqlalchemy Engine, not {engine!r}; {hint}"
            )

    def _open(self) -> None:
        self._root = self
        self._children: dict[int, WorkerLease] = {}
        #: process token -> when a forked child may claim again, the last wait, its error
        self._retries: dict[int, tuple[float, float, SeqKeysError]] = {}
        self._renew_lock = threading.Lock()
        try:
            if self.create_table:
                self.table.create(self.engine, checkfirst=True)
            with self.engine.connect() as conn:
                self._claim_in(conn)
        except _db_errors(self.engine) as exc:
            raise self._database_error(exc) from exc
        self._thread = threading.Thread(
            target=self._renew_loop, name=f"seqkeys-lease-{self.worker_id}", daemon=True
        )
        self._thread.start()
        self._wait_past_floor()

    def __enter__(self) -> WorkerLease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _wait_past_floor(self) -> None:
        deadline = time.monotonic() + self.max_wait
        try:
            while (ahead := self._ahead_of_floor_ms(deadline)) >= 0:
                time.sleep(min((ahead + 1) / 1000, 0.05))
        except ClockSkewError:
            self.close()
            raise

    # -- renewing ------------------------------------------------------------------

    def _renew_once(self, at_least_ms: int = 0) -> None:
        """Renew the row and move the mark on; raise if the lease is gone."""
        with self._renew_lock:
            if (sent := self._renewal_sent(at_least_ms)) is not None:
                with self.engine.connect() as conn:
                    self._renew_in(conn, at_least_ms, sent)

    def _renew_loop(self) -> None:
        interval = self.ttl / 3
        while not self._closed.wait(interval):
            with self._scheduled_renewal():
                self._renew_once()
            if self._lost is not None:
                return

    def _extend_mark(self, until_ms: int) -> None:
        # A generator reached the mark while the lease is valid: its clock
        # jumped forward. Renew now (outside the generator's lock).
        try:
            self._renew_once(at_least_ms=until_ms)
        except SeqKeysError:
            raise
        except Exception as exc:
            raise WorkerLeaseLostError(
                f"the lease on worker id {self.worker_id} could not be renewed to mint past "
                f"{until_ms} Unix ms (the database did not answer: {exc}); minting on could "
                "duplicate another process's ids. Take a new WorkerLease"
            ) from exc
        self._assert_held()

    def close(self) -> None:
        """Stop renewing and release the id, keeping the row's high-water mark.

        The mark is lowered to the last timestamp the bound generators minted,
        so that the next holder waits only as long as the clocks disagree.

        Example::

            lease.close()
        """
        if self._closed.is_set() or not self._in_owner_process():
            # Closed, or a forked child's copy: the parent still owns the row (and
            # the Event's lock may have been held by a parent's thread at the fork).
            return
        self._closed.set()
        self._valid_until = 0.0
        mark = self._release_mark()
        try:
            with self._renew_lock:
                self._release(mark)
        except _db_errors(self.engine) as exc:
            self._release_failed(exc)
        finally:
            self._thread.join(timeout=1)

    def _release(self, mark: int) -> None:
        # A connection the server dropped while it sat in the pool fails once
        # and is invalidated: the release goes through on a new one.
        for attempt in (1, 2):
            with self.engine.connect() as conn:
                try:
                    self._release_in(conn, mark)
                    return
                except _db_errors(self.engine) as exc:
                    if attempt == 2 or not _is_disconnect(conn, exc):
                        raise
                    conn.invalidate()

    def for_child(self) -> WorkerLease:
        """The lease of the current process: after a fork, one claimed for it (once).

        A forked child cannot mint with its parent's lease. Every generator
        bound to this lease calls this on its first id in a child, and they
        all get the same new lease, claimed on a fresh pool (SQLAlchemy's rule
        after fork). In the process that claimed it, this is the lease itself.

        Example::

            child_lease = lease.for_child()   # in a forked child
        """
        core = self._core
        return self._in_this_process(core.clock if core is not None else self.clock)

    def _in_this_process(self, clock: Callable[[], int]) -> WorkerLease:
        root = self._root
        token = _fork.process_token()
        if token == root._token:
            return root
        with _fork.process_lock(_lease_locks):
            lease = root._children.get(token)
            if lease is not None and (lease._usable() or lease._closed.is_set()):
                return lease  # usable, or closed by the application: it stays closed
            return root._claim_for_child(token, lease, clock)

    @property
    def _reclaimable(self) -> bool:
        # A lease claimed implicitly in a forked child: claimed anew once lost.
        return self._root is not self

    def _claim_for_child(
        self, token: int, lost: WorkerLease | None, clock: Callable[[], int]
    ) -> WorkerLease:
        """A new lease for the forked process ``token``, in place of ``lost`` (if any)."""
        retry = self._retries.get(token)
        if retry is not None and time.monotonic() < retry[0]:
            # Not yet: a server that refused a moment ago is not asked again at once.
            last = retry[2]
            raise _child_claim_error(last, retry[0] - time.monotonic(), again=True) from (
                last.__cause__ or last
            )
        floor_ms, lost_worker = -1, None
        if lost is None:
            self.engine.dispose(close=False)  # SQLAlchemy's rule in a forked child
        else:
            # Its generators stop first; a claim of the same worker id (its row
            # deleted, or released below) starts past the ids it minted.
            floor_ms, lost_worker = lost._release_mark(), lost._worker_id
            lost.close()
            del self._children[token]
        same = {key: getattr(self, key) for key in _SETTINGS}
        try:
            lease = WorkerLease(
                self.engine, table=self.table.name, create_table=False, clock=clock, **same
            )
        except SeqKeysError as exc:
            wait = _RECLAIM_BACKOFF_S[0] if retry is None else retry[1] * 2
            wait = min(wait, _RECLAIM_BACKOFF_S[1])
            self._retries[token] = (time.monotonic() + wait, wait, exc)
            raise _child_claim_error(exc, wait) from (exc.__cause__ or exc)
        self._retries.pop(token, None)
        if lease._worker_id == lost_worker:
            lease._floor_ms = max(lease._floor_ms, floor_ms)
        lease._root = self
        self._children[token] = lease
        return lease


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


class AsyncWorkerLease(_Lease["AsyncEngine"]):
    """:class:`WorkerLease` for an :class:`~sqlalchemy.ext.asyncio.AsyncEngine`.

    The same arguments and guarantees. The constructor does no I/O: ``async
    with`` (or ``await lease.start()``) claims a worker id, an asyncio task on
    the running loop renews it every ``ttl / 3``, and leaving the block (or
    ``await lease.close()``) releases it. Nothing blocks the event loop: the
    SQL runs through ``AsyncConnection.run_sync``, waits are
    ``asyncio.sleep``. The lease talks to the database on a twin of the
    engine's pool (``Pool.recreate()``: the same URL, settings and pool
    events), so a renewal never waits behind the application's requests; it
    holds one connection, closed by :meth:`close`.

    The renewal task needs the loop to run: a loop blocked for longer than
    the ttl loses the lease, and its generators raise
    :class:`~sqlalchemy_seqkeys.WorkerLeaseLostError`. Generators bound to the
    lease mint from coroutines, from SQLAlchemy's greenlet (column defaults
    under ``AsyncSession``) and from other threads alike.

    Example (a FastAPI lifespan)::

        ids = Snowflake()        # the models' key default, bound at startup

        @contextlib.asynccontextmanager
        async def lifespan(app):
            async with AsyncWorkerLease(engine, ttl=30) as lease:
                ids.bind(lease)
                yield
    """

    @staticmethod
    def _check_engine(engine: object) -> None:
        if not _is_async_engine(engine):
            hint = (
                "for a sync Engine use `with WorkerLease(engine) as lease:`"
                if isinstance(engine, sa.Engine)
                else "use sqlalchemy.ext.asyncio.create_async_engine(url)"
            )
            raise InvalidSnowflakeError(f"engine must be an AsyncEngine, not {engine!r}; {hint}")

    def _open(self) -> None:
        # No I/O here: `async with` or start() claims.
        self._db: AsyncEngine | None = None  # the twin pool's engine, while started
        self._own_db = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._renew_lock: asyncio.Lock | None = None
        self._started = False

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
        if self._started:
            raise InvalidSnowflakeError(
                "this AsyncWorkerLease was started already; a lease is claimed once "
                "(create another one for another worker id)"
            )
        self._started = True
        self._loop = asyncio.get_running_loop()
        self._renew_lock = asyncio.Lock()
        # The twin pool shares the engine's dialect, which learns the server
        # (schema, version, modes) on the engine's first connection: let that
        # happen on the engine itself, where concurrent first connects wait for it.
        try:
            async with self.engine.connect():
                pass
        except _db_errors(self.engine) as exc:
            self._closed.set()
            raise self._database_error(exc) from exc
        self._db, self._own_db = _twin(self.engine)
        try:
            try:
                if self.create_table:
                    async with self._db.begin() as conn:
                        await conn.run_sync(self.table.create, checkfirst=True)
                async with self._db.connect() as conn:
                    await conn.run_sync(self._claim_in)
            except _db_errors(self.engine) as exc:
                raise self._database_error(exc) from exc
        except BaseException:
            self._closed.set()
            if self._own_db:
                await self._db.dispose()
            raise
        self._task = self._loop.create_task(
            self._renew_forever(), name=f"seqkeys-lease-{self.worker_id}"
        )
        try:
            await self._wait_past_floor()
        except BaseException:
            await self.close()
            raise
        return self

    async def _wait_past_floor(self) -> None:
        deadline = time.monotonic() + self.max_wait
        while (ahead := self._ahead_of_floor_ms(deadline)) >= 0:
            await asyncio.sleep(min((ahead + 1) / 1000, 0.05))

    # -- renewing ------------------------------------------------------------------

    async def _renew_once(self, at_least_ms: int = 0) -> None:
        """Renew the row and move the mark on; raise if the lease is gone."""
        assert self._renew_lock is not None
        assert self._db is not None
        async with self._renew_lock:
            if (sent := self._renewal_sent(at_least_ms)) is not None:
                async with self._db.connect() as conn:
                    await conn.run_sync(self._renew_in, at_least_ms, sent)

    async def _renew_forever(self) -> None:
        interval = self.ttl / 3
        try:
            while True:
                await asyncio.sleep(interval)
                with self._scheduled_renewal():
                    await self._renew_once()
                if self._lost is not None:
                    return
        except asyncio.CancelledError:
            if not self._closed.is_set():
                # Cancelled with the lease open: the loop is shutting down
                # (asyncio.run cancels every task). Close as `async with` would.
                await self.close()
            raise

    def _extend_mark(self, until_ms: int) -> None:
        # A generator reached the mark while the lease is valid: its clock
        # jumped forward. The renewal must commit before it mints on.
        loop = self._loop
        assert loop is not None
        running = _aio.on_loop()
        try:
            if running is loop:
                if not _aio.in_greenlet():
                    # Straight from a coroutine: a database round trip cannot be
                    # awaited here. Start it; the caller may try again.
                    self._extend_later(until_ms)
                    raise ClockSkewError(
                        f"this host's clock jumped past the high-water mark of the lease on "
                        f"worker id {self.worker_id} ({until_ms - self._mark_ms} ms past it); "
                        "the lease is extending it now, so retry in a moment. A Snowflake "
                        "called from a coroutine cannot wait for the database without "
                        "blocking the loop; as a column default under AsyncSession it waits "
                        "by itself"
                    )
                _aio.await_(self._renew_once(at_least_ms=until_ms))
            elif loop.is_closed():
                raise self._lost_error()
            else:  # another thread: wait for the lease's loop to renew
                asyncio.run_coroutine_threadsafe(
                    self._renew_once(at_least_ms=until_ms), loop
                ).result(timeout=self.ttl)
        except SeqKeysError:
            raise
        except Exception as exc:
            raise WorkerLeaseLostError(
                f"the lease on worker id {self.worker_id} could not be renewed to mint past "
                f"{until_ms} Unix ms (the database did not answer: {exc!r}); minting on "
                "could duplicate another process's ids. Take a new AsyncWorkerLease"
            ) from exc
        self._assert_held()

    def _extend_later(self, until_ms: int) -> None:
        async def extend() -> None:
            with contextlib.suppress(Exception):  # the renewal task retries anyway
                await self._renew_once(at_least_ms=until_ms)

        task = asyncio.get_running_loop().create_task(extend())
        _extensions.add(task)  # asyncio keeps weak references to tasks
        task.add_done_callback(_extensions.discard)

    async def close(self) -> None:
        """Stop renewing and release the id, keeping the row's high-water mark.

        As :meth:`WorkerLease.close`; awaited (``async with`` does it on exit).

        Example::

            await lease.close()
        """
        if self._closed.is_set() or not self._in_owner_process():
            return  # closed, or a forked child's copy: the parent owns the row
        self._closed.set()
        self._valid_until = 0.0
        if self._db is None:
            return  # never started
        db = self._db
        try:
            task = self._task
            if task is not None and task is not asyncio.current_task() and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            if self._worker_id is not None:
                mark = self._release_mark()
                assert self._renew_lock is not None
                try:
                    async with self._renew_lock:
                        await self._release(db, mark)
                except _db_errors(self.engine) as exc:
                    self._release_failed(exc)
        finally:
            if self._own_db:
                await db.dispose()

    #: ``contextlib.aclosing`` calls it
    aclose = close

    async def _release(self, db: AsyncEngine, mark: int) -> None:
        # As WorkerLease._release: a connection dropped in the pool is replaced once.
        for attempt in (1, 2):
            async with db.connect() as conn:
                try:
                    await conn.run_sync(self._release_in, mark)
                    return
                except _db_errors(self.engine) as exc:
                    if attempt == 2 or not _is_disconnect(conn.sync_connection, exc):  # type: ignore[arg-type]
                        raise
                    await conn.invalidate()

    def _in_this_process(self, clock: Callable[[], int]) -> _Lease[Any]:
        if self._in_owner_process():
            return self
        raise ForkedWorkerError(
            f"this process was forked from the one that holds AsyncWorkerLease worker id "
            f"{self._worker_id}, whose renewals run on the parent's event loop; claim a "
            "lease in this process and bind the generator to it: "
            "`async with AsyncWorkerLease(engine) as lease: ids.bind(lease)`"
        )


#: extensions started from coroutines (asyncio keeps only weak references to tasks)
_extensions: set[asyncio.Task[None]] = set()


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


def _twin(engine: AsyncEngine) -> tuple[AsyncEngine, bool]:
    """An AsyncEngine over a twin of ``engine``'s pool (the lease's own), and if it is new."""
    from sqlalchemy.ext.asyncio import AsyncEngine

    from .sequences._lane import shares_one_connection, twin_engine

    sync = engine.sync_engine
    if shares_one_connection(sync):  # in-memory SQLite: no second connection to open
        return engine, False
    return AsyncEngine(twin_engine(sync)), True
