"""A Snowflake whose clock does not advance raises after a bounded wait, never hangs.

Once a tick's sequence is used up (or the clock stepped back within
``max_backwards_ms``) a call waits for the clock to reach the tick it needs. A clock
that stands still (a test's frozen clock) never gets there: the call raises
``InvalidSnowflakeError`` after waiting the time a real clock needs plus 1 s (or four
ticks, if longer), hands out no id, and the generator mints on once the clock moves.

Most tests inject the wait: ``_pause`` advances a fake monotonic clock instead of
sleeping, so nothing depends on the machine's speed, and a call that would wait
forever fails after 600 fake seconds instead of hanging the suite.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import sqlalchemy as sa

from sqlalchemy_seqkeys import InvalidSnowflakeError, Snowflake, SnowflakeLayout, WorkerLease
from sqlalchemy_seqkeys import snowflake as snowflake_module

UTC = timezone.utc
#: 2027-01-15T08:00:00Z, the start of a tick in every layout used here
FIXED_NS = 1_800_000_000_000_000_000
#: a call still waiting after this much fake time waits forever: the test fails instead
FOREVER_S = 600.0


class FakeTime:
    """A monotonic clock that only ``pause`` moves: pauses take no real time."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.paused = 0.0
        self.on_pause: Callable[[float], None] | None = None

    def monotonic(self) -> float:
        return self.now

    def pause(self, seconds: float) -> None:
        assert seconds >= 0
        self.now += seconds
        self.paused += seconds
        if self.on_pause is not None:
            self.on_pause(self.paused)
        assert self.paused < FOREVER_S, "still waiting for a clock that does not advance"


@pytest.fixture
def fake_time(monkeypatch: pytest.MonkeyPatch) -> FakeTime:
    fake = FakeTime()
    monkeypatch.setattr(snowflake_module, "_pause", fake.pause)
    monkeypatch.setattr(snowflake_module, "_monotonic", fake.monotonic, raising=False)
    return fake


class Clock:
    """Nanoseconds since the Unix epoch, moved only by the test."""

    def __init__(self, ns: int = FIXED_NS) -> None:
        self.ns = ns

    def __call__(self) -> int:
        return self.ns


def _slow_layout() -> SnowflakeLayout:
    # ticks of half a second, 16 ids each: four ticks (2 s) are longer than 1 s
    return SnowflakeLayout(
        timestamp_bits=34,
        worker_bits=10,
        sequence_bits=4,
        epoch=datetime(2025, 1, 1, tzinfo=UTC),
        time_unit=timedelta(milliseconds=500),
    )


def test_a_clock_that_stands_still_raises_once_a_tick_is_used_up(fake_time: FakeTime) -> None:
    # the reviewer's case: js_safe (128 ids per 10 ms tick), a fixed clock
    clock = Clock()
    ids = Snowflake(worker_id=1, layout=SnowflakeLayout.js_safe(), clock=clock)
    first = [ids() for _ in range(128)]
    assert fake_time.paused == 0  # the tick's ids come without a wait
    with pytest.raises(InvalidSnowflakeError, match="clock does not advance") as info:
        ids()
    # it waited what a real clock needs (the 10 ms to the next tick) plus 1 s, not much more
    assert 1.0 + 0.01 <= fake_time.paused < 1.1, fake_time.paused
    message = str(info.value)
    assert "No id was handed out" in message
    assert "time.time_ns" in message  # what to do
    with pytest.raises(InvalidSnowflakeError, match="clock does not advance"):
        ids()  # the next call waits again, and raises again
    clock.ns += 10_000_000  # one tick on
    after = [ids() for _ in range(128)]
    assert ids.decode(after[0]).sequence == 0
    assert min(after) > max(first)
    assert len(set(first + after)) == 256


def test_with_ticks_longer_than_a_quarter_second_it_waits_four_ticks(fake_time: FakeTime) -> None:
    clock = Clock()
    ids = Snowflake(worker_id=2, layout=_slow_layout(), clock=clock)
    for _ in range(16):
        ids()
    with pytest.raises(InvalidSnowflakeError, match="clock does not advance"):
        ids()
    assert 0.5 + 2.0 <= fake_time.paused < 2.6, fake_time.paused


def test_a_clock_that_moves_within_the_bound_is_waited_for(fake_time: FakeTime) -> None:
    # the clock stands still for 0.9 s after the tick is used up, then moves on
    clock = Clock()
    ids = Snowflake(worker_id=3, layout=SnowflakeLayout.js_safe(), clock=clock)
    first = [ids() for _ in range(128)]

    def move(paused: float) -> None:
        if paused >= 0.9 and clock.ns == FIXED_NS:
            clock.ns += 10_000_000

    fake_time.on_pause = move
    value = ids()
    assert ids.decode(value).sequence == 0
    assert value > max(first)


