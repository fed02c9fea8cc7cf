"""Snowflake ids: frozen-clock vectors, tick edges, exhaustion, clock steps, threads, fork
(os.fork and libc fork), rotation, bad arguments."""

from __future__ import annotations

import ctypes
import functools
import os
import sys
import threading
import time
from datetime import datetime, timedelta, timezone

import pytest

from benchmarks.snowflake import ReferenceSnowflake
from sqlalchemy_seqkeys import (
    ClockBackwardsMode,
    ClockMovedBackwardsError,
    ForkedWorkerError,
    InvalidSnowflakeError,
    NoWorkerIdError,
    Snowflake,
    SnowflakeLayout,
    WorkerIdNotBoundError,
    rotate_digits,
    unrotate_digits,
)
from tests._helpers import in_forked_child, in_threads
from tests._rebinding import mint_while_rebinding

UTC = timezone.utc
EPOCH_MS = 1288834974657
# 2024-01-02T03:04:05.678Z
NOW_MS = 1_704_164_645_678


class FakeClock:
    """Nanoseconds since the Unix epoch, moved by the test."""

    def __init__(self, ms: int) -> None:
        self.ns = ms * 1_000_000

    def __call__(self) -> int:
        return self.ns

    def advance_ms(self, ms: float) -> None:
        self.ns += int(ms * 1_000_000)


def test_frozen_clock_vectors_and_decode() -> None:
    clock = FakeClock(NOW_MS)
    ids = Snowflake(worker_id=113, clock=clock)
    first, second = ids(), ids()
    ticks = NOW_MS - EPOCH_MS
    assert first == (ticks << 22) | (113 << 12) | 0
    assert first == 1742018900482527232
    assert second == first + 1
    decoded = ids.decode(second)
    assert decoded.timestamp == datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    assert decoded.worker_id == 113
    assert decoded.sequence == 1
    assert SnowflakeLayout().worker_from(datacenter=3, machine=17) == 113


def test_same_layout_as_the_reference_code() -> None:
    """Worker 113 is datacenter 3, machine 17 in the reference's 5 + 5 bits."""
    reference = ReferenceSnowflake(datacenter_id=3, worker_id=17)
    reference.time_gen = lambda: NOW_MS  # type: ignore[method-assign]
    ours = Snowflake(worker_id=113, clock=FakeClock(NOW_MS))
    assert [reference.next_id() for _ in range(5)] == [ours() for _ in range(5)]


def test_sequence_exhaustion_waits_for_the_next_tick() -> None:
    clock = FakeClock(NOW_MS)
    ids = Snowflake(worker_id=1, clock=clock)
    first_tick = [ids() for _ in range(4096)]
    assert [ids.decode(v).sequence for v in first_tick] == list(range(4096))
    timer = threading.Timer(0.05, clock.advance_ms, args=(1,))
    timer.start()
    value = ids()  # the 4097th in one tick: waits until the clock moves
    timer.join()
    assert ids.decode(value).sequence == 0
    assert ids.decode(value).timestamp == ids.decode(first_tick[0]).timestamp + timedelta(
        milliseconds=1
    )
    assert value > first_tick[-1]


def test_clock_step_back_within_the_limit_is_waited_out() -> None:
    clock = FakeClock(NOW_MS)
    ids = Snowflake(worker_id=1, clock=clock, max_backwards_ms=50)
    before = ids()
    clock.advance_ms(-20)
    timer = threading.Timer(0.05, clock.advance_ms, args=(25,))
    timer.start()
    after = ids()  # waits until the clock is back past the last tick
    timer.join()
    assert after > before


def test_clock_step_back_beyond_the_limit_raises_with_its_size() -> None:
    clock = FakeClock(NOW_MS)
    ids = Snowflake(worker_id=1, clock=clock, max_backwards_ms=50)
    before = ids()
    clock.advance_ms(-2000)
    with pytest.raises(ClockMovedBackwardsError) as info:
        ids()
    assert info.value.step_ms == 2000
    assert "2000.000 ms" in str(info.value)
    clock.advance_ms(2001)
    assert ids() > before  # nothing was minted twice meanwhile
    strict = Snowflake(worker_id=2, clock=clock, on_clock_backwards="raise")
    strict()
    clock.advance_ms(-1)
    with pytest.raises(ClockMovedBackwardsError):
        strict()


