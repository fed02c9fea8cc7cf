"""COMB GUIDs and UUIDv7: vectors with a frozen clock, order, threads, fork, bad input."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sqlalchemy_seqkeys import (
    CombLayout,
    InvalidGuidError,
    InvalidLayoutError,
    NaiveDatetimeError,
    SeqKeysError,
    TimestampOutOfRangeError,
    comb_timestamp,
    new_comb,
    new_uuid7,
)
from sqlalchemy_seqkeys import comb as comb_module
from tests._helpers import in_forked_child, in_threads, sql_server_key

UTC = timezone.utc
# 2024-01-02T03:04:05.678Z
FROZEN_NS = 1_704_164_645_678_000_000
FROZEN_MS = 1_704_164_645_678
RANDOM = bytes(range(0x10, 0x1A))  # the 10 "random" bytes every call gets


def frozen_source(bits: int, ms_values: list[int] | None = None) -> comb_module._MonotonicSource:
    clock: Callable[[], int]
    if ms_values is None:
        clock = lambda: FROZEN_NS  # noqa: E731 - a one-line fake clock
    else:
        it = iter(ms_values)
        clock = lambda: next(it) * 1_000_000  # noqa: E731
    return comb_module._MonotonicSource(bits, clock_ns=clock, randbytes=fake_randbytes)


def fake_randbytes(n: int) -> bytes:
    """Every 10-byte draw from the source's random block is RANDOM."""
    assert n % 10 == 0
    return RANDOM * (n // 10)


def mint(layout: CombLayout, source: comb_module._MonotonicSource) -> uuid.UUID:
    return comb_module._ENCODERS[layout](*source.next())


# The first value of a millisecond: counter = RANDOM >> 1 (79 random bits)
# = 0x080889098a0a8b0b8c0c; the second adds 1 + (RANDOM & 0xFFFFFFFF)
# = 1 + 0x16171819, giving 0x080889098a0aa122a426. The millisecond is
# 0x018cc820db2e. Worked by hand from the byte definitions in comb.py's docs.
VECTORS = {
    CombLayout.AS_STRING: (
        "018cc820-db2e-0808-8909-8a0a8b0b8c0c",
        "018cc820-db2e-0808-8909-8a0aa122a426",
    ),
    CombLayout.AS_BINARY: (
        "20c88c01-2edb-0808-8909-8a0a8b0b8c0c",
        "20c88c01-2edb-0808-8909-8a0aa122a426",
    ),
    CombLayout.AT_END: (
        "0c8c0b8b-0a8a-0989-0808-018cc820db2e",
        "26a422a1-0a8a-0989-0808-018cc820db2e",
    ),
}


@pytest.mark.parametrize("layout", list(CombLayout))
def test_frozen_clock_vectors(layout: CombLayout) -> None:
    source = frozen_source(80)
    first, second = mint(layout, source), mint(layout, source)
    assert (str(first), str(second)) == VECTORS[layout]
    assert comb_timestamp(first, layout) == datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)


def test_vectors_agree_with_the_byte_definitions() -> None:
    # AS_STRING: timestamp in the first 6 RFC bytes; AS_BINARY: the first 6
    # Microsoft-order bytes; AT_END: bytes 10-15 (the same in both orders).
    ms = FROZEN_MS.to_bytes(6, "big")
    assert uuid.UUID(VECTORS[CombLayout.AS_STRING][0]).bytes[:6] == ms
    assert uuid.UUID(VECTORS[CombLayout.AS_BINARY][0]).bytes_le[:6] == ms
    assert uuid.UUID(VECTORS[CombLayout.AT_END][0]).bytes[10:] == ms
    assert uuid.UUID(VECTORS[CombLayout.AT_END][0]).bytes_le[10:] == ms


