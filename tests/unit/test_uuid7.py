"""new_uuid7: CPython 3.14's uuid.uuid7() value for value while the clock does not step back,
RFC 9562's held timestamp while it is behind, threads, fork, uuid7_timestamp."""

from __future__ import annotations

import hashlib
import itertools
import os
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sqlalchemy_seqkeys import InvalidGuidError, TimestampOutOfRangeError
from sqlalchemy_seqkeys import comb as comb_module
from sqlalchemy_seqkeys.uuid7 import _Uuid7Generator, new_uuid7, uuid7_timestamp
from tests._helpers import in_forked_child, in_threads

UTC = timezone.utc
T0_MS = 1_735_689_600_000  # 2025-01-01T00:00:00Z


class ByteStream:
    """A deterministic stream of "random" bytes: read(n) returns the next n of them."""

    def __init__(self, seed: bytes) -> None:
        self._data = hashlib.shake_256(seed).digest(1 << 16)
        self._pos = 0

    def read(self, n: int) -> bytes:
        out = self._data[self._pos : self._pos + n]
        assert len(out) == n, "the test stream ran out"
        self._pos += n
        return out


class CPythonUuid7:
    """CPython 3.14's Lib/uuid.py uuid7(), transcribed with its clock and os.urandom injected.

    Transcribed from CPython's source (``_uuid7_get_counter_and_tail`` and
    ``uuid7``); only ``time.time_ns`` -> ``clock_ns`` and ``os.urandom`` ->
    ``urandom`` differ, and the two module globals are attributes.
    """

    def __init__(self, clock_ns: Callable[[], int], urandom: Callable[[int], bytes]) -> None:
        self.clock_ns = clock_ns
        self.urandom = urandom
        self._last_timestamp_v7: int | None = None
        self._last_counter_v7 = 0  # 42-bit counter

    #: how far past the last value's millisecond a clock behind it puts the next value
    behind_step = 1

    def _uuid7_get_counter_and_tail(self) -> tuple[int, int]:
        rand = int.from_bytes(self.urandom(10), "big")
        # 42-bit counter with MSB set to 0
        counter = (rand >> 32) & 0x1FF_FFFF_FFFF
        # 32-bit random data
        tail = rand & 0xFFFF_FFFF
        return counter, tail

    def uuid7(self) -> uuid.UUID:
        nanoseconds = self.clock_ns()
        timestamp_ms = nanoseconds // 1_000_000

        if self._last_timestamp_v7 is None or timestamp_ms > self._last_timestamp_v7:
            counter, tail = self._uuid7_get_counter_and_tail()
        else:
            if timestamp_ms < self._last_timestamp_v7:
                timestamp_ms = self._last_timestamp_v7 + self.behind_step
            # advance the 42-bit counter
            counter = self._last_counter_v7 + 1
            if counter > 0x3FF_FFFF_FFFF:
                # advance the 48-bit timestamp
                timestamp_ms += 1
                counter, tail = self._uuid7_get_counter_and_tail()
            else:
                # 32-bit random data
                tail = int.from_bytes(self.urandom(4), "big")

        unix_ts_ms = timestamp_ms & 0xFFFF_FFFF_FFFF
        counter_msbs = counter >> 30
        # keep 12 counter's MSBs and clear variant bits
        counter_hi = counter_msbs & 0x0FFF
        # keep 30 counter's LSBs and clear version bits
        counter_lo = counter & 0x3FFF_FFFF
        # ensure that the tail is always a 32-bit integer
        tail &= 0xFFFF_FFFF

        int_uuid_7 = unix_ts_ms << 80
        int_uuid_7 |= counter_hi << 64
        int_uuid_7 |= counter_lo << 32
        int_uuid_7 |= tail
        # by construction, the variant and version bits are already cleared
        int_uuid_7 |= (7 << 76) | (0x8000 << 48)  # _RFC_4122_VERSION_7_FLAGS
        res = uuid.UUID(int=int_uuid_7)

        # defer global update until all computations are done
        self._last_timestamp_v7 = timestamp_ms
        self._last_counter_v7 = counter
        return res