def test_threads_mint_unique_ids_each_thread_increasing() -> None:
    ids = Snowflake(worker_id=5)
    per_thread = 100_000
    results = in_threads(ids, 8, per_thread)
    every = [v for out in results for v in out]
    assert len(set(every)) == 8 * per_thread
    for out in results:
        assert out == sorted(out)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork() is POSIX-only")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # fork() with threads alive
def test_fork_with_a_fixed_worker_id_raises_in_the_child() -> None:
    ids = Snowflake(worker_id=7)
    ids()
    message = in_forked_child(lambda: f"minted {ids()}")
    assert message.startswith(ForkedWorkerError.__name__)
    assert "forked from the one that owns worker id 7" in message
    assert ids() > 0  # the parent goes on


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork() is POSIX-only")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # fork() with threads alive
def test_fork_with_after_fork_takes_a_new_worker_id() -> None:
    ids = Snowflake(worker_id=7, after_fork=lambda: 8)
    parent_before = [ids() for _ in range(100)]
    output = in_forked_child(lambda: " ".join(str(ids()) for _ in range(1000)))
    child_ids = [int(v) for v in output.split()]
    parent_after = [ids() for _ in range(1000)]
    assert len(child_ids) == 1000
    assert {ids.decode(v).worker_id for v in child_ids} == {8}
    assert not set(child_ids) & set(parent_before + parent_after)


SOURCE_VECTORS = [
    (561632371724517376, 566163237172451737),
    (561632371728711680, 506163237172871168),
    (561632371728711681, 516163237172871168),
    (561632371732905984, 546163237173290598),
    (561632371737100288, 586163237173710028),
]


@pytest.mark.parametrize(("original", "rotated"), SOURCE_VECTORS)
def test_rotate_digits_source_vectors(original: int, rotated: int) -> None:
    assert rotate_digits(original) == rotated
    assert unrotate_digits(rotated) == original


def test_rotate_more_digits_round_trips() -> None:
    value = 561632371724517376
    assert rotate_digits(value, 2) == 576616323717245173
    assert rotate_digits(value, 3) == 537661632371724517
    for digits in (1, 2, 3):
        assert unrotate_digits(rotate_digits(value, digits), digits) == value


def test_rotation_spreads_consecutive_ids_over_ten_leading_prefixes() -> None:
    ids = Snowflake(worker_id=1, transform=rotate_digits)
    values = [ids() for _ in range(1000)]
    assert len({str(v)[:2] for v in values}) == 10
    assert all(ids.decode(v).worker_id == 1 for v in values)
    two = Snowflake(worker_id=1, transform=functools.partial(rotate_digits, digits=2))
    assert two.decode(two()).worker_id == 1


@pytest.mark.parametrize(
    ("value", "digits", "message"),
    [
        (-5, 1, "non-negative int"),
        (7, 1, "needs at least 2"),
        (123, 3, "needs at least 4"),
        (9_223_372_036_854_775_807, 1, r"past 2\*\*63 - 1"),
        (12345, 0, "digits must be an int >= 1"),
    ],
)
def test_rotation_bad_input(value: int, digits: int, message: str) -> None:
    with pytest.raises(InvalidSnowflakeError, match=message):
        rotate_digits(value, digits)


def test_layout_validation() -> None:
    assert SnowflakeLayout().exhausted_at == datetime(2080, 7, 10, 17, 30, 30, 209000, tzinfo=UTC)
    with pytest.raises(InvalidSnowflakeError, match="needs 65 bits"):
        SnowflakeLayout(worker_bits=12)
    with pytest.raises(InvalidSnowflakeError, match="must be a timezone-aware datetime"):
        SnowflakeLayout(epoch=datetime(2020, 1, 1))
    with pytest.raises(InvalidSnowflakeError, match="ran out at"):
        SnowflakeLayout(timestamp_bits=35, allow_short_life=True)  # 2**35 ms from 2010: 2011
    short = SnowflakeLayout(
        timestamp_bits=35, epoch=datetime(2026, 1, 1, tzinfo=UTC), allow_short_life=True
    )  # short, not run out: allowed (ShortLifeWarning without the flag: tests/unit/test_layouts.py)
    assert short.exhausted_at.year == 2027
    with pytest.raises(InvalidSnowflakeError, match="worker_id must be an int from 0 to 1023"):
        Snowflake(worker_id=1024)
    with pytest.raises(InvalidSnowflakeError, match="on_clock_backwards; use one of 'wait'"):
        Snowflake(worker_id=1, on_clock_backwards="ignore")


