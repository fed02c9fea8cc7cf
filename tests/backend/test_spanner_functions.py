"""The Python implementations equal Spanner's own functions, on the emulator."""

from __future__ import annotations

import random
import string

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import farm_fingerprint, reverse_bits, shard_of


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
