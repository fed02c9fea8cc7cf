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
