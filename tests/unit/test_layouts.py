"""Snowflake layouts: the presets decode and compose their references' own ids, and say how
long they last.

Every vector below is copied by hand from the place named next to it (the
reference's documentation, its test suite, or a library documenting it), never
computed with this library. Where a reference publishes no id, its packing
formula is written out here, independently of ``SnowflakeLayout``, and the
test compares the two.
"""

from __future__ import annotations

import warnings
from datetime import datetime, timedelta, timezone

import pytest

from sqlalchemy_seqkeys import (
    InvalidSnowflakeError,
    ShortLifeWarning,
    Snowflake,
    SnowflakeLayout,
    TimestampOutOfRangeError,
)
from sqlalchemy_seqkeys.layout import (
    DISCORD_EPOCH,
    INSTAGRAM_EPOCH,
    JS_SAFE_EPOCH,
    SONYFLAKE_EPOCH,
)

UTC = timezone.utc
UNIX = datetime(1970, 1, 1, tzinfo=UTC)


def unix_ms(instant: datetime) -> int:
    return (instant - UNIX) // timedelta(milliseconds=1)


# -- Discord ------------------------------------------------------------------------------

# Discord's developer documentation, "Reference > Snowflakes", the example snowflake:
# 175928847299117063 is 2016-04-30 11:18:25.796 UTC, internal worker 1, internal
# process 0, increment 7.
DISCORD_DOCS = (175928847299117063, datetime(2016, 4, 30, 11, 18, 25, 796000, UTC), 1, 0, 7)
# The discord-snowflake npm package's README: getTimestamp("90339695967350784") is
# 1441609061949, getWorkerId 0, getProcessId 3, getIncrement 0.
DISCORD_NPM = (90339695967350784, UNIX + timedelta(milliseconds=1441609061949), 0, 3, 0)


@pytest.mark.parametrize(
    ("value", "instant", "worker", "process", "increment"), [DISCORD_DOCS, DISCORD_NPM]
)
def test_discord_decodes_and_composes_the_documented_snowflakes(
    value: int, instant: datetime, worker: int, process: int, increment: int
) -> None:
    layout = SnowflakeLayout.discord()
    decoded = layout.decode(value)
    assert decoded.timestamp == instant
    assert layout.split_worker(decoded.worker_id) == {"worker": worker, "process": process}
    assert decoded.sequence == increment
    assert layout.parts(value) == {
        "ticks": unix_ms(instant) - 1420070400000,
        "worker": worker,
        "process": process,
        "sequence": increment,
    }
    # and back
    ticks = layout.ticks_at(instant)
    assert (
        layout.compose(ticks, layout.worker_of(worker=worker, process=process), increment) == value
    )


def test_discord_decodes_the_twilight_documentation_example() -> None:
    # twilight-util's Snowflake trait documentation (docs.rs): user id 105484726235607040
    # was created at 2015-10-19T01:58:38.546+00:00.
    decoded = SnowflakeLayout.discord().decode(105484726235607040)
    assert decoded.timestamp == datetime(2015, 10, 19, 1, 58, 38, 546000, UTC)


def test_discord_packs_the_documented_bit_ranges() -> None:
    # The documentation's table: timestamp bits 63-22, worker 21-17, process 16-12,
    # increment 11-0 (its masks: (id & 0x3E0000) >> 17 and (id & 0x1F000) >> 12).
    layout = SnowflakeLayout.discord()
    value = layout.compose(5, layout.worker_of(worker=31, process=0), 0)
    assert value == (5 << 22) | 0x3E0000
    value = layout.compose(5, layout.worker_of(worker=0, process=31), 4095)
    assert value == (5 << 22) | 0x1F000 | 0xFFF


# -- Twitter ------------------------------------------------------------------------------

