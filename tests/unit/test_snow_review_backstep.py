"""A clock step back is measured in nanoseconds, not in whole ticks: a step of at most
max_backwards_ms is waited out whatever the tick's length, and a longer one is refused
with its own size. The wait never mints in a used tick with a sequence that may repeat."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone

import pytest

from sqlalchemy_seqkeys import ClockMovedBackwardsError, Snowflake, SnowflakeLayout

MS = 1_000_000
SECOND = 1000 * MS
UTC = timezone.utc
# a layout of this file's own (fixed worker ids share a sequence per layout in a process)
SECONDS = SnowflakeLayout(
    timestamp_bits=32,
    worker_bits=10,
    sequence_bits=11,
    epoch=datetime(2025, 1, 1, tzinfo=UTC),
    time_unit=timedelta(seconds=1),
)
SMALL_TICKS = SnowflakeLayout(
    timestamp_bits=32,
    worker_bits=10,
    sequence_bits=2,  # four ids a tick
    epoch=datetime(2025, 1, 2, tzinfo=UTC),
    time_unit=timedelta(seconds=1),
)
MILLIS = SnowflakeLayout(epoch=datetime(2025, 1, 3, tzinfo=UTC))
# the start of a whole second, and so of a tick of every layout here
BOUNDARY = int(datetime(2026, 1, 1, tzinfo=UTC).timestamp()) * SECOND


class Clock:
    def __init__(self, ns: int) -> None:
        self.ns = ns

    def __call__(self) -> int:
        return self.ns

    def later(self, delay: float, ns: int) -> threading.Timer:
        def move() -> None:
            self.ns = ns

        timer = threading.Timer(delay, move)
        timer.start()
        return timer


def _waited_out(ids: Snowflake, clock: Clock, back_to: int, forward_to: int) -> int:
    """Step the clock back to ``back_to``; an id once it is moved on to ``forward_to``."""
    clock.ns = back_to
    timer = clock.later(0.05, forward_to)
    try:
        return ids()
    finally:
        timer.join()


def test_a_step_shorter_than_the_limit_across_a_long_tick_is_waited_out() -> None:
    clock = Clock(BOUNDARY)  # the first instant of a tick
    ids = Snowflake(worker_id=901, layout=SECONDS, clock=clock, max_backwards_ms=500)
    before = [ids() for _ in range(5)]
    # 2 ms back, into the tick before: waited out (it was refused as a 1000 ms step)
    after = _waited_out(ids, clock, BOUNDARY - 2 * MS, BOUNDARY + MS)
    assert after > max(before)
    decoded = ids.decode(after)
    assert decoded.timestamp == ids.decode(before[0]).timestamp  # the same tick, on past them
    assert decoded.sequence == 5
    assert len({*before, after, ids()}) == 7


def test_a_step_longer_than_the_limit_is_refused_with_its_own_size() -> None:
    clock = Clock(BOUNDARY)
    ids = Snowflake(worker_id=902, layout=SECONDS, clock=clock, max_backwards_ms=500)
    before = ids()
    clock.ns = BOUNDARY - 600 * MS
    with pytest.raises(ClockMovedBackwardsError) as raised:
        ids()
    assert raised.value.step_ms == pytest.approx(600)
    assert "600.000 ms" in str(raised.value)
    clock.ns = BOUNDARY + MS
    assert ids() > before  # nothing minted meanwhile


def test_raise_mode_reports_the_step_not_the_tick() -> None:
    clock = Clock(BOUNDARY)
    ids = Snowflake(worker_id=903, layout=SECONDS, clock=clock, on_clock_backwards="raise")
    ids()
    clock.ns = BOUNDARY - 2 * MS
    with pytest.raises(ClockMovedBackwardsError) as raised:
        ids()
    assert raised.value.step_ms == pytest.approx(2)
    assert "2.000 ms" in str(raised.value)


def test_a_used_up_tick_is_not_minted_in_again_after_the_wait() -> None:
    clock = Clock(BOUNDARY)
    ids = Snowflake(worker_id=904, layout=SMALL_TICKS, clock=clock, max_backwards_ms=500)
    used = [ids() for _ in range(4)]  # the tick's four ids
    # back 2 ms: waited out; the tick is used up, so the id waits for the next one
    after = _waited_out(ids, clock, BOUNDARY - 2 * MS, BOUNDARY + SECOND)
    assert after > max(used)
    assert ids.decode(after).timestamp == ids.decode(used[0]).timestamp + timedelta(seconds=1)
    assert ids.decode(after).sequence == 0


def test_a_sub_millisecond_limit_waits_out_a_smaller_step_of_a_millisecond_tick() -> None:
    clock = Clock(BOUNDARY)
    ids = Snowflake(worker_id=905, layout=MILLIS, clock=clock, max_backwards_ms=0.5)
    before = ids()
    after = _waited_out(ids, clock, BOUNDARY - MS // 5, BOUNDARY)  # 0.2 ms back
    assert after > before
    assert ids.decode(after).sequence == 1
    clock.ns = BOUNDARY - 4 * MS // 5  # 0.8 ms back: beyond the limit
    with pytest.raises(ClockMovedBackwardsError) as raised:
        ids()
    assert raised.value.step_ms == pytest.approx(0.8)


def test_a_zero_limit_still_refuses_every_step_back() -> None:
    clock = Clock(BOUNDARY)
    ids = Snowflake(worker_id=906, layout=SECONDS, clock=clock, max_backwards_ms=0)
    ids()
    clock.ns = BOUNDARY - 1
    with pytest.raises(ClockMovedBackwardsError) as raised:
        ids()
    assert raised.value.step_ms == pytest.approx(1e-6)
