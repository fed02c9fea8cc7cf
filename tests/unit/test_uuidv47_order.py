"""What a UuidV47 public id shows of its key, as docs/ids-in-apis.md states it.

UuidV47 keeps the reference uuidv47.h format (its vectors: tests/unit/test_opaque.py):
only the 48-bit timestamp is masked, the 74 bits after it are the key's own. So the
counter new_uuid7 keeps there shows in the public ids of one millisecond (their order
and count), and the page says so; its remedy, keys of 74 fresh random bits, shows none.
"""

from __future__ import annotations

import itertools
import random
import re
import time
import uuid
from typing import Any

import pytest

from sqlalchemy_seqkeys import UuidV47, uuid7_timestamp
from sqlalchemy_seqkeys.uuid7 import _Uuid7Generator
from tests._markdown import ROOT, code_blocks

PAGE = ROOT / "docs" / "ids-in-apis.md"
KEY = bytes(range(16))
RANDOM_BITS = ((1 << 80) - 1) & ~(0xF << 76)  # rand_a, the variant, rand_b
RAND_74 = RANDOM_BITS & ~(0b11 << 62)  # rand_a and rand_b


def _counter(guid: uuid.UUID) -> int:
    """The 42 bits new_uuid7 counts in: rand_a (12) and the top 30 of rand_b."""
    return (guid.int >> 64 & 0xFFF) << 30 | (guid.int >> 32 & 0x3FFF_FFFF)


def _section() -> str:
    text = PAGE.read_text(encoding="utf-8")
    return text.split("## Hiding creation time\n", 1)[1].split("\n### ", 1)[0]


def _remedy() -> Any:
    """The page's ``uuid7_random``, from the python block that defines it."""
    blocks = [b for b in code_blocks(PAGE) if "def uuid7_random(" in b.code]
    assert len(blocks) == 1, "docs/ids-in-apis.md defines uuid7_random in one python block"
    namespace: dict[str, Any] = {}
    exec(compile(blocks[0].code, str(PAGE), "exec"), namespace)  # the page's own block
    return namespace["uuid7_random"]


def test_a_public_id_keeps_the_keys_74_bits_after_the_timestamp() -> None:
    # the reference format: what the page says stays visible
    public_ids = UuidV47(KEY)
    rng = random.Random(47)
    for _ in range(500):
        key = uuid.UUID(int=rng.getrandbits(128) & ~(0xF << 76 | 0b11 << 62) | 7 << 76 | 2 << 62)
        shown = public_ids.encode(key)
        assert shown.int & RANDOM_BITS == key.int & RANDOM_BITS
        assert public_ids.decode(shown) == key


def test_the_public_ids_of_one_executemany_show_order_and_count() -> None:
    # what the page now states: an executemany's rows share one clock reading, so their
    # counters are c, c+1, ...; an outsider sorts the public ids back into creation order
    clock = 1_800_000_000_000_000_000
    keys = _Uuid7Generator(clock_ns=lambda: clock).mint_many(300)
    public_ids = UuidV47(KEY)
    shown = [public_ids.encode(k) for k in keys]
    random.Random(1).shuffle(shown)
    in_order = sorted(shown, key=_counter)  # no secret used
    assert [public_ids.decode(p) for p in in_order] == keys
    assert _counter(in_order[-1]) - _counter(in_order[0]) + 1 == len(keys)


def test_the_page_states_what_stays_visible() -> None:
    section = _section()
    flat = " ".join(section.split())
    # before: "What it protects against: reading the creation time, the creation order and
    # the rate of creation", and "a UUID that looks like a random version 4 one"
    assert "looks like a random version 4" not in flat
    assert not re.search(r"protects against: reading the creation time, the creation order", flat)
    for needed in ("within one millisecond", "new_uuid7", "uuidv7()", "UUID_v7()", "counter"):
        assert needed in flat, needed


def test_the_pages_remedy_mints_uuid7_keys_whose_public_ids_show_no_order() -> None:
    uuid7_random = _remedy()
    before = time.time_ns() // 1_000_000
    keys = [uuid7_random() for _ in range(4000)]
    after = time.time_ns() // 1_000_000
    assert len(set(keys)) == len(keys)
    for key in keys:
        assert (key.version, key.variant) == (7, uuid.RFC_4122)
        assert before <= key.int >> 80 <= after
    assert uuid7_timestamp(keys[0]).year >= 2026
    # each of the 74 bits is fresh: about half the keys have it set (n=4000, sd ~ 32)
    assert bin(RAND_74).count("1") == 74
    for bit in range(80):
        if (RAND_74 >> bit) & 1:
            ones = sum(k.int >> bit & 1 for k in keys)
            assert 1700 < ones < 2300, (bit, ones)
    public_ids = UuidV47(KEY)
    shown = [public_ids.encode(k) for k in keys]
    assert [public_ids.decode(p) for p in shown] == keys
    assert sum(_counter(b) - _counter(a) == 1 for a, b in itertools.pairwise(shown)) == 0


@pytest.mark.parametrize("n", [1, 100])
def test_the_pages_remedy_is_a_column_default(n: int) -> None:
    import sqlalchemy as sa

    from sqlalchemy_seqkeys import CombGuid

    uuid7_random = _remedy()
    table = sa.Table(
        "orders",
        sa.MetaData(),
        sa.Column("id", CombGuid(), primary_key=True, default=uuid7_random),
        sa.Column("n", sa.Integer),
    )
    engine = sa.create_engine("sqlite://")
    table.metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(table.insert(), [{"n": i} for i in range(n)])
        keys = conn.execute(sa.select(table.c.id)).scalars().all()
    engine.dispose()
    assert len(set(keys)) == n
    assert all(k.version == 7 for k in keys)