# Twitter's archived snowflake (twitter-archive/snowflake, IdWorker.scala): twepoch
# 1288834974657, then datacenterIdBits 5, workerIdBits 5, sequenceBits 12. It publishes
# no ids; these come from libraries that document real tweet ids:
TWITTER_VECTORS = [
    # the twitter-snowflake-utils npm package's README: creationTime 1551493308201,
    # dataCenterId 10, machineId 22 (workerId 342 = 10 << 5 | 22), sequenceId 1
    (1101668899018334209, 1551493308201, 10, 22, 1),
    # CPAN's Twitter::ID documentation: {sequence => 0, timestamp => 1402076979493,
    # worker => 129} is 474971393852182528 (worker 129: datacenter 4, worker 1)
    (474971393852182528, 1402076979493, 4, 1, 0),
]


@pytest.mark.parametrize(("value", "ms", "datacenter", "worker", "sequence"), TWITTER_VECTORS)
def test_twitter_decodes_and_composes_documented_tweet_ids(
    value: int, ms: int, datacenter: int, worker: int, sequence: int
) -> None:
    layout = SnowflakeLayout.twitter()
    assert layout == SnowflakeLayout()  # the default layout is Twitter's
    assert layout.parts(value) == {
        "ticks": ms - 1288834974657,
        "datacenter": datacenter,
        "worker": worker,
        "sequence": sequence,
    }
    assert layout.decode(value).timestamp == UNIX + timedelta(milliseconds=ms)
    worker_id = layout.worker_of(datacenter=datacenter, worker=worker)
    assert worker_id == layout.worker_from(datacenter, worker)
    assert layout.compose(ms - 1288834974657, worker_id, sequence) == value


def test_twitter_decodes_a_tweet_date() -> None:
    # the twitter-snowflake-to-date npm package's README: tweet "1233161576649121792" was
    # posted at 2020-02-27T22:46:45.564Z
    decoded = SnowflakeLayout.twitter().decode(1233161576649121792)
    assert decoded.timestamp == datetime(2020, 2, 27, 22, 46, 45, 564000, UTC)


# -- Sonyflake ------------------------------------------------------------------------------


def sonyflake_to_id(
    elapsed: int, sequence: int, machine: int, bits_seq: int = 8, bits_machine: int = 16
) -> int:
    # sony/sonyflake v2 sonyflake.go, toID / Compose, written out:
    # elapsedTime<<(bitsSequence+bitsMachine) | sequence<<bitsMachine | machine
    return elapsed << (bits_seq + bits_machine) | sequence << bits_machine | machine


def sonyflake_decompose(value: int, bits_seq: int = 8, bits_machine: int = 16) -> dict[str, int]:
    # sonyflake.go Decompose: timePart, sequencePart, machinePart
    return {
        "time": value >> (bits_seq + bits_machine),
        "sequence": (value & ((1 << bits_seq) - 1) << bits_machine) >> bits_machine,
        "machine": value & ((1 << bits_machine) - 1),
    }


# sonyflake v2 sonyflake_test.go, TestComposeAndDecompose (TimeUnit 1 ms, StartTime now):
# zero values, max sequence, max machine id, future time (now + 1 hour); `now` fixed here.
NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
SONY_V2_CASES = [
    (NOW, 0, 0),
    (NOW, 255, 0),
    (NOW, 0, 65535),
    (NOW + timedelta(hours=1), 0, 0),
]


@pytest.mark.parametrize(("instant", "sequence", "machine"), SONY_V2_CASES)
def test_sonyflake_composes_and_decomposes_like_its_test_suite(
    instant: datetime, sequence: int, machine: int
) -> None:
    layout = SnowflakeLayout.sonyflake(epoch=NOW, time_unit=timedelta(milliseconds=1))
    elapsed = unix_ms(instant) - unix_ms(NOW)  # toInternalTime(t) - startTime, in ms
    value = layout.compose(layout.ticks_at(instant), machine, sequence)
    assert value == sonyflake_to_id(elapsed, sequence, machine)
    assert sonyflake_decompose(value) == {"time": elapsed, "sequence": sequence, "machine": machine}
    assert layout.parts(value) == {"ticks": elapsed, "machine": machine, "sequence": sequence}


