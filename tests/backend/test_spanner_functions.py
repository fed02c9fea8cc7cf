"""The Python implementations equal Spanner's own functions, on the emulator."""

from __future__ import annotations

import random
import string
from datetime import date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import ShardId, farm_fingerprint, reverse_bits, shard_of, spanner_string


def test_farm_fingerprint_and_mod_equal_spanner(spanner_engine: Engine) -> None:
    rng = random.Random(20261122)
    alphabet = string.printable + "éßЖ漢字🙂"
    texts = ["1footrue", "2applefalse", "3true", "alphabet", "a", ""] + [
        "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40))) for _ in range(300)
    ]
    with spanner_engine.connect() as conn:
        for text in texts:
            fingerprint, shard = conn.execute(
                sa.text("SELECT FARM_FINGERPRINT(:t), MOD(FARM_FINGERPRINT(:t), 2048)"),
                {"t": text},
            ).one()
            assert fingerprint == farm_fingerprint(text), text
            assert shard == shard_of(text, 2048), text


def test_reverse_bits_equals_a_spanner_bit_reversed_sequence(spanner_engine: Engine) -> None:
    with spanner_engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(sa.text("DROP SEQUENCE IF EXISTS seqkeys_br_check"))
        conn.execute(
            sa.text(
                "CREATE SEQUENCE seqkeys_br_check OPTIONS "
                "(sequence_kind = 'bit_reversed_positive', start_with_counter = 1000)"
            )
        )
    try:
        with spanner_engine.begin() as conn:
            values = [
                conn.scalar(sa.text("SELECT GET_NEXT_SEQUENCE_VALUE(SEQUENCE seqkeys_br_check)"))
                for _ in range(50)
            ]
        assert values == [reverse_bits(1000 + i) for i in range(50)]
    finally:
        with spanner_engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(sa.text("DROP SEQUENCE seqkeys_br_check"))


def random_values(rng: random.Random) -> list[object]:
    la = ZoneInfo("America/Los_Angeles")
    values: list[object] = [
        rng.randint(-(2**63), 2**63 - 1),
        rng.choice([True, False]),
        "".join(rng.choice(string.ascii_letters + "éß漢") for _ in range(rng.randint(0, 12))),
        date(rng.randint(1900, 2100), rng.randint(1, 12), rng.randint(1, 28)),
    ]
    instant = datetime(2000, 1, 1, tzinfo=timezone.utc) + timedelta(
        seconds=rng.randint(0, 40 * 365 * 86400),
        microseconds=rng.choice([0, 123000, 456789, 1000, 999999]),
    )
    values.append(instant if rng.random() < 0.5 else instant.astimezone(la))
    return values


def test_spanner_string_and_shard_id_equal_spanner(spanner_engine: Engine) -> None:
    rng = random.Random(7)
    with spanner_engine.connect() as conn:
        for _ in range(200):
            n, b, s, d, ts = random_values(rng)
            row = conn.execute(
                sa.text(
                    "SELECT CAST(:n AS STRING), CAST(:b AS STRING), CAST(:d AS STRING), "
                    "CAST(:ts AS STRING), "
                    "MOD(FARM_FINGERPRINT(CONCAT(CAST(:n AS STRING), :s, CAST(:b AS STRING), "
                    "CAST(:ts AS STRING), CAST(:d AS STRING))), 2048)"
                ),
                {"n": n, "b": b, "s": s, "d": d, "ts": ts},
            ).one()
            assert list(row[:4]) == [spanner_string(v) for v in (n, b, d, ts)], (n, b, d, ts)
            shard = ShardId("n", "s", "b", "ts", "d", shards=2048)
            assert row[4] == shard.of(n, s, b, ts, d)


def edge_instants(rng: random.Random) -> list[datetime]:
    """Instants where the text of a TIMESTAMP is easy to get wrong, and random ones."""
    utc = timezone.utc
    fixed = [
        datetime(1, 1, 1, tzinfo=utc),  # 0000-12-31 in Los Angeles
        datetime(1, 1, 1, 7, 51, 59, 999999, tzinfo=utc),
        datetime(1, 1, 1, 7, 52, tzinfo=utc),
        datetime(1, 1, 2, 12, tzinfo=utc),
        datetime(999, 12, 31, 12, tzinfo=utc),
        datetime(1000, 1, 1, 7, 52, 59, tzinfo=utc),
        datetime(1883, 11, 18, 19, 59, 59, 999999, tzinfo=utc),  # the last instant of LMT
        datetime(1883, 11, 18, 20, tzinfo=utc),  # Pacific Standard Time from here
        datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=utc),
    ]
    for change in dst_changes((1918, 1942, 1945, 1948, 1974, 1975, 2006, 2007, 2024, 2037)):
        fixed += [change + timedelta(microseconds=d) for d in (-1_000_000, -1, 0, 1, 1_000_000)]
    low = datetime(1, 1, 1, tzinfo=utc)
    span = int((datetime(9999, 12, 31, 23, 59, 59, tzinfo=utc) - low).total_seconds())
    before_1883 = int((datetime(1883, 11, 19, tzinfo=utc) - low).total_seconds())
    randoms = [
        low + timedelta(seconds=rng.randint(0, limit), microseconds=rng.choice(MICROS))
        for limit in (span, before_1883, 1000 * 365 * 86400)  # anywhere, LMT, years 1..999
        for _ in range(150)
    ]
    return fixed + randoms


MICROS = [0, 1, 10, 1000, 123000, 123456, 500000, 999999]


def dst_changes(years: tuple[int, ...]) -> list[datetime]:
    """The UTC instants at which Los Angeles' offset changes in ``years``, to the second."""
    la = ZoneInfo("America/Los_Angeles")

    def offset(instant: datetime) -> object:
        return instant.astimezone(la).utcoffset()

    changes = []
    for year in years:
        hour = datetime(year, 1, 1, tzinfo=timezone.utc)
        while hour.year == year:
            after = hour + timedelta(hours=1)
            if offset(hour) != offset(after):
                low, high = hour, after  # the offset changes in (low, high]
                while high - low > timedelta(seconds=1):
                    middle = low + (high - low) / 2
                    middle -= timedelta(microseconds=middle.microsecond)
                    if offset(middle) == offset(low):
                        low = middle
                    else:
                        high = middle
                changes.append(high)
            hour = after
    assert len(changes) >= 2 * len(years) - 4, changes  # 1942 and 1945 have one each
    return changes


def test_timestamp_text_equals_spanner_from_year_1_to_9999(spanner_engine: Engine) -> None:
    """The text (and so the shard) of pre-1883 (LMT), year 1..999 and DST-edge instants."""
    instants = edge_instants(random.Random(1883))
    la = ZoneInfo("America/Los_Angeles")
    shard = ShardId("t", shards=2048)
    with spanner_engine.connect() as conn:
        for start in range(0, len(instants), 100):
            chunk = instants[start : start + 100]
            params = {f"t{i}": instant for i, instant in enumerate(chunk)}
            select = ", ".join(
                f"CAST(:{n} AS STRING), MOD(FARM_FINGERPRINT(CAST(:{n} AS STRING)), 2048)"
                for n in params
            )
            row = conn.execute(sa.text(f"SELECT {select}"), params).one()
            for i, instant in enumerate(chunk):
                text, spanner_shard = row[2 * i], row[2 * i + 1]
                assert spanner_string(instant) == text, instant
                assert shard.of(instant) == spanner_shard, instant
                if instant.year > 1:  # the same instant written in another zone
                    assert spanner_string(instant.astimezone(la)) == text, instant