class HeldUuid7(CPythonUuid7):
    """CPython's uuid7() with RFC 9562 section 6.2's rule for a clock behind the last value.

    The one difference: while the clock reads an earlier millisecond than the
    last value's, the value keeps that millisecond and its counter goes up by
    one (CPython moves it 1 ms further ahead each time, python/cpython#138862).
    Only a counter past 2**42 - 1 moves the timestamp on, by 1 ms.
    """

    behind_step = 0


def clock_of(readings_ms: list[float]) -> Callable[[], int]:
    it = iter(readings_ms)
    return lambda: int(next(it) * 1_000_000)


# Clock readings (ms after T0) for one long run: fresh milliseconds, runs of
# values in one millisecond (several ms long, at sub-ms readings), a clock
# that steps back by 5 ms and stays behind for a while, then catches up.
READINGS = (
    [0, 0, 0.3, 0.999, 1, 1.5, 7, 7, 7, 7, 8]
    + [3, 3, 2.9, 4, 5, 6, 7, 8, 9, 10, 10.2, 11, 12, 13, 14]  # 5 ms back, behind for 12
    + [20 + i / 10 for i in range(40)]  # 40 values over 4 ms
    + [30, 30, 29, 31, 40]
)


def both(
    readings: list[float], seed: bytes = b"vectors", reference_class: type[CPythonUuid7] = HeldUuid7
) -> tuple[_Uuid7Generator, CPythonUuid7]:
    ms = [T0_MS + r for r in readings]
    ours = _Uuid7Generator(clock_ns=clock_of(ms), randbytes=ByteStream(seed).read, block=64)
    reference = reference_class(clock_of(ms), ByteStream(seed).read)
    return ours, reference


def stamp(u: uuid.UUID) -> int:
    return u.int >> 80


def ms_of(reading: float) -> int:
    """The millisecond clock_of gives for a reading (ms after T0)."""
    return int((T0_MS + reading) * 1_000_000) // 1_000_000


def test_values_equal_cpython_314_while_the_clock_does_not_step_back() -> None:
    readings = [r for i, r in enumerate(READINGS) if r >= max(READINGS[: i + 1])]
    ours, reference = both(readings, reference_class=CPythonUuid7)
    got = [ours.mint() for _ in readings]
    assert got == [reference.uuid7() for _ in readings]
    assert any(a == b for a, b in itertools.pairwise(map(stamp, got)))  # same-ms runs
    assert got == sorted(got)


def test_values_follow_rfc9562_while_the_clock_is_behind() -> None:
    ours, reference = both(READINGS)
    got = [ours.mint() for _ in READINGS]
    assert got == [reference.uuid7() for _ in READINGS]
    stamps = list(map(stamp, got))
    # the clock read T0+3 after T0+8: the values keep T0+8 (CPython's rule gave
    # T0+9, T0+10, ...) until the clock passes it at T0+9
    assert stamps[10:19] == [T0_MS + 8] * 9
    assert stamps[19] == T0_MS + 9
    assert got == sorted(got)
    assert len(set(got)) == len(got)


@pytest.mark.parametrize("block", [10, 14, 64, 4096])
def test_any_block_size_consumes_the_stream_like_cpython(block: int) -> None:
    ms = [T0_MS + r for r in READINGS]
    ours = _Uuid7Generator(clock_ns=clock_of(ms), randbytes=ByteStream(b"b").read, block=block)
    reference = HeldUuid7(clock_of(ms), ByteStream(b"b").read)
    assert [ours.mint() for _ in READINGS] == [reference.uuid7() for _ in READINGS]