def test_sonyflake_v1_compose_case() -> None:
    # sonyflake v1 sonyflake_test.go, TestCompose: StartTime 2023-01-01 UTC, sequence 123,
    # machine id 456, the default 10 ms unit; `now` fixed at 2024-01-01 UTC here:
    # 365 days of 10 ms = 3153600000 ticks.
    layout = SnowflakeLayout.sonyflake(epoch=datetime(2023, 1, 1, tzinfo=UTC))
    value = layout.compose(layout.ticks_at(datetime(2024, 1, 1, tzinfo=UTC)), 456, 123)
    assert (
        value == sonyflake_to_id(3153600000, 123, 456) == 52908628385661384
    )  # 3153600000 * 2**24 + 123 * 2**16 + 456
    decoded = layout.decode(value)
    assert (decoded.timestamp, decoded.worker_id, decoded.sequence) == (
        datetime(2024, 1, 1, tzinfo=UTC),
        456,
        123,
    )


def test_sonyflake_defaults_are_its_readme_s() -> None:
    # README: 39 bits of 10 msec, 8 bits of sequence, 16 bits of machine id; 174 years;
    # 2^8 ids per 10 msec per instance. v1's default StartTime: 2014-09-01 00:00:00 UTC.
    layout = SnowflakeLayout.sonyflake()
    assert (layout.timestamp_bits, layout.sequence_bits, layout.worker_bits) == (39, 8, 16)
    assert layout.order == ("timestamp", "sequence", "worker")
    assert layout.epoch == SONYFLAKE_EPOCH == datetime(2014, 9, 1, tzinfo=UTC)
    assert layout.time_unit == timedelta(milliseconds=10)
    assert layout.ids_per_second == 25600
    assert int(layout.lifetime / timedelta(days=365.25)) == 174
    # v2's Settings: BitsSequence 10, BitsMachineID 12 leave 41 bits of time
    wider = SnowflakeLayout.sonyflake(
        sequence_bits=10, machine_bits=12, epoch=datetime(2025, 1, 1, tzinfo=UTC)
    )
    assert wider.timestamp_bits == 41
    value = wider.compose(7, 4095, 1023)
    assert sonyflake_decompose(value, 10, 12) == {"time": 7, "sequence": 1023, "machine": 4095}


# -- Instagram ------------------------------------------------------------------------------


def instagram_next_id(now_millis: int, shard_id: int, nextval: int) -> int:
    # Instagram Engineering, "Sharding & IDs at Instagram", the PL/pgSQL next_id(), written out:
    #   our_epoch bigint := 1314220021721;
    #   result := (now_millis - our_epoch) << 23;
    #   result := result | (shard_id << 10);
    #   result := result | (nextval % 1024);
    return (now_millis - 1314220021721) << 23 | shard_id << 10 | nextval % 1024


def test_instagram_packs_as_its_next_id_function() -> None:
    layout = SnowflakeLayout.instagram()
    assert layout.epoch == INSTAGRAM_EPOCH == UNIX + timedelta(milliseconds=1314220021721)
    # the post's own example shard: 5 (insta5), a sequence value of 5001
    now = datetime(2011, 9, 9, 17, 0, tzinfo=UTC)
    value = layout.compose(layout.ticks_at(now), 5, 5001 % 1024)
    assert value == instagram_next_id(unix_ms(now), 5, 5001)
    assert layout.parts(value) == {
        "ticks": unix_ms(now) - 1314220021721,
        "shard": 5,
        "sequence": 5001 % 1024,
    }


def test_instagram_decodes_a_published_media_id() -> None:
    # Stack Overflow question 63683015 ("Instagram media ID to timestamp conversion"): media
    # id 2384288897814875714 was posted at 2020-08-26T13:43:27Z (to the second); the answer
    # decodes it with our_epoch 1314220021721 and a shift of 64 - 41.
    decoded = SnowflakeLayout.instagram().decode(2384288897814875714)
    assert decoded.timestamp.replace(microsecond=0) == datetime(2020, 8, 26, 13, 43, 27, tzinfo=UTC)