@given(
    st.datetimes(
        min_value=datetime(1970, 1, 1), max_value=datetime(9999, 12, 31), timezones=st.just(UTC)
    )
)
def test_comb_timestamp_round_trips_at_millisecond_precision(at: datetime) -> None:
    expected = at.replace(microsecond=at.microsecond // 1000 * 1000)
    for layout in CombLayout:
        assert comb_timestamp(new_comb(layout, at=at), layout) == expected


def test_now_round_trips() -> None:
    before = datetime.now(UTC) - timedelta(milliseconds=1)
    values = {layout: new_comb(layout) for layout in CombLayout}
    after = datetime.now(UTC) + timedelta(milliseconds=1)
    for layout, value in values.items():
        assert before <= comb_timestamp(value, layout) <= after


def test_aware_non_utc_datetime_is_the_same_instant() -> None:
    cet = timezone(timedelta(hours=1))
    at = datetime(2024, 1, 2, 4, 4, 5, 678000, tzinfo=cet)
    value = new_comb("as_string", at=at)
    assert value.int >> 80 == FROZEN_MS
    assert new_comb("as_string", at=FROZEN_MS).int >> 80 == FROZEN_MS


def sort_key(layout: CombLayout) -> Callable[[uuid.UUID], object]:
    if layout is CombLayout.AS_STRING:
        return str  # the text form; the same order as UUID.bytes
    if layout is CombLayout.AS_BINARY:
        return lambda u: u.bytes_le  # memcmp of the Microsoft byte order (RAW, BINARY)
    return sql_server_key


def test_sql_server_order_matches_its_documented_rule() -> None:
    # The documented rule: the last 6 bytes of the text form decide first.
    a = uuid.UUID("ffffffff-ffff-ffff-ffff-000000000001")
    b = uuid.UUID("00000000-0000-0000-0000-000000000002")
    assert sorted([b, a], key=sql_server_key) == [a, b]
    # then the 4th group (bytes 8-9), then 3rd, 2nd, 1st
    c = uuid.UUID("ffffffff-ffff-ffff-0001-000000000000")
    d = uuid.UUID("00000000-0000-0000-0002-000000000000")
    assert sorted([d, c], key=sql_server_key) == [c, d]
    e = uuid.UUID("ffffffff-ffff-0001-0000-000000000000")
    f = uuid.UUID("00000000-0000-0002-0000-000000000000")
    assert sorted([f, e], key=sql_server_key) == [e, f]


@pytest.mark.parametrize("layout", list(CombLayout))
def test_same_millisecond_values_sort_in_minting_order(layout: CombLayout) -> None:
    source = frozen_source(80)
    values = [mint(layout, source) for _ in range(1000)]
    assert sorted(values, key=sort_key(layout)) == values
    assert len(set(values)) == 1000


@pytest.mark.parametrize("layout", list(CombLayout))
def test_real_clock_values_sort_in_minting_order(layout: CombLayout) -> None:
    values = [new_comb(layout) for _ in range(20_000)]
    assert sorted(values, key=sort_key(layout)) == values


def test_clock_stepping_back_keeps_order() -> None:
    source = frozen_source(80, [100, 101, 50, 50, 102, 101])
    pairs = [source.next() for _ in range(6)]
    assert pairs == sorted(pairs)
    assert len(set(pairs)) == 6
    assert [ms for ms, _ in pairs] == [100, 101, 101, 101, 102, 102]


def test_counter_overflow_borrows_the_next_millisecond() -> None:
    source = comb_module._MonotonicSource(
        8, clock_ns=lambda: FROZEN_NS, randbytes=lambda n: b"\xff" * n
    )
    pairs = [source.next() for _ in range(3)]
    # 8-bit counter: fresh = 0x7f, then +1+0xffffffff overflows -> next ms
    assert pairs == [(FROZEN_MS, 0x7F), (FROZEN_MS + 1, 0x7F), (FROZEN_MS + 2, 0x7F)]


@pytest.mark.parametrize(
    ("bits", "clock_ms", "k"),
    [
        (80, [FROZEN_MS], 700),  # across random blocks (256 draws each)
        (80, [FROZEN_MS], 2_500),  # across chunks of the lock (1,024)
        (8, [FROZEN_MS], 5),  # a tiny counter: borrows the next milliseconds
        (80, [FROZEN_MS + 5, FROZEN_MS], 300),  # the clock stepped back since the last call
    ],
    ids=["blocks", "chunks", "overflow", "clock-back"],
)
def test_next_many_gives_what_as_many_next_calls_give(
    bits: int, clock_ms: list[int], k: int
) -> None:
    """An executemany's values, minted at once, are exactly the one-by-one values."""

    def source() -> comb_module._MonotonicSource:
        readings = iter([*clock_ms, *[clock_ms[-1]] * k])
        return comb_module._MonotonicSource(
            bits,
            clock_ns=lambda: next(readings) * 1_000_000,
            randbytes=lambda n: bytes((i * 37 + 11) % 256 for i in range(n)),
        )

    one, many = source(), source()
    if len(clock_ms) > 1:  # the same earlier value in both
        assert one.next() == many.next()
    expected = [one.next() for _ in range(k)]
    got = many.next_many(k)
    assert got == expected
    assert got == sorted(got)
    assert len(set(got)) == k
    assert one.next() == many.next()  # and both go on from the same state


def test_minted_many_at_once_sort_and_never_repeat_across_threads() -> None:
    many = comb_module.comb_minter_many("as_string")
    one = comb_module.comb_minter("as_string")
    results = in_threads(lambda: [*many(300), one()], 4, 50)
    for out in results:
        flat = [v for batch in out for v in batch]
        assert flat == sorted(flat)  # one thread's values increase
    every = [v for out in results for batch in out for v in batch]
    assert len(set(every)) == len(every) == 4 * 50 * 301


def test_a_forked_child_draws_new_random_bytes() -> None:
    calls: list[int] = []

    def counting_randbytes(n: int) -> bytes:
        calls.append(n)
        return os.urandom(n)

    source = comb_module._MonotonicSource(80, randbytes=counting_randbytes)
    source.next()
    source.next()
    assert len(calls) == 1  # one block serves many draws
    source._after_fork_in_child()  # what os.register_at_fork runs in a child
    source.next()
    assert len(calls) == 2  # the child never reuses the parent's block


def test_uuid7_is_rfc9562() -> None:
    values = [new_uuid7() for _ in range(10_000)]
    assert all(v.version == 7 and v.variant == uuid.RFC_4122 for v in values)
    assert values == sorted(values)
    assert len(set(values)) == len(values)
    now_ms = int(datetime.now(UTC).timestamp() * 1000)
    assert abs((values[-1].int >> 80) - now_ms) < 5_000


@pytest.mark.parametrize("mint_one", [lambda: new_comb("as_string"), new_uuid7])
def test_threads_mint_unique_values_each_thread_in_order(mint_one: Callable[[], uuid.UUID]) -> None:
    per_thread = 20_000
    results = in_threads(mint_one, 8, per_thread)
    every = [v for out in results for v in out]
    assert len(set(every)) == 8 * per_thread
    for out in results:
        assert out == sorted(out)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork() is POSIX-only")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # fork() with threads alive (pytest's)
def test_fork_child_keeps_order_and_shares_nothing_with_parent() -> None:
    for layout_name in ("as_string", "at_end"):
        layout = CombLayout(layout_name)
        before = [new_comb(layout) for _ in range(100)]
        parent_values: list[uuid.UUID] = []
        output = in_forked_child(
            lambda layout=layout: "\n".join(str(new_comb(layout)) for _ in range(2000)),
            lambda layout=layout, out=parent_values: out.extend(
                new_comb(layout) for _ in range(2000)
            ),
        )
        child_values = [uuid.UUID(s) for s in output.split("\n")]
        key = sort_key(layout)
        assert len(child_values) == 2000
        # the child's values follow everything it inherited, in minting order
        assert sorted(before + child_values, key=key) == before + child_values
        assert sorted(before + parent_values, key=key) == before + parent_values
        assert not set(child_values) & set(parent_values)


def test_bad_layout() -> None:
    with pytest.raises(InvalidLayoutError, match="'as_text' is not a COMB layout; use one of"):
        new_comb("as_text")
    with pytest.raises(InvalidLayoutError):
        comb_timestamp(uuid.uuid4(), "sideways")
    with pytest.raises(InvalidLayoutError):
        CombLayout.coerce("nope")


def test_naive_datetime() -> None:
    with pytest.raises(NaiveDatetimeError, match="has no timezone"):
        new_comb(CombLayout.AS_STRING, at=datetime(2024, 1, 1))


def test_timestamp_out_of_range() -> None:
    with pytest.raises(TimestampOutOfRangeError, match="48-bit"):
        new_comb("as_string", at=datetime(1969, 12, 31, tzinfo=UTC))
    with pytest.raises(TimestampOutOfRangeError):
        new_comb("as_string", at=1 << 48)
    with pytest.raises(TimestampOutOfRangeError):
        new_comb("as_string", at=-1)
    # a value whose "timestamp" is past datetime's range: not a COMB of that layout
    with pytest.raises(TimestampOutOfRangeError, match="probably not minted with layout"):
        comb_timestamp(uuid.UUID("ffffffff-ffff-4fff-bfff-ffffffffffff"), "as_string")


def test_wrong_types() -> None:
    with pytest.raises(InvalidGuidError, match=r"needs a uuid\.UUID, not str"):
        comb_timestamp("018cc7ec-4e2e-0808-8909-098a0a8b0b0c", "as_string")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="aware datetime or Unix milliseconds"):
        new_comb("as_string", at=1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        new_comb("as_string", at=True)
    assert issubclass(InvalidGuidError, SeqKeysError)


def test_a_bad_at_raises_a_seqkeys_error() -> None:
    # comb.py raises only SeqKeysError subclasses; this one is a TypeError too
    from sqlalchemy_seqkeys import InvalidTimestampError

    for bad in (1.5, True, "2024-01-01"):
        with pytest.raises(InvalidTimestampError, match="aware datetime or Unix milliseconds"):
            new_comb("as_string", at=bad)  # type: ignore[arg-type]
    assert issubclass(InvalidTimestampError, SeqKeysError)
    assert issubclass(InvalidTimestampError, TypeError)