def test_a_clock_behind_holds_the_timestamp_however_many_values() -> None:
    """5 ms back, then 50,000 values over 10 ms of clock (5,000 a ms): no runaway.

    CPython's rule (last + 1 ms for each value while behind) put the last of
    them 50 s ahead of the clock; RFC 9562 keeps the last millisecond and
    counts, so a timestamp never passes the latest clock reading.
    """
    ns = [(T0_MS + 10) * 1_000_000] + [(T0_MS + 5) * 1_000_000 + 200 * i for i in range(50_000)]
    ours = _Uuid7Generator(clock_ns=iter(ns).__next__)
    got = [ours.mint() for _ in ns]
    stamps = list(map(stamp, got))
    assert stamps == list(itertools.accumulate((n // 1_000_000 for n in ns), max))
    assert stamps[1:25_001] == [T0_MS + 10] * 25_000  # held while the clock is behind
    assert stamps[-1] == T0_MS + 14  # then the values follow the clock again
    assert all(a < b for a, b in itertools.pairwise(got))


def test_many_at_once_hold_the_timestamp_while_the_clock_is_behind() -> None:
    ours = _Uuid7Generator(clock_ns=clock_of([T0_MS + 10] + [T0_MS + 5] * 10))
    got = [ours.mint(), *ours.mint_many(5_000)]  # 5 lock chunks, one reading each
    assert {stamp(u) for u in got} == {T0_MS + 10}
    assert all(a < b for a, b in itertools.pairwise(got))


def test_counter_overflow_moves_the_timestamp_one_ms_ahead() -> None:
    # 2**41 values in one millisecond cannot be minted in a test: start both
    # generators from the same state two values before the counter's end.
    readings = [5, 5, 5, 5, 4, 6, 7]
    ours, reference = both(readings, seed=b"overflow")
    start = (T0_MS + 5, 0x3FF_FFFF_FFFE)
    ours.state = start
    reference._last_timestamp_v7, reference._last_counter_v7 = start
    got = [ours.mint() for _ in readings]
    assert got == [reference.uuid7() for _ in readings]
    # 0x3ff_ffff_ffff is used, then the timestamp moves 1 ms ahead with a fresh
    # counter, and stays there while the clock is behind it
    stamps = list(map(stamp, got))
    assert stamps == [T0_MS + 5] + [T0_MS + 6] * 5 + [T0_MS + 7]
    assert ours.state[1] < 1 << 41  # fresh at T0+7
    assert got == sorted(got)


def test_counter_overflow_while_the_clock_is_behind() -> None:
    # the clock stepped back 100 ms; the counter runs out twice: 1 ms ahead each time
    ours, reference = both([0] * 8, seed=b"overflow-behind")
    ours.state = (T0_MS + 100, 0x3FF_FFFF_FFFE)
    reference._last_timestamp_v7, reference._last_counter_v7 = ours.state
    got = [ours.mint() for _ in range(3)]
    assert got == [reference.uuid7() for _ in range(3)]
    assert list(map(stamp, got)) == [T0_MS + 100, T0_MS + 101, T0_MS + 101]
    ours.state = (T0_MS + 101, 0x3FF_FFFF_FFFF)  # run out again
    reference._last_counter_v7 = 0x3FF_FFFF_FFFF
    more = [ours.mint() for _ in range(5)]
    assert more == [reference.uuid7() for _ in range(5)]
    assert list(map(stamp, more)) == [T0_MS + 102] * 5
    got += more
    assert all(a < b for a, b in itertools.pairwise(got))


@given(
    steps=st.lists(st.integers(min_value=-3_000, max_value=3_000), min_size=1, max_size=60),
    seed=st.binary(min_size=1, max_size=8),
)
def test_any_clock_walk_follows_rfc9562(steps: list[int], seed: bytes) -> None:
    # clock readings in microseconds: forward, still, and backward steps
    readings, t = [], 0.0
    for step in steps:
        t = max(t + step / 1000, -T0_MS + 1)
        readings.append(t)
    ours, reference = both(readings, seed)
    got = [ours.mint() for _ in readings]
    assert got == [reference.uuid7() for _ in readings]
    assert all(a < b for a, b in itertools.pairwise(got))
    # the latest clock reading: never ahead of it (no counter ran out here)
    assert list(map(stamp, got)) == list(itertools.accumulate(map(ms_of, readings), max))


@given(
    steps=st.lists(st.integers(min_value=0, max_value=3_000), min_size=1, max_size=60),
    seed=st.binary(min_size=1, max_size=8),
)
def test_any_clock_that_does_not_step_back_matches_cpython(steps: list[int], seed: bytes) -> None:
    readings = list(itertools.accumulate(s / 1000 for s in steps))
    ours, reference = both(readings, seed, reference_class=CPythonUuid7)
    assert [ours.mint() for _ in readings] == [reference.uuid7() for _ in readings]


@pytest.mark.parametrize(
    ("first", "now", "k"),
    [(0, 3, 200), (3, 3, 200), (9, 3, 50), (0, 0.5, 1_500)],
    ids=["fresh-ms", "same-ms", "clock-behind", "across-lock-chunks"],
)
def test_many_at_once_equal_cpython_at_one_clock_reading(first: float, now: float, k: int) -> None:
    """An executemany's values (mint_many) are those of one clock reading, one by one."""
    ours = _Uuid7Generator(
        clock_ns=clock_of([T0_MS + first] + [T0_MS + now] * 3),  # one reading per lock chunk
        randbytes=ByteStream(b"many").read,
        block=64,
    )
    readings = [T0_MS + first] + [T0_MS + now] * k
    reference = HeldUuid7(clock_of(readings), ByteStream(b"many").read)
    got = [ours.mint(), *ours.mint_many(k)]
    assert got == [reference.uuid7() for _ in range(k + 1)]
    assert got == sorted(got)
    assert {stamp(u) for u in got[1:]} == {T0_MS + max(first, int(now))}  # held, if behind


def test_many_at_once_go_through_a_counter_overflow() -> None:
    ours, reference = both([5] * 6, seed=b"overflow")
    start = (T0_MS + 5, 0x3FF_FFFF_FFFD)
    ours.state = start
    reference._last_timestamp_v7, reference._last_counter_v7 = start
    got = ours.mint_many(6)
    assert got == [reference.uuid7() for _ in range(6)]
    # the counter ran out: the next millisecond, held while the clock reads T0+5
    assert list(map(stamp, got)) == [T0_MS + 5] * 2 + [T0_MS + 6] * 4


def test_layout_fields() -> None:
    ours, _ = both([0, 0])
    first, second = ours.mint(), ours.mint()
    for u in (first, second):
        assert u.version == 7
        assert u.variant == uuid.RFC_4122
        assert u.int >> 80 == T0_MS
    counter = lambda u: ((u.int >> 64) & 0xFFF) << 30 | ((u.int >> 32) & 0x3FFF_FFFF)  # noqa: E731
    assert counter(first) < 1 << 41  # a fresh counter has its top bit clear
    assert counter(second) == counter(first) + 1


def test_new_uuid7_is_rfc9562_and_strictly_increasing() -> None:
    values = [new_uuid7() for _ in range(20_000)]
    assert all(v.version == 7 and v.variant == uuid.RFC_4122 for v in values)
    assert values == sorted(values)
    assert len(set(values)) == len(values)


def test_new_uuid7_is_documented_and_named() -> None:
    assert new_uuid7.__name__ == "new_uuid7"
    assert "Example" in (new_uuid7.__doc__ or "")
    assert new_uuid7 in comb_module.guid_minters  # a column check recognises it


def test_new_uuid7_pickles_and_copies_as_itself() -> None:
    """A column default survives a pickled or copied MetaData as the same function."""
    import copy
    import pickle

    import sqlalchemy as sa

    from sqlalchemy_seqkeys import CombGuid

    assert pickle.loads(pickle.dumps(new_uuid7)) is new_uuid7
    assert copy.deepcopy(new_uuid7) is new_uuid7
    metadata = sa.MetaData()
    sa.Table("t", metadata, sa.Column("id", CombGuid(), primary_key=True, default=new_uuid7))
    restored = pickle.loads(pickle.dumps(metadata))
    engine = sa.create_engine("sqlite://")
    try:
        restored.create_all(engine)
        with engine.begin() as conn:
            conn.execute(restored.tables["t"].insert(), [{}, {}])
            keys = conn.scalars(sa.select(restored.tables["t"].c.id)).all()
    finally:
        engine.dispose()
    assert len(set(keys)) == 2
    assert all(k.version == 7 for k in keys)


def test_threads_share_one_strictly_increasing_sequence() -> None:
    per_thread = 5_000
    results = in_threads(new_uuid7, 4, per_thread)
    merged = [v for out in results for v in out]
    assert len(set(merged)) == 4 * per_thread
    for out in results:
        assert out == sorted(out)


def test_threads_do_not_push_timestamps_ahead_of_the_clock() -> None:
    # Each value's timestamp is the clock reading taken under the lock (or a
    # later one another thread took): never ahead of the clock.
    g = _Uuid7Generator()
    results = in_threads(g.mint, 4, 20_000)
    now_ms = time.time_ns() // 1_000_000
    latest = max(v for out in results for v in out)
    assert latest.int >> 80 <= now_ms


def frozen_generator() -> _Uuid7Generator:
    """Real random bytes, a clock stopped at T0: parent and child mint in one millisecond."""
    return _Uuid7Generator(clock_ns=lambda: T0_MS * 1_000_000)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX-only")
def test_os_fork_child_shares_nothing_and_sorts_after_its_parent() -> None:
    g = frozen_generator()
    before = [g.mint() for _ in range(1_000)]

    def child() -> str:
        return ",".join(str(g.mint()) for _ in range(1_000))

    parent_after: list[uuid.UUID] = []
    text = in_forked_child(child, lambda: parent_after.extend(g.mint() for _ in range(1_000)))
    child_values = [uuid.UUID(s) for s in text.split(",")]
    assert len(child_values) == 1_000
    assert not set(child_values) & set(parent_after)
    assert min(child_values) > max(before)


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX-only")
@pytest.mark.usefixtures("fork_marker")
def test_libc_forked_child_shares_no_value_and_keeps_order() -> None:
    from tests.faults.test_libc_fork import _mint_in_parent_and_libc_child

    for mint, n in ((frozen_generator().mint, 2_000), (new_uuid7, 20_000)):
        before = [mint() for _ in range(100)]
        parent, child = _mint_in_parent_and_libc_child(mint, n)
        assert len(set(child)) == len(child) == n
        shared = set(parent) & set(child)
        assert not shared, f"{len(shared)} values minted by both parent and libc-forked child"
        assert min(child) > max(before)


# -- uuid7_timestamp ---------------------------------------------------------


@given(st.integers(min_value=0, max_value=253_402_300_799_999))
def test_timestamp_reads_the_millisecond(ms: int) -> None:
    g = _Uuid7Generator(clock_ns=lambda: ms * 1_000_000)
    assert uuid7_timestamp(g.mint()) == datetime(1970, 1, 1, tzinfo=UTC) + timedelta(
        milliseconds=ms
    )


def test_timestamp_of_now() -> None:
    before = datetime.now(UTC) - timedelta(milliseconds=1)
    value = _Uuid7Generator().mint()  # a fresh generator: no earlier state ahead of the clock
    after = datetime.now(UTC)
    assert before <= uuid7_timestamp(value) <= after


@pytest.mark.parametrize(
    "value",
    [
        uuid.uuid4(),
        # a COMB value whose random bits read as version 1 (a minted one reads as
        # version 7 with the RFC variant about once in 32: not a fixed example)
        uuid.UUID("018f3173-7000-1c3a-9e51-47d2a0b6f38e"),
        uuid.UUID("018f3173-7000-7000-c000-000000000000"),  # version 7, wrong variant
    ],
    ids=["uuid4", "comb", "variant"],
)
def test_timestamp_refuses_other_uuids(value: uuid.UUID) -> None:
    with pytest.raises(InvalidGuidError, match="not a version 7 UUID"):
        uuid7_timestamp(value)


@pytest.mark.parametrize("value", ["018f3173-7000-7000-8000-000000000000", 123, None])
def test_timestamp_refuses_non_uuids(value: object) -> None:
    with pytest.raises(InvalidGuidError, match=r"needs a uuid\.UUID"):
        uuid7_timestamp(value)  # type: ignore[arg-type]


def test_a_clock_past_48_bits_raises() -> None:
    g = _Uuid7Generator(clock_ns=lambda: (1 << 48) * 1_000_000)
    with pytest.raises(TimestampOutOfRangeError, match="48-bit"):
        g.mint()