# -- Mastodon ------------------------------------------------------------------------------


def mastodon_id_at(seconds: int) -> int:
    # mastodon lib/mastodon/snowflake.rb, id_at(timestamp, with_random: false):
    #   id = timestamp.to_i * 1000; id = id << 16
    return (seconds * 1000) << 16


def test_mastodon_decodes_its_id_at() -> None:
    layout = SnowflakeLayout.mastodon()
    instant = datetime(2017, 4, 1, 12, 30, tzinfo=UTC)
    value = mastodon_id_at(int(instant.timestamp()))
    decoded = layout.decode(value)
    assert (decoded.timestamp, decoded.worker_id, decoded.sequence) == (instant, 0, 0)
    assert layout.parts(value) == {"ticks": unix_ms(instant), "sequence": 0}
    # timestamp_id(): time_part | tail, where tail = (md5 base + nextval) & 65535
    assert layout.parts(value | 0xBEEF)["sequence"] == 0xBEEF
    assert layout.compose(unix_ms(instant), 0, 0xBEEF) == value | 0xBEEF
    assert layout.max_worker_id == 0


# -- lifetimes --------------------------------------------------------------------------------

EXHAUSTS = [
    # epoch + 2**bits ticks; 64-bit layouts in a signed BIGINT keep one bit for the sign
    (
        SnowflakeLayout.twitter(),
        datetime(2080, 7, 10, 17, 30, 30, 209000, UTC),
    ),  # 1288834974657 + 2**41 ms
    (
        SnowflakeLayout.sonyflake(),
        datetime(2188, 11, 16, 3, 28, 58, 880000, UTC),
    ),  # 2014-09-01 + 2**39 * 10 ms
    (
        SnowflakeLayout.discord(),
        datetime(2084, 9, 6, 15, 47, 35, 552000, UTC),
    ),  # 1420070400000 + 2**41 ms
    (
        SnowflakeLayout.discord(unsigned=True),
        datetime(2154, 5, 15, 7, 35, 11, 104000, UTC),
    ),  # + 2**42 ms
    (
        SnowflakeLayout.instagram(),
        datetime(2046, 6, 27, 17, 0, 49, 497000, UTC),
    ),  # 1314220021721 + 2**40 ms
    (
        SnowflakeLayout.instagram(unsigned=True),
        datetime(2081, 4, 30, 12, 54, 37, 273000, UTC),
    ),  # + 2**41 ms
    (SnowflakeLayout.mastodon(), datetime(6429, 10, 17, 2, 45, 55, 328000, UTC)),  # 2**47 ms
    (
        SnowflakeLayout.js_safe(),
        datetime(2112, 2, 9, 13, 44, 29, 440000, UTC),
    ),  # 2025-01-01 + 2**38 * 10 ms
]


@pytest.mark.parametrize(("layout", "exhausts_at"), EXHAUSTS)
def test_every_preset_says_when_it_runs_out(layout: SnowflakeLayout, exhausts_at: datetime) -> None:
    assert layout.exhausts_at == exhausts_at
    assert layout.exhausted_at == exhausts_at  # the former name
    assert layout.lifetime == exhausts_at - layout.epoch
    # the last tick has an id, within the column's range; the next has none
    last = layout.tick_limit - 1
    top = layout.compose(last, layout.max_worker_id, layout.max_sequence)
    assert top == layout.max_id <= (2**64 - 1 if layout.unsigned else 2**63 - 1)
    assert layout.instant_of(last) < exhausts_at <= layout.instant_of(last) + layout.time_unit
    with pytest.raises(InvalidSnowflakeError):
        layout.compose(layout.tick_limit, 0, 0)
    with pytest.raises(TimestampOutOfRangeError):
        layout.ticks_at(exhausts_at)


