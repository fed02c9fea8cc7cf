"""Time-range bounds: lo <= key < hi exactly when the key's own timestamp is in [start, end)."""

from __future__ import annotations

import dataclasses
import functools
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sqlalchemy_seqkeys import (
    CombLayout,
    InvalidLayoutError,
    InvalidSnowflakeError,
    NaiveDatetimeError,
    Snowflake,
    SnowflakeLayout,
    TimestampOutOfRangeError,
    comb_timestamp,
    new_comb,
    reverse_bits,
    rotate_digits,
    unrotate_digits,
)
from sqlalchemy_seqkeys.timerange import (
    InvalidTimeRangeError,
    comb_bounds,
    snowflake_bounds,
    uuid7_bounds,
)
from sqlalchemy_seqkeys.uuid7 import new_uuid7, uuid7_timestamp
from tests._helpers import sql_server_key

UTC = timezone.utc
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
T0 = datetime(2025, 1, 1, tzinfo=UTC)

# Instants around T0 at microsecond resolution, in assorted time zones.
zones = st.sampled_from(
    [UTC, timezone(timedelta(hours=5, minutes=30)), timezone(-timedelta(hours=8))]
)
offsets_us = st.integers(min_value=-5_000, max_value=5_000)


def instant(offset_us: int, tz: timezone) -> datetime:
    return (T0 + timedelta(microseconds=offset_us)).astimezone(tz)


def v7_at(ms: int, rand: int) -> uuid.UUID:
    """A version 7 UUID with timestamp ``ms`` and 74 bits ``rand`` (any of them)."""
    rand_a, rand_b = rand >> 62, rand & ((1 << 62) - 1)
    return uuid.UUID(int=(ms << 80) | (7 << 76) | (rand_a << 64) | (2 << 62) | rand_b)


RAND_74 = st.one_of(st.just(0), st.just((1 << 74) - 1), st.integers(0, (1 << 74) - 1))


@given(
    start_us=offsets_us,
    length_us=st.integers(min_value=0, max_value=5_000),
    key_us=offsets_us,
    rand=RAND_74,
    tz=zones,
)
def test_uuid7_bounds_hold_exactly_the_window(
    start_us: int, length_us: int, key_us: int, rand: int, tz: timezone
) -> None:
    start, end = instant(start_us, tz), instant(start_us + length_us, tz)
    key_ms = (instant(key_us, UTC) - EPOCH) // timedelta(milliseconds=1)
    key = v7_at(key_ms, rand)
    lo, hi = uuid7_bounds(start, end)
    assert (lo <= key < hi) == (start <= uuid7_timestamp(key) < end)


def test_uuid7_bounds_rounding_is_up_on_both_ends() -> None:
    lo, hi = uuid7_bounds(T0 + timedelta(microseconds=400), T0 + timedelta(microseconds=2_001))
    t0_ms = (T0 - EPOCH) // timedelta(milliseconds=1)
    assert (lo.int >> 80, hi.int >> 80) == (t0_ms + 1, t0_ms + 3)
    # a key minted at T0 + 0.7 ms carries T0: before start, left out
    assert not lo <= v7_at(t0_ms, 1 << 73) < hi
    assert lo <= v7_at(t0_ms + 2, (1 << 74) - 1) < hi


def test_uuid7_bounds_select_what_new_uuid7_minted() -> None:
    # new_uuid7 on the real clock, four keys at a time: whole runs of keys per millisecond
    keys: list[uuid.UUID] = []
    deadline = time.monotonic() + 10
    while len({uuid7_timestamp(k) for k in keys}) < 12:
        assert time.monotonic() < deadline, "the clock did not move through 12 milliseconds"
        keys.extend(new_uuid7() for _ in range(4))
        time.sleep(0.0003)
    stamps = sorted({uuid7_timestamp(k) for k in keys})
    start, end = stamps[3], stamps[-4] + timedelta(microseconds=1)
    lo, hi = uuid7_bounds(start, end)
    selected = sorted(k for k in keys if lo <= k < hi)
    assert selected == [k for k in keys if start <= uuid7_timestamp(k) < end]
    assert {uuid7_timestamp(k) for k in selected} == set(stamps[3:-3])  # whole milliseconds


def test_before_1970_acts_as_1970() -> None:
    lo, hi = uuid7_bounds(datetime(1960, 1, 1, tzinfo=UTC), datetime(1965, 1, 1, tzinfo=UTC))
    assert lo == hi == uuid.UUID(int=0)
    lo, _ = uuid7_bounds(datetime(1960, 1, 1, tzinfo=UTC), T0)
    assert lo == uuid.UUID(int=0)