def test_on_clock_backwards_takes_the_enum_or_its_string() -> None:
    for mode in (ClockBackwardsMode.RAISE, "raise"):
        ids = Snowflake(worker_id=1, on_clock_backwards=mode)
        assert ids.on_clock_backwards is ClockBackwardsMode.RAISE
        assert ids.on_clock_backwards == "raise"  # a str enum: old comparisons hold
    assert Snowflake(worker_id=1).on_clock_backwards is ClockBackwardsMode.WAIT


def test_custom_transform_cannot_be_decoded() -> None:
    ids = Snowflake(worker_id=1, transform=lambda v: v ^ 1)
    with pytest.raises(InvalidSnowflakeError, match="cannot undo a custom transform"):
        ids.decode(ids())


def test_same_ids_as_the_reference_across_tick_edges() -> None:
    # The fast path tells ticks apart by comparing nanoseconds with the tick's
    # edges, not by dividing: the edges must agree with the reference's division.
    clock = FakeClock(NOW_MS)
    reference = ReferenceSnowflake(datacenter_id=3, worker_id=17)
    reference.time_gen = lambda: clock.ns // 1_000_000  # type: ignore[method-assign]
    ours = Snowflake(worker_id=113, clock=clock)
    steps_ns = [0, 1, 999_998, 1, 1, 0, 500_000, 499_999, 1, 3_000_000, 999_999, 1]
    for step in steps_ns * 50:
        clock.ns += step
        assert ours() == reference.next_id()