@pytest.mark.parametrize(
    ("layout", "rate"),
    [
        (SnowflakeLayout.twitter(), 4_096_000),
        (SnowflakeLayout.sonyflake(), 25_600),
        (SnowflakeLayout.discord(), 4_096_000),
        (SnowflakeLayout.instagram(), 1_024_000),  # "1024 IDs, per shard, per millisecond"
        (SnowflakeLayout.mastodon(), 65_536_000),
        (SnowflakeLayout.js_safe(), 12_800),
    ],
)
def test_ids_per_second_per_worker(layout: SnowflakeLayout, rate: int) -> None:
    assert layout.ids_per_second == rate


def test_a_layout_that_runs_out_within_ten_years_warns_and_one_that_ran_out_raises() -> None:
    # 39 bits of ms from Twitter's epoch: 2028-03
    with pytest.warns(ShortLifeWarning, match="runs out at 2028-") as caught:
        short = SnowflakeLayout(timestamp_bits=39)
    assert caught[0].filename == __file__  # it points at the caller
    assert short.exhausts_at.year == 2028
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SnowflakeLayout(timestamp_bits=39, allow_short_life=True)  # silenced
    with pytest.warns(ShortLifeWarning):  # a generator created with one warns too
        Snowflake(worker_id=1, layout=SnowflakeLayout(timestamp_bits=39))
    # through a preset: 32 bits of 10 ms (497 days) from yesterday; it points at this file too
    yesterday = datetime.now(UTC) - timedelta(days=1)
    with pytest.warns(ShortLifeWarning) as caught:
        SnowflakeLayout.sonyflake(epoch=yesterday, sequence_bits=15, machine_bits=16)
    assert caught[0].filename == __file__
    # 35 bits of ms from 2010: 2011-11; run out, for any flag
    for allow in (False, True):
        with pytest.raises(InvalidSnowflakeError, match="ran out at 2011-"):
            SnowflakeLayout(timestamp_bits=35, allow_short_life=allow)


def test_check_life_is_rerun_by_hand() -> None:
    layout = SnowflakeLayout(timestamp_bits=39, allow_short_life=True)
    layout.check_life()  # silenced
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SnowflakeLayout.js_safe().check_life()


# -- 64-bit layouts ---------------------------------------------------------------------------


def test_a_64_bit_layout_keeps_its_ids_below_2_63_unless_unsigned() -> None:
    signed, unsigned = SnowflakeLayout.discord(), SnowflakeLayout.discord(unsigned=True)
    assert signed.total_bits == unsigned.total_bits == 64
    assert (signed.tick_limit, unsigned.tick_limit) == (2**41, 2**42)
    assert (signed.max_id, unsigned.max_id) == (2**63 - 1, 2**64 - 1)
    assert signed != unsigned
    # Discord's own ids from 2084-09 on are above 2**63 - 1: the unsigned layout decodes them
    late = unsigned.compose(2**41 + 5, 33, 7)
    assert late > 2**63 - 1
    assert unsigned.parts(late) == {"ticks": 2**41 + 5, "worker": 1, "process": 1, "sequence": 7}
    with pytest.raises(
        InvalidSnowflakeError, match="value must be an int from 0 to 9223372036854775807"
    ):
        signed.decode(late)
    # a 63-bit layout gains nothing from unsigned
    assert SnowflakeLayout(unsigned=True).max_id == 2**63 - 1


def test_layouts_over_64_bits_are_refused() -> None:
    with pytest.raises(InvalidSnowflakeError, match="needs 65 bits"):
        SnowflakeLayout(worker_bits=12)
    assert SnowflakeLayout(timestamp_bits=42).total_bits == 64  # Discord's width: accepted now