def test_far_future_fits() -> None:
    _, hi = uuid7_bounds(T0, datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC))
    assert hi.int >> 80 == 253_402_300_800_000


# -- COMB ----------------------------------------------------------------------


def layout_key(layout: CombLayout) -> Callable[[uuid.UUID], object]:
    """How the engine that a layout is meant for compares keys."""
    if layout is CombLayout.AS_STRING:
        return lambda u: u  # uuid.UUID order = text order = UUID.bytes order
    if layout is CombLayout.AS_BINARY:
        return lambda u: u.bytes_le  # a binary column holding bytes_le
    return sql_server_key


@pytest.mark.parametrize("layout", list(CombLayout))
@given(
    start_us=offsets_us,
    length_us=st.integers(min_value=0, max_value=5_000),
    key_us=offsets_us,
    tz=zones,
)
def test_comb_bounds_hold_exactly_the_window_in_the_layouts_order(
    layout: CombLayout, start_us: int, length_us: int, key_us: int, tz: timezone
) -> None:
    start, end = instant(start_us, tz), instant(start_us + length_us, tz)
    key = new_comb(layout, at=instant(key_us, tz))  # a random tail
    lo, hi = comb_bounds(start, end, layout)
    order = layout_key(layout)
    assert (order(lo) <= order(key) < order(hi)) == (start <= comb_timestamp(key, layout) < end)


def test_comb_bound_extremes_in_the_layouts_order() -> None:
    # the smallest and largest key of a millisecond, per layout, against its bounds
    t = T0 + timedelta(milliseconds=7)
    for layout in CombLayout:
        lo, hi = comb_bounds(t, t + timedelta(milliseconds=1), layout)
        order = layout_key(layout)
        assert order(lo) <= order(new_comb(layout, at=t)) < order(hi)
        same_ms = [new_comb(layout, at=t) for _ in range(200)]
        assert all(order(lo) <= order(k) < order(hi) for k in same_ms)
        next_ms = new_comb(layout, at=t + timedelta(milliseconds=1))
        assert not order(next_ms) < order(hi)


def test_as_string_bounds_are_uuid7_bounds() -> None:
    start, end = T0, T0 + timedelta(seconds=1)
    assert comb_bounds(start, end, "as_string") == uuid7_bounds(start, end)


def test_at_end_bounds_do_not_hold_in_python_uuid_order() -> None:
    # said plainly in the docs: AT_END bounds are for SQL Server only
    t = T0 + timedelta(milliseconds=3)
    lo, hi = comb_bounds(t, t + timedelta(milliseconds=1), "at_end")
    keys = [new_comb("at_end", at=t) for _ in range(50)]
    assert all(sql_server_key(lo) <= sql_server_key(k) < sql_server_key(hi) for k in keys)
    assert not all(lo <= k < hi for k in keys)


def test_comb_bounds_bad_layout() -> None:
    with pytest.raises(InvalidLayoutError):
        comb_bounds(T0, T0, "as_text")


# -- snowflake ------------------------------------------------------------------

LAYOUTS = [
    SnowflakeLayout(),
    SnowflakeLayout(
        timestamp_bits=39, worker_bits=8, sequence_bits=16, time_unit=timedelta(milliseconds=10)
    ),
    SnowflakeLayout(
        timestamp_bits=42,
        worker_bits=5,
        sequence_bits=5,
        epoch=datetime(2020, 1, 1, 0, 0, 0, 500, tzinfo=UTC),
        time_unit=timedelta(microseconds=250),
    ),
]


@pytest.mark.parametrize("layout", LAYOUTS, ids=["classic", "10ms-ticks", "250us-ticks"])
@given(
    start_us=offsets_us,
    length_us=st.integers(min_value=0, max_value=50_000),
    key_us=st.integers(min_value=-5_000, max_value=60_000),
    worker=st.integers(min_value=0, max_value=31),
    sequence=st.integers(min_value=0, max_value=31),
)
def test_snowflake_bounds_hold_exactly_the_window(
    layout: SnowflakeLayout,
    start_us: int,
    length_us: int,
    key_us: int,
    worker: int,
    sequence: int,
) -> None:
    start, end = instant(start_us, UTC), instant(start_us + length_us, UTC)
    key = layout.compose(layout.ticks_at(instant(key_us, UTC)), worker, sequence)
    lo, hi = snowflake_bounds(start, end, layout)
    key_time = layout.instant_of(key >> (layout.worker_bits + layout.sequence_bits))
    assert (lo <= key < hi) == (start <= key_time < end)


