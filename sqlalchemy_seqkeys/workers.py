"""``WorkerLease``: snowflake worker ids leased from a table in your database.

Two live processes must never mint with the same worker id. A lease makes the
database the referee: each process claims a row of ``seqkeys_workers``
(``worker_id`` primary key, ``owner`` token, ``expires_at`` in the database
server's milliseconds), renews it from a background thread, and deletes it on
close. A row whose lease expired (its process died) is reclaimed by the next
process that needs an id::

    from sqlalchemy_seqkeys import Snowflake, WorkerLease

    lease = WorkerLease(engine, ttl=30)          # claims the lowest free id
    ids = Snowflake(worker_id=lease)             # checks the lease on every id
    ...
    lease.close()                                # or: with WorkerLease(engine) as lease:

Expiry is measured by the database server's clock, so machines whose clocks
disagree cannot steal each other's live leases. The process also keeps a
deadline of its own on a monotonic clock, counted from before each renewal
was sent: once that passes without a successful renewal, the lease is treated
as lost and :class:`~sqlalchemy_seqkeys.Snowflake` raises
:class:`~sqlalchemy_seqkeys.WorkerLeaseLostError` instead of minting, because
another process may already hold the id. Claims are atomic (a conditional
``UPDATE`` of an expired row, or an insert of a new row that the primary key
lets only one process win), so two processes racing for the last free id
cannot both get it.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.expression import FunctionElement

from .errors import InvalidSnowflakeError, NoWorkerIdError, WorkerLeaseLostError
from .sequences.table import insert_ignoring_conflict

__all__ = ["WorkerLease", "workers_table"]

DEFAULT_TABLE = "seqkeys_workers"


class server_now_ms(FunctionElement[int]):  # noqa: N801 - reads like the SQL function it is
    """The database server's current time in Unix milliseconds (one per dialect)."""

    type = sa.BigInteger()
    inherit_cache = True


@compiles(server_now_ms)
def _now_default(element: Any, compiler: Any, **kw: Any) -> str:
    return "CAST((EXTRACT(EPOCH FROM CURRENT_TIMESTAMP) * 1000) AS BIGINT)"


@compiles(server_now_ms, "postgresql")
def _now_postgresql(element: Any, compiler: Any, **kw: Any) -> str:
    return "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)"


@compiles(server_now_ms, "mysql")
@compiles(server_now_ms, "mariadb")
def _now_mysql(element: Any, compiler: Any, **kw: Any) -> str:
    return "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)"


@compiles(server_now_ms, "sqlite")
def _now_sqlite(element: Any, compiler: Any, **kw: Any) -> str:
    return "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"


@compiles(server_now_ms, "spanner")
@compiles(server_now_ms, "spanner+spanner")  # sqlalchemy-spanner's dialect name
def _now_spanner(element: Any, compiler: Any, **kw: Any) -> str:
    return "UNIX_MILLIS(CURRENT_TIMESTAMP())"