# -- declaring layouts -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"order": ("worker", "timestamp", "sequence")}, "must start with 'timestamp'"),
        ({"order": ("timestamp", "worker")}, "order must be a permutation"),
        ({"order": "timestamp"}, "order must be a permutation"),
        ({"order": ("timestamp", "worker", "worker")}, "order must be a permutation"),
        ({"worker_parts": (("dc", 5),)}, "take 5 bits, but the worker field has 10"),
        ({"worker_parts": (("dc", 5), ("dc", 5))}, "used twice"),
        ({"worker_parts": (("sequence", 5), ("m", 5))}, "names another field"),
        ({"worker_parts": (("not a name", 10),)}, "must be an identifier"),
        ({"worker_parts": (("dc", 0), ("m", 10))}, "bits of 'dc' must be an int >= 1"),
        ({"worker_parts": ("dc",)}, "worker_parts must be pairs"),
        ({"worker_parts": 5}, "worker_parts must be pairs"),
        ({"unsigned": 1}, "unsigned"),
    ],
)
def test_bad_layouts_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidSnowflakeError, match=message):
        SnowflakeLayout(**kwargs)  # type: ignore[arg-type]


def test_order_and_parts_accept_lists() -> None:
    layout = SnowflakeLayout(
        order=["timestamp", "sequence", "worker"], worker_parts=[["a", 4], ["b", 6]]
    )  # type: ignore[arg-type]
    assert layout.order == ("timestamp", "sequence", "worker")
    assert layout.worker_parts == (("a", 4), ("b", 6))
    assert (layout.timestamp_shift, layout.sequence_shift, layout.worker_shift) == (22, 10, 0)
    hash(layout)


def test_worker_parts_do_not_change_which_ids_a_layout_mints() -> None:
    # two generators sharing a lease compare layouts: the parts are names only
    assert SnowflakeLayout(worker_parts=(("a", 10),)) == SnowflakeLayout()
    assert SnowflakeLayout(order=("timestamp", "sequence", "worker")) != SnowflakeLayout()


def test_worker_of_and_split_worker_refuse_what_they_cannot_hold() -> None:
    layout = SnowflakeLayout.discord()
    with pytest.raises(InvalidSnowflakeError, match="process must be an int from 0 to 31"):
        layout.worker_of(worker=0, process=32)
    with pytest.raises(InvalidSnowflakeError, match=r"takes the parts \['worker', 'process'\]"):
        layout.worker_of(worker=0)
    with pytest.raises(InvalidSnowflakeError, match="names no worker_parts"):
        SnowflakeLayout().worker_of(a=1)
    with pytest.raises(InvalidSnowflakeError, match="worker_id must be an int from 0 to 1023"):
        layout.split_worker(1024)
    assert SnowflakeLayout().parts(4198401) == {"ticks": 1, "worker_id": 1, "sequence": 1}


def test_the_js_safe_preset() -> None:
    layout = SnowflakeLayout.js_safe()
    assert layout.epoch == JS_SAFE_EPOCH
    assert layout.max_id == 2**53 - 1
    assert layout.max_worker_id == 255
    assert layout.lifetime > timedelta(days=87 * 365)
    assert SnowflakeLayout.js_safe(epoch=DISCORD_EPOCH).exhausts_at.year == 2102


# -- minting: what each reference's decoder reads from our ids ---------------------------------

MINT_AT = datetime(2025, 6, 1, 12, 0, 0, 250000, UTC)


def _reference_fields(name: str, value: int) -> tuple[int, ...]:
    # Each reference's own decoding, written out (unix ms or ticks, then its fields)
    if (
        name == "twitter"
    ):  # IdWorker.scala: timestampLeftShift 22, datacenterIdShift 17, workerIdShift 12
        return ((value >> 22) + 1288834974657, (value >> 17) & 31, (value >> 12) & 31, value & 4095)
    if name == "sonyflake":  # Decompose: time (10 ms ticks since StartTime), sequence, machine
        parts = sonyflake_decompose(value)
        return (parts["time"], parts["sequence"], parts["machine"])
    if name == "discord":  # the developer docs' formulas
        return (
            (value >> 22) + 1420070400000,
            (value & 0x3E0000) >> 17,
            (value & 0x1F000) >> 12,
            value & 0xFFF,
        )
    if name == "instagram":  # the engineering post's layout: id >> 23, shard << 10, sequence
        return ((value >> 23) + 1314220021721, (value >> 10) & 8191, value & 1023)
    assert name == "mastodon"  # Mastodon::Snowflake: 48 bits of ms, 16 bits of sequence data
    return (value >> 16, value & 0xFFFF)