def test_snowflake_bounds_select_what_a_snowflake_minted() -> None:
    t0_ns = int((T0 - EPOCH) / timedelta(microseconds=1)) * 1_000
    now = [t0_ns]
    ids = Snowflake(worker_id=5, clock=lambda: now[0])
    minted = []
    for i in range(60):
        now[0] = t0_ns + i * 300_000  # 0.3 ms apart
        minted.append(ids())
    start, end = T0 + timedelta(milliseconds=4), T0 + timedelta(milliseconds=11)
    lo, hi = snowflake_bounds(start, end, ids)
    assert [k for k in minted if lo <= k < hi] == [
        k for k in minted if start <= ids.decode(k).timestamp < end
    ]


def test_an_order_keeping_transform_is_applied_to_the_bounds() -> None:
    offset = functools.partial(int.__add__, 10**17)
    plain = snowflake_bounds(T0, T0 + timedelta(seconds=1))
    assert snowflake_bounds(T0, T0 + timedelta(seconds=1), transform=offset) == (
        plain[0] + 10**17,
        plain[1] + 10**17,
    )
    ids = Snowflake(worker_id=1, transform=offset)
    assert snowflake_bounds(T0, T0 + timedelta(seconds=1), ids) == (
        plain[0] + 10**17,
        plain[1] + 10**17,
    )


@pytest.mark.parametrize(
    ("transform", "why"),
    [
        (rotate_digits, "rotate_digits moves"),
        (functools.partial(rotate_digits, digits=2), "rotate_digits moves"),
        (unrotate_digits, "unrotate_digits"),
        (reverse_bits, "reverse_bits puts"),
    ],
    ids=["rotate", "rotate-2", "unrotate", "reverse-bits"],
)
def test_order_breaking_transforms_are_refused_with_the_reason(
    transform: Callable[[int], int], why: str
) -> None:
    with pytest.raises(InvalidSnowflakeError, match=why):
        snowflake_bounds(T0, T0 + timedelta(seconds=1), transform=transform)
    with pytest.raises(InvalidSnowflakeError, match="no id range"):
        snowflake_bounds(T0, T0 + timedelta(seconds=1), Snowflake(worker_id=1, transform=transform))


def test_a_decreasing_custom_transform_is_caught() -> None:
    with pytest.raises(InvalidSnowflakeError, match="does not keep order"):
        snowflake_bounds(T0, T0 + timedelta(seconds=1), transform=lambda v: -v)


def test_snowflake_window_before_the_epoch_is_empty() -> None:
    early = datetime(2000, 1, 1, tzinfo=UTC)
    assert snowflake_bounds(early, early + timedelta(days=1)) == (0, 0)


def test_a_63_bit_layout_has_no_bound_past_its_last_tick() -> None:
    layout = SnowflakeLayout()  # 41 + 10 + 12 = 63 bits
    last_tick = layout.instant_of((1 << 41) - 1)
    _, hi = snowflake_bounds(T0, last_tick, layout)
    assert hi == ((1 << 41) - 1) << 22 <= 2**63 - 1
    with pytest.raises(TimestampOutOfRangeError, match="last tick"):
        snowflake_bounds(T0, last_tick + timedelta(microseconds=1), layout)
    # a layout with spare bits takes windows past its end: every id is below hi
    short = SnowflakeLayout(timestamp_bits=40, worker_bits=10, sequence_bits=12)
    _, hi = snowflake_bounds(T0, datetime(9999, 1, 1, tzinfo=UTC), short)
    assert hi == 1 << 62


UNSIGNED = [SnowflakeLayout.discord(unsigned=True), SnowflakeLayout.instagram(unsigned=True)]


def _past_the_signed_life(layout: SnowflakeLayout) -> datetime:
    """An instant between the end of the layout's life in a BIGINT and its unsigned end."""
    signed = dataclasses.replace(layout, unsigned=False)
    return signed.exhausts_at + (layout.exhausts_at - signed.exhausts_at) / 2


