"""Rebinding a Snowflake between a fixed worker id and a lease holding that same worker id
(both ways, frozen clock and threads): no id is minted twice across the switch; a generator
of this process that takes a worker id over starts after the ticks another one minted with it."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from sqlalchemy_seqkeys import Snowflake, WorkerLease
from tests._rebinding import mint_while_rebinding


class FrozenClock:
    """Nanoseconds since the Unix epoch: now (the lease checks it against the database's
    clock), then still until the test moves it."""

    def __init__(self) -> None:
        self.ns = time.time_ns() // 1_000_000 * 1_000_000  # the start of a millisecond

    def __call__(self) -> int:
        return self.ns

    def advance_ms(self, ms: int) -> None:
        self.ns += ms * 1_000_000


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[sa.Engine]:
    """A fresh SQLite file: its lease table hands out worker id 0 first."""
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'leases.db'}")
    yield engine
    engine.dispose()


def _next_in_a_thread(ids: Snowflake, clock: FrozenClock) -> int:
    """The next id, which must wait for the frozen clock's next tick: it does not come
    while the clock stands still, and comes once it moves."""
    out: list[int] = []
    waiting = threading.Thread(target=lambda: out.append(ids()))
    waiting.start()
    waiting.join(0.2)
    assert waiting.is_alive(), "minted in a tick the worker id already used"
    clock.advance_ms(1)
    waiting.join(5)
    assert out, "still waiting after the clock moved"
    return out[0]


def test_fixed_then_the_lease_holding_that_worker_id(engine: sa.Engine) -> None:
    clock = FrozenClock()
    ids = Snowflake(worker_id=0, clock=clock)
    first = [ids() for _ in range(3)]
    with WorkerLease(engine, clock=clock) as lease:
        assert lease.worker_id == 0
        ids.bind(lease)
        later = _next_in_a_thread(ids, clock)
        later_ones = [later, ids(), ids()]
    assert not set(first) & set(later_ones)
    assert ids.decode(later).worker_id == 0
    assert ids.decode(later).timestamp > ids.decode(first[-1]).timestamp


def test_the_lease_then_its_worker_id_fixed(engine: sa.Engine) -> None:
    clock = FrozenClock()
    ids = Snowflake(clock=clock)
    with WorkerLease(engine, clock=clock) as lease:
        ids.bind(lease)
        first = [ids() for _ in range(3)]
        ids.bind(lease.worker_id)
        later = _next_in_a_thread(ids, clock)
        later_ones = [later, ids(), ids()]
    assert not set(first) & set(later_ones)
    assert ids.lease is None
    assert ids.decode(later).timestamp > ids.decode(first[-1]).timestamp


def test_back_and_forth_in_one_tick(engine: sa.Engine) -> None:
    # fixed 0 -> lease (0) -> fixed 0 -> lease: each binding waits past the last tick
    clock = FrozenClock()
    ids = Snowflake(worker_id=0, clock=clock)
    minted = [ids()]
    with WorkerLease(engine, clock=clock) as lease:
        for target in (lease, 0, lease):
            ids.bind(target)  # type: ignore[arg-type]
            minted += [_next_in_a_thread(ids, clock), ids()]
    assert len(set(minted)) == len(minted) == 7


def test_another_generator_takes_the_worker_id_over(engine: sa.Engine) -> None:
    # One generator gives worker id 0 up; another of this process, bound to a lease
    # holding 0, starts after the first one's ticks.
    clock = FrozenClock()
    before = Snowflake(worker_id=0, clock=clock)
    first = [before() for _ in range(3)]
    before.bind(5)
    assert before.decode(before()).worker_id == 5
    after = Snowflake(clock=clock)
    with WorkerLease(engine, clock=clock) as lease:
        after.bind(lease)
        later = _next_in_a_thread(after, clock)
    assert later not in first
    assert after.decode(later).timestamp > after.decode(first[-1]).timestamp


def test_a_generator_joining_a_lease_already_minting_waits_past_its_own_ticks(
    engine: sa.Engine,
) -> None:
    # A lease's sequence is shared: a generator that joins it from fixed id 0 moves the
    # shared sequence past the ticks it minted with 0 (one tick, here the current one).
    clock = FrozenClock()
    with WorkerLease(engine, clock=clock) as lease:
        leased = Snowflake(worker_id=lease, clock=clock)
        ids = Snowflake(worker_id=0, clock=clock)
        fixed = [ids() for _ in range(3)]
        ids.bind(lease)
        later = _next_in_a_thread(leased, clock)
        both = [later, ids(), leased()]
    assert not set(fixed) & set(both)
    assert len(set(both)) == 3


@pytest.mark.parametrize("lock_free", [True, False], ids=["lock-free", "locked"])
def test_binding_to_the_lease_and_back_while_threads_mint(
    engine: sa.Engine, lock_free: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The real clock: threads mint without pause while the generator switches between
    # fixed worker id 0 and the lease holding worker id 0. No id comes out twice.
    from sqlalchemy_seqkeys import snowflake

    monkeypatch.setattr(snowflake, "_LOCK_FREE", lock_free)
    ids = Snowflake(worker_id=0)
    with WorkerLease(engine) as lease:
        assert lease.worker_id == 0
        bindings = [lease if i % 2 == 0 else 0 for i in range(60)]
        every, errors = mint_while_rebinding(ids, bindings, threads=3, pause_s=0.001)
    assert not errors, errors
    assert len(set(every)) == len(every)
    assert {ids.decode(v).worker_id for v in every} == {0}


def test_a_takeover_through_another_clock_function_starts_after_the_ticks(
    engine: sa.Engine,
) -> None:
    # Every clock reads Unix time: one read through another function (the lease's
    # clock=, a lambda of the application's) is the same time, and the ticks minted
    # through the first must carry over (they did not: 1,000 repeated ids)
    clock = FrozenClock()
    ids = Snowflake(worker_id=0, clock=clock)
    first = [ids() for _ in range(3)]
    with WorkerLease(engine, clock=lambda: clock()) as lease:
        assert lease.worker_id == 0
        ids.bind(lease)
        after = _next_in_a_thread(ids, clock)
    assert after > max(first)
    other = Snowflake(clock=lambda: clock())  # another generator, the same worker id
    ids.bind(5)
    other.bind(0)
    assert _next_in_a_thread(other, clock) > after