@pytest.mark.parametrize(
    ("name", "worker_id", "expected"),
    [
        ("twitter", (3 << 5) | 17, lambda seq: (unix_ms(MINT_AT), 3, 17, seq)),
        (
            "sonyflake",
            456,
            lambda seq: ((MINT_AT - SONYFLAKE_EPOCH) // timedelta(milliseconds=10), seq, 456),
        ),
        ("discord", (1 << 5) | 30, lambda seq: (unix_ms(MINT_AT), 1, 30, seq)),
        ("instagram", 1341, lambda seq: (unix_ms(MINT_AT), 1341, seq)),
        ("mastodon", 0, lambda seq: (unix_ms(MINT_AT), seq)),
    ],
)
def test_each_preset_mints_ids_its_reference_decodes_to_the_same_fields(
    name: str, worker_id: int, expected: object
) -> None:
    layout = getattr(SnowflakeLayout, name)()
    at_ns = unix_ms(MINT_AT) * 1_000_000
    ids = Snowflake(worker_id=worker_id, layout=layout, clock=lambda: at_ns)
    minted = [ids() for _ in range(5)]
    assert minted == sorted(minted)
    assert [_reference_fields(name, v) for v in minted] == [expected(seq) for seq in range(5)]  # type: ignore[operator]
    for value in minted:
        decoded = ids.decode(value)
        assert decoded.timestamp == MINT_AT
        assert decoded.worker_id == worker_id


# -- columns for 64-bit ids ----------------------------------------------------------------------


def _table(type_: object, layout: SnowflakeLayout) -> object:
    import sqlalchemy as sa

    return sa.Table(
        "t",
        sa.MetaData(),
        sa.Column("id", type_, primary_key=True, default=Snowflake(1, layout=layout)),
    )


def test_an_unsigned_layout_needs_a_column_that_holds_2_64() -> None:
    import sqlalchemy as sa
    from sqlalchemy.dialects import mysql

    unsigned = SnowflakeLayout.discord(unsigned=True)
    for type_ in (
        sa.BigInteger(),
        sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
        sa.Numeric(19, 0),
    ):
        with pytest.raises(InvalidSnowflakeError, match="whose layout is unsigned"):
            _table(type_, unsigned)
    for type_ in (
        sa.Numeric(20, 0),
        mysql.BIGINT(unsigned=True).with_variant(sa.Numeric(20, 0), "sqlite"),
    ):
        # SQLite binds a NUMERIC as a float: an integer variant for it is needed
        with pytest.raises(InvalidSnowflakeError, match="SQLite holds no integer past 2"):
            _table(type_, unsigned)
    for type_ in (
        sa.Numeric(20, 0).with_variant(sa.BigInteger(), "sqlite"),
        mysql.BIGINT(unsigned=True),
    ):
        _table(type_, unsigned)
    # the same layout kept below 2**63 fits a BIGINT
    _table(sa.BigInteger(), SnowflakeLayout.discord())


@pytest.mark.parametrize("layout", [SnowflakeLayout.discord(), SnowflakeLayout.instagram()])
def test_a_generator_stops_where_a_64_bit_layout_leaves_the_bigint_range(
    layout: SnowflakeLayout,
) -> None:
    # the last tick below 2**63 mints; the next one (the top timestamp bit) must not
    last_ns = unix_ms(layout.instant_of(layout.tick_limit - 1)) * 1_000_000
    ids = Snowflake(worker_id=layout.max_worker_id, layout=layout, clock=lambda: last_ns)
    assert ids() <= 2**63 - 1
    beyond = Snowflake(worker_id=0, layout=layout, clock=lambda: last_ns + 1_000_000)
    with pytest.raises(InvalidSnowflakeError, match="ran out"):
        beyond()