@pytest.mark.parametrize("layout", UNSIGNED, ids=["discord", "instagram"])
def test_unsigned_layouts_have_bounds_past_2_63(layout: SnowflakeLayout) -> None:
    start = _past_the_signed_life(layout).replace(microsecond=0)
    end = start + timedelta(milliseconds=5)
    now = [0]
    ids = Snowflake(worker_id=1, layout=layout, clock=lambda: now[0])
    minted = []
    at = start - timedelta(milliseconds=3)
    while at < end + timedelta(milliseconds=3):  # every 0.3 ms, 3 ms either side
        now[0] = (at - EPOCH) // timedelta(microseconds=1) * 1000
        minted.append(ids())
        at += timedelta(microseconds=300)
    lo, hi = snowflake_bounds(start, end, layout)
    assert 2**63 <= lo < hi <= 2**64 - 1
    inside = [k for k in minted if lo <= k < hi]
    assert inside == [k for k in minted if start <= ids.decode(k).timestamp < end]
    assert 0 < len(inside) < len(minted)
    assert snowflake_bounds(start, end, ids) == (lo, hi)


@pytest.mark.parametrize("layout", UNSIGNED, ids=["discord", "instagram"])
@given(
    back_us=st.integers(min_value=0, max_value=50_000),
    length_us=st.integers(min_value=0, max_value=50_000),
    key_back=st.integers(min_value=0, max_value=60),
    worker=st.integers(min_value=0, max_value=31),
    sequence=st.integers(min_value=0, max_value=31),
)
def test_unsigned_bounds_hold_exactly_the_window_up_to_the_last_tick(
    layout: SnowflakeLayout,
    back_us: int,
    length_us: int,
    key_back: int,
    worker: int,
    sequence: int,
) -> None:
    last = layout.tick_limit - 1
    end = layout.instant_of(last) - timedelta(microseconds=back_us)
    start = end - timedelta(microseconds=length_us)
    tick = last - key_back
    key = layout.compose(tick, worker, sequence)
    lo, hi = snowflake_bounds(start, end, layout)
    assert (lo <= key < hi) == (start <= layout.instant_of(tick) < end)


def test_an_unsigned_layout_has_no_bound_past_its_last_tick() -> None:
    layout = SnowflakeLayout.discord(unsigned=True)
    last = layout.instant_of(layout.tick_limit - 1)
    assert last.year == 2154
    _, hi = snowflake_bounds(T0, last, layout)
    assert hi == (layout.tick_limit - 1) << 22 <= 2**64 - 1
    with pytest.raises(TimestampOutOfRangeError, match=r"last tick \(2154-05-15") as caught:
        snowflake_bounds(T0, last + timedelta(microseconds=1), layout)
    assert "BIGINT" not in str(caught.value).replace("BIGINT UNSIGNED", "")
    assert "unsigned" in str(caught.value)
    # the same layout in a signed BIGINT ends in 2084
    signed = SnowflakeLayout.discord()
    with pytest.raises(TimestampOutOfRangeError, match=r"last tick \(2084-09-06.*BIGINT"):
        snowflake_bounds(T0, datetime(2100, 1, 1, tzinfo=UTC), signed)


# -- bad arguments ------------------------------------------------------------------


@pytest.mark.parametrize(
    "bounds",
    [
        functools.partial(uuid7_bounds),
        functools.partial(comb_bounds, layout="at_end"),
        functools.partial(snowflake_bounds),
    ],
    ids=["uuid7", "comb", "snowflake"],
)
def test_bad_windows(bounds: Callable[..., object]) -> None:
    with pytest.raises(InvalidTimeRangeError, match="before start"):
        bounds(T0 + timedelta(seconds=1), T0)
    with pytest.raises(NaiveDatetimeError, match="no timezone"):
        bounds(datetime(2025, 1, 1), T0)
    with pytest.raises(NaiveDatetimeError, match="end"):
        bounds(T0, datetime(2025, 1, 2))
    with pytest.raises(InvalidTimeRangeError, match="aware datetime, not str"):
        bounds("2025-01-01", T0)
    with pytest.raises(InvalidTimeRangeError, match="aware datetime, not int"):
        bounds(T0, 1_735_689_600_000)
    assert bounds(T0, T0)[0] == bounds(T0, T0)[1]  # an empty window is fine


def test_snowflake_bounds_bad_layout_and_transform() -> None:
    with pytest.raises(InvalidSnowflakeError, match="SnowflakeLayout or a Snowflake"):
        snowflake_bounds(T0, T0, "classic")  # type: ignore[arg-type]
    with pytest.raises(InvalidSnowflakeError, match="callable"):
        snowflake_bounds(T0, T0, transform=5)  # type: ignore[arg-type]
    with pytest.raises(InvalidSnowflakeError, match="brings its own"):
        snowflake_bounds(T0, T0, Snowflake(worker_id=1), transform=abs)
