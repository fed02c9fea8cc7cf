"""A layout's epoch is an instant: layouts compare and hash by it, not by its wall clock.

Python compares two aware datetimes that share one tzinfo object by their wall
clocks and ignores ``fold``, so 02:30 in Berlin's autumn overlap before the
clock turns back (00:30Z) and after (01:30Z) compare equal. Two layouts whose
epochs are those two instants mint and decode an hour apart: they must differ,
or generators sharing a lease would mint with one epoch and decode with the other.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
from datetime import datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import sqlalchemy as sa

from sqlalchemy_seqkeys import (
    InvalidSnowflakeError,
    SeqKeysError,
    Snowflake,
    SnowflakeLayout,
    WorkerLease,
)
from sqlalchemy_seqkeys.layout import DEFAULT_EPOCH

UTC = timezone.utc
BERLIN = ZoneInfo("Europe/Berlin")
# the autumn overlap of 2024: 02:30 CEST (00:30Z), then 02:30 CET (01:30Z)
FIRST = datetime(2024, 10, 27, 2, 30, tzinfo=BERLIN, fold=0)
SECOND = datetime(2024, 10, 27, 2, 30, tzinfo=BERLIN, fold=1)


def test_epochs_an_hour_apart_in_the_overlap_make_different_layouts() -> None:
    assert FIRST == SECOND  # Python's comparison: same tzinfo, wall clocks only
    first, second = SnowflakeLayout(epoch=FIRST), SnowflakeLayout(epoch=SECOND)
    assert first != second
    assert hash(first) != hash(second)
    assert len({first, second}) == 2
    assert second.exhausts_at - first.exhausts_at == timedelta(hours=1)


def test_the_epoch_is_kept_as_its_utc_instant() -> None:
    first, second = SnowflakeLayout(epoch=FIRST), SnowflakeLayout(epoch=SECOND)
    assert first.epoch == datetime(2024, 10, 27, 0, 30, tzinfo=UTC)
    assert second.epoch == datetime(2024, 10, 27, 1, 30, tzinfo=UTC)
    assert first.epoch.tzinfo is UTC
    assert second.epoch.tzinfo is UTC
    assert second.epoch - first.epoch == timedelta(hours=1)


@pytest.mark.parametrize(
    "zone",
    [UTC, ZoneInfo("UTC"), timezone(timedelta(hours=-5)), BERLIN, ZoneInfo("Asia/Kolkata")],
    ids=["utc", "zoneinfo-utc", "fixed-offset", "berlin", "kolkata"],
)
def test_one_instant_in_any_zone_is_one_layout(zone: timezone | ZoneInfo) -> None:
    instant = datetime(2024, 10, 27, 1, 30, tzinfo=UTC)
    layout = SnowflakeLayout(epoch=instant.astimezone(zone))
    assert layout == SnowflakeLayout(epoch=instant)
    assert hash(layout) == hash(SnowflakeLayout(epoch=instant))
    assert layout == SnowflakeLayout(epoch=SECOND)
    assert layout.epoch == instant
    assert layout.epoch.tzinfo is UTC


def test_presets_repr_and_copies_are_unchanged() -> None:
    assert SnowflakeLayout().epoch == DEFAULT_EPOCH
    assert SnowflakeLayout().epoch.tzinfo is UTC
    assert SnowflakeLayout.twitter() == SnowflakeLayout()
    twitter = (
        "epoch=datetime.datetime(2010, 11, 4, 1, 42, 54, 657000, tzinfo=datetime.timezone.utc)"
    )
    assert twitter in repr(SnowflakeLayout())
    layout = SnowflakeLayout.discord(unsigned=True)
    assert pickle.loads(pickle.dumps(layout)) == layout
    assert copy.deepcopy(layout) == layout
    moved = dataclasses.replace(layout, epoch=SECOND)
    assert moved.epoch == datetime(2024, 10, 27, 1, 30, tzinfo=UTC)
    assert moved != dataclasses.replace(layout, epoch=FIRST)


def test_decoding_uses_the_epochs_instant() -> None:
    now_ns = 1_767_225_600_000_000_000  # 2026-01-01T00:00Z
    first = Snowflake(worker_id=1, layout=SnowflakeLayout(epoch=FIRST), clock=lambda: now_ns)
    second = Snowflake(worker_id=2, layout=SnowflakeLayout(epoch=SECOND), clock=lambda: now_ns)
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert first.decode(first()).timestamp == now
    assert second.decode(second()).timestamp == now


def test_generators_with_epochs_an_hour_apart_do_not_share_a_lease(tmp_path: Path) -> None:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'lease.db'}")
    try:
        with WorkerLease(engine, ttl=30) as lease:
            first = Snowflake(worker_id=lease, layout=SnowflakeLayout(epoch=FIRST))
            first()
            with pytest.raises(InvalidSnowflakeError, match="another layout"):
                Snowflake(worker_id=lease, layout=SnowflakeLayout(epoch=SECOND))()
            same = Snowflake(worker_id=lease, layout=SnowflakeLayout(epoch=FIRST.astimezone(UTC)))
            before = datetime.now(UTC)
            minted = same.decode(same()).timestamp
            assert before - timedelta(milliseconds=1) <= minted <= datetime.now(UTC)
    finally:
        engine.dispose()


@pytest.mark.parametrize(
    "epoch",
    [
        datetime.max.replace(tzinfo=timezone(timedelta(hours=-5))),  # UTC: the year 10000
        datetime.min.replace(tzinfo=timezone(timedelta(hours=5))),  # UTC: the year 0
    ],
    ids=["after-9999", "before-year-1"],
)
def test_an_epoch_whose_utc_instant_no_datetime_holds_is_refused(epoch: datetime) -> None:
    with pytest.raises(InvalidSnowflakeError) as caught:
        SnowflakeLayout(epoch=epoch, allow_short_life=True)
    assert isinstance(caught.value, SeqKeysError)