def test_a_clock_stepped_back_that_stands_still_raises_after_the_step_and_a_second(
    fake_time: FakeTime,
) -> None:
    clock = Clock()
    ids = Snowflake(worker_id=4, clock=clock, max_backwards_ms=500)
    before = ids()
    clock.ns -= 300_000_000  # 300 ms back, within max_backwards_ms: waited out, if it moves
    with pytest.raises(InvalidSnowflakeError, match="clock does not advance"):
        ids()
    assert 0.3 + 1.0 <= fake_time.paused < 1.4, fake_time.paused
    clock.ns += 300_000_000  # back in the tick of ``before``, whose ids are not used up
    assert ids() == before + 1


def test_threads_waiting_on_a_clock_that_stands_still_all_raise(fake_time: FakeTime) -> None:
    clock = Clock()
    ids = Snowflake(worker_id=5, layout=SnowflakeLayout.js_safe(), clock=clock)
    first = [ids() for _ in range(128)]
    errors: list[BaseException] = []
    minted: list[int] = []

    def call() -> None:
        try:
            minted.append(ids())
        except BaseException as exc:  # collected, checked below
            errors.append(exc)

    threads = [threading.Thread(target=call) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not any(thread.is_alive() for thread in threads)
    assert minted == []
    assert len(errors) == 4
    assert all(isinstance(exc, InvalidSnowflakeError) for exc in errors), errors
    clock.ns += 10_000_000
    assert ids() > max(first)


def test_a_leased_generator_whose_clock_stands_still_raises(
    fake_time: FakeTime, tmp_path: Path
) -> None:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'leases.db'}")
    clock = Clock(time.time_ns() // 1_000_000 * 1_000_000)  # now: the lease checks it
    try:
        with WorkerLease(engine, clock=clock) as lease:
            ids = Snowflake(worker_id=lease)
            first = [ids() for _ in range(4096)]  # the default layout: 4,096 ids a millisecond
            with pytest.raises(InvalidSnowflakeError, match="clock does not advance"):
                ids()
            assert 1.0 <= fake_time.paused < 1.1, fake_time.paused
            clock.ns += 1_000_000
            assert ids() > max(first)
    finally:
        engine.dispose()


# -- real time --------------------------------------------------------------------


def test_the_reviewers_case_returns_in_real_time() -> None:
    # /tmp/rev_ids/p16.py: js_safe, a fixed clock, 129 ids in a thread. The call raises
    # after about a second; the bound below only keeps a hang from hanging the suite.
    ids = Snowflake(worker_id=6, layout=SnowflakeLayout.js_safe(), clock=lambda: FIXED_NS)
    got: list[int] = []
    errors: list[BaseException] = []

    def mint() -> None:
        try:
            for _ in range(129):
                got.append(ids())
        except BaseException as exc:  # checked below
            errors.append(exc)

    thread = threading.Thread(target=mint, daemon=True)
    began = time.monotonic()
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "the 129th call still waits for a clock that stands still"
    assert time.monotonic() - began >= 1.0
    assert len(got) == 128
    assert len(errors) == 1, errors
    assert isinstance(errors[0], InvalidSnowflakeError), errors


def test_under_asyncsession_the_wait_awaits_and_then_raises() -> None:
    # As a column default under AsyncSession (SQLAlchemy's greenlet) the wait hands the
    # loop back, as a wait for a clock that moves does; then the call raises.
    import asyncio

    from sqlalchemy.util import greenlet_spawn

    from tests._loopticker import BLOCKED_S, LoopTicker

    ids = Snowflake(worker_id=7, layout=SnowflakeLayout.js_safe(), clock=lambda: FIXED_NS)

    def mint() -> list[int]:
        return [ids() for _ in range(129)]

    async def main() -> tuple[BaseException | None, LoopTicker]:
        async with LoopTicker() as ticker:
            try:
                await asyncio.wait_for(greenlet_spawn(mint), 30)
            except InvalidSnowflakeError as exc:
                return exc, ticker
            except asyncio.TimeoutError:  # pragma: no cover - the hang this test catches
                return None, ticker
        return None, ticker  # pragma: no cover

    error, ticker = asyncio.run(main())
    assert isinstance(error, InvalidSnowflakeError), "no error: the call waited forever"
    assert ticker.max_late < BLOCKED_S, ticker
    assert ticker.ticks > 50, ticker  # the loop ran while the call waited
