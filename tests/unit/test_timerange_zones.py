"""Time-range bounds and snowflake ticks measure instants, whatever zone they are given in.

Python compares and subtracts two aware datetimes that share one tzinfo object
(``ZoneInfo("Europe/Berlin")`` is cached, so two Berlin instants usually do) by
their wall clocks, ignoring the UTC offset and ``fold``. The bounds, ``ticks_at``
and ``exhausts_at`` must not: a window, a key's instant or a layout's epoch in a
zone with daylight saving time gives the same ids as the same instants in UTC.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sqlalchemy_seqkeys import (
    CombLayout,
    InvalidTimeRangeError,
    Snowflake,
    SnowflakeLayout,
    TimestampOutOfRangeError,
    comb_bounds,
    snowflake_bounds,
    uuid7_bounds,
)

UTC = timezone.utc
UNIX = datetime(1970, 1, 1, tzinfo=UTC)
MS = timedelta(milliseconds=1)
BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")
LORD_HOWE = ZoneInfo("Australia/Lord_Howe")  # shifts by 30 minutes
ZONES: list[tzinfo] = [UTC, BERLIN, NEW_YORK, LORD_HOWE]

# A real 40-minute window through Berlin's autumn overlap (the clock turns back
# from 03:00 CEST to 02:00 CET at 01:00Z): 02:30 CEST (00:30Z) to 02:10 CET (01:10Z).
FIRST_0230 = datetime(2025, 10, 26, 2, 30, tzinfo=BERLIN, fold=0)
SECOND_0210 = datetime(2025, 10, 26, 2, 10, tzinfo=BERLIN, fold=1)


def ceil_units(instant: datetime, epoch: datetime, unit: timedelta) -> int:
    """Whole units from ``epoch`` to ``instant``, rounded up, never below 0: in UTC."""
    since = instant.astimezone(UTC) - epoch.astimezone(UTC)
    return max(0, -(-since // unit))


def berlin_layout() -> SnowflakeLayout:
    # local midnight in winter (CET, +01:00): a summer instant is at +02:00
    return SnowflakeLayout(epoch=datetime(2025, 1, 1, tzinfo=BERLIN))


# -- the layout's epoch and the window in one DST zone ----------------------------------


def minted_in_berlin_summer(layout: SnowflakeLayout) -> tuple[datetime, int]:
    minted_at = datetime(2025, 7, 1, 12, 0, 30, tzinfo=BERLIN)  # CEST, +02:00
    unix_ns = (minted_at.astimezone(UTC) - UNIX) // timedelta(microseconds=1) * 1000
    key = Snowflake(worker_id=1, layout=layout, clock=lambda: unix_ns)()
    return minted_at, key


def test_snowflake_bounds_of_a_summer_window_in_the_epochs_zone() -> None:
    layout = berlin_layout()
    minted_at, key = minted_in_berlin_summer(layout)
    start = datetime(2025, 7, 1, 12, 0, tzinfo=BERLIN)
    end = datetime(2025, 7, 1, 12, 1, tzinfo=BERLIN)
    lo, hi = snowflake_bounds(start, end, layout)
    assert lo <= key < hi
    assert (lo, hi) == snowflake_bounds(start.astimezone(UTC), end.astimezone(UTC), layout)
    # 10:00Z is 181 days (less the 23:00Z start of the epoch's day) after the epoch
    epoch_utc = datetime(2024, 12, 31, 23, 0, tzinfo=UTC)
    assert lo >> 22 == (datetime(2025, 7, 1, 10, 0, tzinfo=UTC) - epoch_utc) // MS
    assert layout.instant_of(lo >> 22) == start
    assert layout.instant_of(hi >> 22) == end
    # a Snowflake stands for its layout
    ids = Snowflake(worker_id=1, layout=layout)
    assert snowflake_bounds(start, end, ids) == (lo, hi)
    assert ids.decode(key).timestamp == minted_at


def test_ticks_at_of_a_summer_instant_in_the_epochs_zone() -> None:
    layout = berlin_layout()
    minted_at, key = minted_in_berlin_summer(layout)
    assert layout.ticks_at(minted_at) == key >> 22
    assert layout.ticks_at(minted_at) == layout.ticks_at(minted_at.astimezone(UTC))
    assert layout.ticks_at(minted_at) == layout.ticks_at(minted_at.astimezone(NEW_YORK))


def test_ticks_at_reads_fold() -> None:
    layout = berlin_layout()
    first, second = datetime(2025, 10, 26, 2, 10, tzinfo=BERLIN), SECOND_0210
    assert layout.ticks_at(second) - layout.ticks_at(first) == 3_600_000  # an hour apart


def test_ticks_at_compares_with_the_epoch_as_instants() -> None:
    # epoch 02:30 CET (01:30Z); 02:40 CEST (00:40Z) is 50 minutes earlier, though its
    # wall clock is 10 minutes later
    layout = SnowflakeLayout(epoch=datetime(2025, 10, 26, 2, 30, tzinfo=BERLIN, fold=1))
    with pytest.raises(TimestampOutOfRangeError):
        layout.ticks_at(datetime(2025, 10, 26, 2, 40, tzinfo=BERLIN))
    assert layout.ticks_at(datetime(2025, 10, 26, 2, 40, tzinfo=BERLIN, fold=1)) == 600_000


def test_exhausts_at_is_the_instant_after_the_last_tick() -> None:
    # a winter epoch whose last tick ends in summer (2094-09-07), in Berlin
    layout = berlin_layout()
    last = layout.tick_limit - 1
    assert layout.exhausts_at == layout.instant_of(last) + layout.time_unit
    assert layout.exhausts_at == layout.epoch.astimezone(UTC) + layout.lifetime
    assert layout.ticks_at(layout.exhausts_at - timedelta(microseconds=1)) == last
    with pytest.raises(TimestampOutOfRangeError):
        layout.ticks_at(layout.exhausts_at)
    with pytest.raises(TimestampOutOfRangeError):
        layout.ticks_at(layout.exhausts_at.astimezone(BERLIN))


# -- windows through the autumn overlap, in one zone ------------------------------------

BOUNDS: dict[str, Callable[[datetime, datetime], tuple[object, object]]] = {
    "uuid7_bounds": uuid7_bounds,
    "comb_bounds": lambda s, e: comb_bounds(s, e, CombLayout.AT_END),
    "snowflake_bounds": lambda s, e: snowflake_bounds(s, e, berlin_layout()),
}


@pytest.mark.parametrize("name", sorted(BOUNDS))
def test_a_window_through_the_overlap_is_its_40_minutes(name: str) -> None:
    bounds = BOUNDS[name]
    lo, hi = bounds(FIRST_0230, SECOND_0210)
    assert (lo, hi) == bounds(FIRST_0230.astimezone(UTC), SECOND_0210.astimezone(UTC))
    assert lo != hi


@pytest.mark.parametrize("name", sorted(BOUNDS))
def test_a_window_ending_before_it_starts_through_the_overlap_is_refused(name: str) -> None:
    with pytest.raises(InvalidTimeRangeError, match="before start"):
        BOUNDS[name](SECOND_0210, FIRST_0230)


def test_the_overlap_window_holds_the_keys_minted_in_it() -> None:
    lo, hi = uuid7_bounds(FIRST_0230, SECOND_0210)
    for minute, inside in ((29, False), (30, True), (69, True), (70, False)):
        ms = (datetime(2025, 10, 26, tzinfo=UTC) + timedelta(minutes=minute) - UNIX) // MS
        key = uuid.UUID(int=(ms << 80) | (7 << 76) | (2 << 62))
        assert (lo <= key < hi) is inside, minute


# -- property: any zone, any DST season or transition -----------------------------------

# each zone's 2025 transitions (UTC), and instants a few hours around them or anywhere
TRANSITIONS = [
    datetime(2025, 3, 30, 1, tzinfo=UTC),
    datetime(2025, 10, 26, 1, tzinfo=UTC),
    datetime(2025, 3, 9, 7, tzinfo=UTC),
    datetime(2025, 11, 2, 6, tzinfo=UTC),
    datetime(2025, 4, 5, 15, tzinfo=UTC),
    datetime(2025, 10, 4, 15, 30, tzinfo=UTC),
]
HOUR_US = 3_600_000_000
instants_utc = st.one_of(
    st.builds(
        lambda t, us: t + timedelta(microseconds=us),
        st.sampled_from(TRANSITIONS),
        st.integers(-3 * HOUR_US, 3 * HOUR_US),
    ),
    st.datetimes(datetime(2024, 1, 1), datetime(2026, 12, 31), timezones=st.just(UTC)),
)
lengths = st.one_of(st.integers(0, 3 * HOUR_US), st.integers(0, 400 * 24 * HOUR_US)).map(
    lambda us: timedelta(microseconds=us)
)
zones = st.sampled_from(ZONES)
# epochs in winter and in summer (UTC; given in a sampled zone), and tick lengths
# whose ticks the 30-minute and 1-hour shifts would move
epochs_utc = st.sampled_from(
    [datetime(2022, 12, 31, 23, tzinfo=UTC), datetime(2023, 6, 30, 22, tzinfo=UTC)]
)
ticks = st.sampled_from([(41, MS), (32, timedelta(seconds=1)), (20, timedelta(minutes=30))])


def layout_of(epoch: datetime, tick: tuple[int, timedelta]) -> SnowflakeLayout:
    bits, unit = tick
    return SnowflakeLayout(timestamp_bits=bits, epoch=epoch, time_unit=unit)


@given(
    start=instants_utc,
    length=lengths,
    epoch=epochs_utc,
    tick=ticks,
    start_zone=zones,
    end_zone=zones,
    epoch_zone=zones,
)
def test_snowflake_bounds_are_the_same_in_every_zone(
    start: datetime,
    length: timedelta,
    epoch: datetime,
    tick: tuple[int, timedelta],
    start_zone: tzinfo,
    end_zone: tzinfo,
    epoch_zone: tzinfo,
) -> None:
    end = start + length
    layout = layout_of(epoch.astimezone(epoch_zone), tick)
    shift = layout.timestamp_shift
    expected = (
        ceil_units(start, epoch, layout.time_unit) << shift,
        ceil_units(end, epoch, layout.time_unit) << shift,
    )
    assert snowflake_bounds(start.astimezone(start_zone), end.astimezone(end_zone), layout) == (
        expected
    )
    # and with the window in the epoch's own zone (one tzinfo object for all three)
    in_epoch_zone = (start.astimezone(epoch_zone), end.astimezone(epoch_zone))
    assert snowflake_bounds(*in_epoch_zone, layout) == expected


@given(instant=instants_utc, epoch=epochs_utc, tick=ticks, zone=zones, epoch_zone=zones)
def test_ticks_at_is_the_same_in_every_zone(
    instant: datetime,
    epoch: datetime,
    tick: tuple[int, timedelta],
    zone: tzinfo,
    epoch_zone: tzinfo,
) -> None:
    layout = layout_of(epoch.astimezone(epoch_zone), tick)
    ticks_since = (instant - epoch) // layout.time_unit
    assert layout.ticks_at(instant.astimezone(zone)) == ticks_since
    # a key minted then is in a window around it, given in any zone
    key = layout.compose(ticks_since, 1, 1)
    lo, hi = snowflake_bounds(
        (instant - layout.time_unit).astimezone(zone), (instant + MS).astimezone(epoch_zone), layout
    )
    assert lo <= key < hi


@given(start=instants_utc, length=lengths, start_zone=zones, end_zone=zones)
def test_uuid7_and_comb_bounds_are_the_same_in_every_zone(
    start: datetime, length: timedelta, start_zone: tzinfo, end_zone: tzinfo
) -> None:
    end = start + length
    lo_ms, hi_ms = ceil_units(start, UNIX, MS), ceil_units(end, UNIX, MS)
    for s, e in (
        (start.astimezone(start_zone), end.astimezone(end_zone)),
        (start.astimezone(start_zone), end.astimezone(start_zone)),
    ):
        assert uuid7_bounds(s, e) == (uuid.UUID(int=lo_ms << 80), uuid.UUID(int=hi_ms << 80))
        assert comb_bounds(s, e, "at_end") == (uuid.UUID(int=lo_ms), uuid.UUID(int=hi_ms))


@given(start=instants_utc, length=lengths, zone=zones)
def test_only_a_real_end_before_start_is_refused(
    start: datetime, length: timedelta, zone: tzinfo
) -> None:
    end = start + length
    uuid7_bounds(start.astimezone(zone), end.astimezone(zone))  # accepted
    if length:
        with pytest.raises(InvalidTimeRangeError):
            uuid7_bounds(end.astimezone(zone), start.astimezone(zone))