def workers_table(metadata: sa.MetaData, name: str = DEFAULT_TABLE) -> sa.Table:
    """Declare the worker-lease table on ``metadata`` (or return the one already there).

    Example::

        metadata = sa.MetaData()
        workers_table(metadata)
        metadata.create_all(engine)
    """
    existing = metadata.tables.get(name)
    if existing is not None:
        return existing
    return sa.Table(
        name,
        metadata,
        sa.Column("worker_id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("owner", sa.String(64), nullable=False),
        sa.Column("expires_at", sa.BigInteger, nullable=False),
        info={"seqkeys": "workers"},
    )


class WorkerLease:
    """A worker id leased from ``table``, renewed in the background until :meth:`close`.

    ``ttl`` (seconds) is how long a lease lives without renewal; it is renewed
    every ``ttl / 3``. ``max_worker_id`` bounds the ids handed out (1023 for
    the default snowflake layout). ``create_table=True`` creates the table if
    it is missing. Raises :class:`~sqlalchemy_seqkeys.NoWorkerIdError` when
    every id is held by a live lease.

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
    ) -> None:
        if ttl <= 0:
            raise InvalidSnowflakeError(f"ttl must be a positive number of seconds, not {ttl!r}")
        self.engine = engine
        self.ttl = float(ttl)
        self.max_worker_id = max_worker_id
        self.table = workers_table(sa.MetaData(), table)
        if create_table:
            self.table.create(engine, checkfirst=True)
        self.owner = uuid.uuid4().hex
        self._pid = os.getpid()
        self._lost: str | None = None
        self._closed = threading.Event()
        self._valid_until = 0.0
        self.worker_id = self._claim()
        self._thread = threading.Thread(
            target=self._renew_loop, name=f"seqkeys-lease-{self.worker_id}", daemon=True
        )
        self._thread.start()

    def __repr__(self) -> str:
        return f"WorkerLease(worker_id={self.worker_id}, owner={self.owner[:8]})"

    def __enter__(self) -> WorkerLease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- claiming ------------------------------------------------------------------

    def _claim(self) -> int:
        t = self.table
        ttl_ms = int(self.ttl * 1000)
        for _ in range(self.max_worker_id + 2):
            sent = time.monotonic()
            with self.engine.begin() as conn:
                expired = conn.execute(
                    sa.select(t.c.worker_id)
                    .where(t.c.expires_at < server_now_ms(), t.c.worker_id <= self.max_worker_id)
                    .order_by(t.c.worker_id)
                    .limit(1)
                ).scalar()
                if expired is not None:
                    taken = conn.execute(
                        sa.update(t)
                        .where(t.c.worker_id == expired, t.c.expires_at < server_now_ms())
                        .values(owner=self.owner, expires_at=server_now_ms() + ttl_ms)
                    ).rowcount
                    if taken == 1:
                        self._valid_until = sent + self.ttl
                        return int(expired)
                    continue  # another process reclaimed it first
                used = set(conn.scalars(sa.select(t.c.worker_id)))
                free = next((i for i in range(self.max_worker_id + 1) if i not in used), None)
                if free is None:
                    raise NoWorkerIdError(
                        f"all {self.max_worker_id + 1} worker ids in {t.name!r} are leased by "
                        "live processes; wait for one to close or expire, or use a layout "
                        "with more worker bits"
                    )
                inserted = conn.execute(
                    insert_ignoring_conflict(conn.dialect, t, ["worker_id"])
                    .values(worker_id=free, owner=self.owner, expires_at=server_now_ms() + ttl_ms)
                    .execution_options(preserve_rowcount=True)
                ).rowcount
                if inserted == 1:
                    self._valid_until = sent + self.ttl
                    return free
        raise NoWorkerIdError(
            f"could not claim a worker id in {t.name!r}: other processes kept taking them"
        )

    # -- renewing ------------------------------------------------------------------

    def _renew_once(self) -> bool:
        t = self.table
        sent = time.monotonic()
        with self.engine.begin() as conn:
            renewed = conn.execute(
                sa.update(t)
                .where(t.c.worker_id == self.worker_id, t.c.owner == self.owner)
                .values(expires_at=server_now_ms() + int(self.ttl * 1000))
            ).rowcount
        if renewed != 1:
            self._lost = "its row was taken over after it expired"
            self._valid_until = 0.0
            return False
        self._valid_until = sent + self.ttl
        return True

    def _renew_loop(self) -> None:
        interval = self.ttl / 3
        while not self._closed.wait(interval):
            try:
                if not self._renew_once():
                    return
            except Exception:  # a failed renewal is retried; expiry is the guard
                continue

    # -- checking ------------------------------------------------------------------

    @property
    def valid(self) -> bool:
        """True while the lease is certainly ours: renewed in time and not closed."""
        return (
            self._lost is None
            and not self._closed.is_set()
            and os.getpid() == self._pid
            and time.monotonic() < self._valid_until
        )

    def check(self) -> int:
        """Return the worker id, or raise WorkerLeaseLostError if the lease may be gone.

        Example::

            lease.check()   # 5
        """
        if time.monotonic() >= self._valid_until or self._lost is not None or self._closed.is_set():
            reason = self._lost or (
                "it was closed" if self._closed.is_set() else "it was not renewed before it expired"
            )
            raise WorkerLeaseLostError(
                f"the lease on worker id {self.worker_id} is no longer certain ({reason}); "
                "minting with it could duplicate another process's ids. Take a new WorkerLease"
            )
        return self.worker_id

    def close(self) -> None:
        """Stop renewing and release the id (deletes the row if still ours)."""
        if self._closed.is_set():
            return
        self._closed.set()
        self._valid_until = 0.0
        if os.getpid() != self._pid:
            return  # a forked child's copy: the parent still owns the row
        t = self.table
        try:
            with self.engine.begin() as conn:
                conn.execute(
                    sa.delete(t).where(t.c.worker_id == self.worker_id, t.c.owner == self.owner)
                )
        finally:
            self._thread.join(timeout=1)

    def for_child(self) -> WorkerLease:
        """A new lease for a forked child, on a fresh pool (SQLAlchemy's rule after fork)."""
        self.engine.dispose(close=False)
        return WorkerLease(
            self.engine,
            ttl=self.ttl,
            table=self.table.name,
            max_worker_id=self.max_worker_id,
            create_table=False,
        )