def test_a_forked_child_sees_a_new_process_token() -> None:
    # What every mint compares, in one load: the fork registry's marker word.
    from sqlalchemy_seqkeys import _fork

    if sys.platform.startswith("linux"):
        assert isinstance(_fork.marker_word, memoryview)  # the MADV_WIPEONFORK word
    token = _fork.process_token()
    assert _fork.marker_word[0] == _fork.process_token() == token
    libc_fork = ctypes.PyDLL(None).fork
    read_fd, write_fd = os.pipe()
    pid = libc_fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            seen = _fork.marker_word[0]
            os.write(write_fd, f"{seen} {_fork.process_token()} {_fork.marker_word[0]}".encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    seen, child_token, child_marker = os.read(read_fd, 100).decode().split()
    os.close(read_fd)
    os.waitpid(pid, 0)
    assert seen == "0"  # the kernel handed the child a zeroed word (or the pid differs)
    assert int(child_token) == int(child_marker) != token
    assert _fork.process_token() == token  # the parent's is untouched


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"worker_id": "3"}, r"worker_id must be an int from 0 to 1023, not '3' \(str\)"),
        ({"worker_id": 3.0}, r"not 3\.0 \(float\)"),
        ({"worker_id": True}, r"not True \(bool\)"),
        ({"worker_id": 1, "max_backwards_ms": -1}, "max_backwards_ms must be a finite"),
        ({"worker_id": 1, "max_backwards_ms": float("inf")}, "max_backwards_ms must be a finite"),
        ({"worker_id": 1, "layout": "classic"}, "layout must be a SnowflakeLayout"),
        ({"worker_id": 1, "clock": 5}, "clock must be callable"),
        ({"worker_id": 1, "transform": "rotate"}, "transform must be callable"),
        ({"worker_id": 1, "after_fork": 8}, "after_fork must be callable"),
    ],
)
def test_bad_arguments_are_refused_with_what_to_do(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidSnowflakeError, match=message):
        Snowflake(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("lock_free", [True, False], ids=["lock-free", "locked"])
def test_threads_racing_through_used_up_ticks_mint_unique_ids(
    lock_free: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Eight ids a tick and eight threads: most calls find the tick used up or
    # just replaced by another thread, the races the lock-free path must survive
    # (and the locked one, which free-threaded Python takes).
    from sqlalchemy_seqkeys import snowflake

    monkeypatch.setattr(snowflake, "_LOCK_FREE", lock_free)
    layout = SnowflakeLayout(
        timestamp_bits=41, worker_bits=10, sequence_bits=3, allow_short_life=True
    )
    ids = Snowflake(worker_id=5, layout=layout)
    results = in_threads(ids, 8, 600)
    every = [v for out in results for v in out]
    assert len(set(every)) == len(every) == 8 * 600
    for out in results:
        assert out == sorted(out)
    assert max(ids.decode(v).sequence for v in every) == 7


# -- declared first, bound later ----------------------------------------------------


def test_an_unbound_generator_says_how_to_bind_it() -> None:
    ids = Snowflake()  # declared with the models, before any worker id exists
    assert repr(ids) == "Snowflake(unbound)"
    assert ids.worker_id is None
    for mint in (ids, ids.next_id):
        with pytest.raises(WorkerIdNotBoundError, match=r"ids\.bind\(lease\).*AsyncWorkerLease"):
            mint()
    with pytest.raises(InvalidSnowflakeError, match="worker_id must be an int"):
        ids.bind("7")  # type: ignore[arg-type]
    with pytest.raises(NoWorkerIdError):  # the common base of the two meanings
        ids()  # a refused bind changed nothing
    ids.bind(7)
    assert ids.decode(ids()).worker_id == 7
    assert repr(ids) == "Snowflake(worker_id=7)"


def test_rebinding_never_mints_an_id_twice() -> None:
    # One frozen tick: back on a worker id it used, the generator waits for the
    # next tick instead of starting that tick's sequence again.
    clock = FakeClock(NOW_MS)
    ids = Snowflake(worker_id=7, clock=clock, transform=rotate_digits)
    minted = [ids() for _ in range(10)]
    ids.bind(7)  # the same id: the same sequence goes on
    minted.append(ids())
    ids.bind(8)
    minted += [ids() for _ in range(3)]
    ids.bind(7)
    later: list[int] = []
    waiting = threading.Thread(target=lambda: later.append(ids()))
    waiting.start()
    waiting.join(0.2)
    assert waiting.is_alive()  # the tick worker id 7 used is not minted again
    clock.advance_ms(1)
    waiting.join(5)
    minted += later
    assert len(set(minted)) == len(minted) == 15
    assert ids.decode(later[0]).timestamp > ids.decode(minted[0]).timestamp
    assert [ids.decode(v).worker_id for v in minted] == [7] * 11 + [8] * 3 + [7]


@pytest.mark.parametrize("lock_free", [True, False], ids=["lock-free", "locked"])
def test_rebinding_while_threads_mint(lock_free: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # Threads mint without pause while the generator switches back and forth
    # between two worker ids: no call fails, no id comes out twice.
    from sqlalchemy_seqkeys import snowflake

    monkeypatch.setattr(snowflake, "_LOCK_FREE", lock_free)
    # worker ids no fake-clock generator of this process uses (benchmarks.hotspots mints
    # 2024's ids with workers 1 to 4): the ticks a binding leaves carry over to them
    ids = Snowflake(worker_id=801)
    bindings = [802 if i % 2 == 0 else 801 for i in range(100)]
    every, errors = mint_while_rebinding(ids, bindings, threads=4, pause_s=0.0005)
    assert not errors, errors
    assert len(set(every)) == len(every)
    assert {ids.decode(v).worker_id for v in every} == {801, 802}


# -- a used-up tick, an epoch ahead of the clock, a transform past the layout --------


class CountingClock(FakeClock):
    """A FakeClock that counts its reads."""

    def __init__(self, ms: int) -> None:
        super().__init__(ms)
        self.reads = 0

    def __call__(self) -> int:
        self.reads += 1
        return self.ns


def test_a_used_up_tick_is_waited_out_not_spun() -> None:
    # The clock stands still for 0.2 s after the tick's 4,096 ids: the call sleeps
    # until the tick's end and reads the clock again, at most once a millisecond,
    # instead of reading it in a loop under the lock (thousands of reads).
    clock = CountingClock(NOW_MS)
    # a worker id no other test of this process rebinds: the process carries the
    # ticks minted with a worker id over to its next binding, real clock or not
    ids = Snowflake(worker_id=901, clock=clock)
    first_tick = [ids() for _ in range(4096)]
    reads = clock.reads
    timer = threading.Timer(0.2, clock.advance_ms, args=(1,))
    timer.start()
    value = ids()
    timer.join()
    assert ids.decode(value).sequence == 0
    assert value > first_tick[-1]
    assert clock.reads - reads < 400, clock.reads - reads


def test_a_used_up_tick_lets_the_event_loop_run() -> None:
    # Ticks of half a second: the call after a tick's 16 ids waits almost all of it.
    # As a column default under AsyncSession (SQLAlchemy's greenlet) it awaits.
    import asyncio

    from sqlalchemy.util import greenlet_spawn

    from tests._loopticker import BLOCKED_S, LoopTicker

    layout = SnowflakeLayout(
        timestamp_bits=34,
        worker_bits=10,
        sequence_bits=4,
        epoch=datetime(2025, 1, 1, tzinfo=UTC),
        time_unit=timedelta(milliseconds=500),
    )
    tick0 = layout.epoch + layout.time_unit * 3_000_000  # some tick's first instant
    base = int(tick0.timestamp()) * 1_000_000_000 + tick0.microsecond * 1000
    started: list[int] = []

    def clock() -> int:  # that tick starts at the first reading
        if not started:
            started.append(time.monotonic_ns())
        return base + time.monotonic_ns() - started[0]

    ids = Snowflake(worker_id=3, layout=layout, clock=clock)

    async def main() -> tuple[list[int], LoopTicker, float]:
        async with LoopTicker() as ticker:
            began = time.monotonic()
            out = await greenlet_spawn(lambda: [ids() for _ in range(17)])
            took = time.monotonic() - began
            await asyncio.sleep(0.02)  # the ticker wakes once more: a stall shows now
        return out, ticker, took

    out, ticker, took = asyncio.run(main())
    assert len(set(out)) == 17
    assert ids.decode(out[-1]).sequence == 0
    assert took > 0.4  # the rest of the tick was waited out
    assert ticker.max_late < BLOCKED_S, ticker
    assert ticker.ticks > 20, ticker  # it ran while the tick was waited out


def test_an_epoch_ahead_of_the_clock_says_so() -> None:
    layout = SnowflakeLayout.js_safe(epoch=datetime.now(UTC) + timedelta(days=30))
    ids = Snowflake(worker_id=1, layout=layout)
    with pytest.raises(InvalidSnowflakeError, match=r"epoch .* is ahead of the clock") as info:
        ids()
    assert not isinstance(info.value, ClockMovedBackwardsError)
    assert "max_backwards_ms" not in str(info.value)


def test_a_transform_past_a_js_safe_layout_raises() -> None:
    # rotate_digits moves a late 53-bit id's last digit up front: past 2**53 - 1
    layout = SnowflakeLayout.js_safe()
    tick = layout.tick_limit - 3
    start_ms = int((layout.epoch + layout.time_unit * tick).timestamp() * 1000)
    ids = Snowflake(
        worker_id=255,
        layout=layout,
        transform=rotate_digits,
        clock=FakeClock(start_ms),
    )
    with pytest.raises(InvalidSnowflakeError, match=r"past the layout's largest id"):
        [ids() for _ in range(128)]
    early = Snowflake(worker_id=255, layout=layout, transform=rotate_digits)
    assert 0 < early() <= 2**53 - 1  # today's ids rotate within 53 bits


def test_reverse_bits_is_refused_with_a_layout_narrower_than_63_bits() -> None:
    from sqlalchemy_seqkeys import reverse_bits

    with pytest.raises(InvalidSnowflakeError, match="reverse_bits"):
        Snowflake(worker_id=1, layout=SnowflakeLayout.js_safe(), transform=reverse_bits)
    Snowflake(worker_id=1, transform=reverse_bits)  # 63 bits: fine
