"""A worker lease whose row another transaction holds: close and a clock step end, never hang.

Another connection holds the lease row (``SELECT ... FOR UPDATE`` in an open
transaction: an administrator's query, a migration). The lease's writes wait
for it: forever on PostgreSQL without ``lock_timeout``, 50 s on MariaDB by
default. They waited under the lease's lock, so ``lease.close()`` and a
generator whose clock stepped past the mark (which renews on the spot) waited
as long, or forever. Now a close gives up after ``min(ttl, 5)`` seconds with a
warning (the row expires by itself), and the generator raises
:class:`~sqlalchemy_seqkeys.WorkerLeaseLostError` once the lease's validity
runs out. Each call runs on a thread joined with a generous bound: a
regression fails here instead of hanging the suite. The async lease's twins
are in tests/backend/test_async_leases.py.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import Snowflake, WorkerLease, WorkerLeaseLostError, workers_table
from tests._helpers import fresh_table

pytestmark = pytest.mark.backend

TTL = 2.0
#: far more than a bounded call takes (about the ttl); far less than forever, or
#: MariaDB's default 50 s lock wait
BOUND_S = 30.0


@pytest.fixture(params=["postgresql", "mysql"])
def lease_engine(request: pytest.FixtureRequest, engines: Any) -> Iterator[Engine]:
    """An engine of its own (threads left waiting keep their connections) and a fresh table."""
    shared = engines.get(request.param)
    before = set(threading.enumerate())  # leases of other tests may still renew
    with fresh_table(shared, workers_table):
        engine = sa.create_engine(shared.url)
        try:
            yield engine
        finally:
            _join_lease_threads(before)  # the row is free again: what waited on it ends
            engine.dispose()


def _join_lease_threads(before: set[threading.Thread]) -> None:
    # this test's renewal threads and the writes a bounded call stopped waiting for
    deadline = time.monotonic() + BOUND_S
    for thread in threading.enumerate():
        if thread.name.startswith("seqkeys-lease-") and thread not in before:
            thread.join(max(deadline - time.monotonic(), 0.0))
            assert not thread.is_alive(), f"{thread.name} still runs"


@pytest.fixture
def row_locker(lease_engine: Engine) -> Iterator[Callable[[int], None]]:
    """``lock(worker_id)``: another transaction holds the lease row until the test ends."""
    conn = sa.create_engine(lease_engine.url, poolclass=sa.pool.NullPool).connect()
    t = workers_table(sa.MetaData())

    def lock(worker_id: int) -> None:
        conn.execute(sa.select(t).where(t.c.worker_id == worker_id).with_for_update())

    try:
        yield lock
    finally:
        conn.rollback()
        conn.close()


class _Bounded:
    """``call`` on a daemon thread, joined for at most BOUND_S seconds."""

    def __init__(self, call: Callable[[], object]) -> None:
        self.error: BaseException | None = None
        self.result: object = None
        self.thread = threading.Thread(target=self._run, args=(call,), daemon=True)
        self.thread.start()
        self.thread.join(BOUND_S)

    def _run(self, call: Callable[[], object]) -> None:
        try:
            self.result = call()
        except BaseException as exc:
            self.error = exc

    @property
    def hung(self) -> bool:
        return self.thread.is_alive()


def _released(engine: Engine, worker_id: int) -> bool:
    t = workers_table(sa.MetaData())
    with engine.connect() as conn:
        row = conn.execute(sa.select(t.c.expires_at).where(t.c.worker_id == worker_id)).one()
    return row.expires_at == 0


def test_close_with_the_row_locked_warns_and_returns(
    lease_engine: Engine, row_locker: Callable[[int], None], caplog: pytest.LogCaptureFixture
) -> None:
    lease = WorkerLease(lease_engine, ttl=TTL, max_worker_id=0).start()
    ids = Snowflake(worker_id=lease)
    ids()
    row_locker(lease.worker_id)
    closing = _Bounded(lease.close)
    assert not closing.hung, f"close() waited {BOUND_S} s for the locked row"
    assert closing.error is None
    assert "could not release worker id 0" in caplog.text
    assert "did not answer" in caplog.text
    assert lease.closed
    assert not lease.valid
    with pytest.raises(WorkerLeaseLostError, match="it was closed"):
        ids()


def test_a_release_left_waiting_goes_through_once_the_row_is_free(lease_engine: Engine) -> None:
    locker = sa.create_engine(lease_engine.url, poolclass=sa.pool.NullPool).connect()
    t = workers_table(sa.MetaData())
    lease = WorkerLease(lease_engine, ttl=TTL, max_worker_id=0).start()
    try:
        locker.execute(sa.select(t).where(t.c.worker_id == 0).with_for_update())
        assert not _Bounded(lease.close).hung
    finally:
        locker.rollback()
        locker.close()
    deadline = time.monotonic() + BOUND_S
    while not _released(lease_engine, 0):
        assert time.monotonic() < deadline, "the release never went through"
        time.sleep(0.1)


@pytest.mark.parametrize("renewal_waiting", [False, True], ids=["own-write", "behind-renewal"])
def test_a_clock_step_with_the_row_locked_raises_instead_of_hanging(
    lease_engine: Engine, row_locker: Callable[[int], None], renewal_waiting: bool
) -> None:
    # The clock steps 20 s forward (NTP): the generator must renew before it
    # mints past the mark. "behind-renewal": the background renewal already
    # waits on the row (under the lease's lock); "own-write": the renewal for
    # the step is the one that waits.
    offset = [0]
    clock = lambda: time.time_ns() + offset[0]  # noqa: E731
    lease = WorkerLease(lease_engine, ttl=TTL, max_worker_id=0, clock=clock, max_skew=120).start()
    try:
        ids = Snowflake(worker_id=lease)
        first = ids()
        row_locker(lease.worker_id)
        if renewal_waiting:
            time.sleep(TTL / 3 + 0.3)  # a renewal is due, and waits
        offset[0] = 20 * 1_000_000_000
        minting = _Bounded(ids)
        assert not minting.hung, f"the generator waited {BOUND_S} s for the locked row"
        assert isinstance(minting.error, WorkerLeaseLostError), (minting.result, first)
        assert "worker id 0" in str(minting.error)
    finally:
        offset[0] = 0
        assert not _Bounded(lease.close).hung
