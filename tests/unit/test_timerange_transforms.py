"""snowflake_bounds under a transform: bounds only where the transform is known to keep order.

A range ``lo <= id < hi`` holds a time window's ids only when the transform is
strictly increasing. A keyed permutation (``OpaqueBigint.encode``) maps the two
bounds in order about half the time, and then the range holds a few percent of
the window's ids: no error would show it. So every transform the library does
not know to keep order is refused, before it is called; none and an offset
(``functools.partial(int.__add__, n)``) are kept.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlalchemy_seqkeys import (
    InvalidSnowflakeError,
    OpaqueBigint,
    SeqKeysError,
    Snowflake,
    SnowflakeLayout,
    reverse_bits,
    rotate_digits,
    snowflake_bounds,
)

UTC = timezone.utc
UNIX = datetime(1970, 1, 1, tzinfo=UTC)
T0 = datetime(2025, 1, 1, tzinfo=UTC)
WINDOW = (T0, T0 + timedelta(seconds=1))


def ns(instant: datetime) -> int:
    return (instant - UNIX) // timedelta(microseconds=1) * 1000


def mint_around() -> list[tuple[int, datetime]]:
    """Ids (untransformed) minted every 0.3 ms from 10 ms before the window to 10 ms after
    it, each with its decoded instant."""
    now = [0]
    ids = Snowflake(worker_id=7, clock=lambda: now[0])
    minted = []
    start, end = WINDOW[0] - timedelta(milliseconds=10), WINDOW[1] + timedelta(milliseconds=10)
    step = timedelta(microseconds=300)
    while start < end:
        now[0] = ns(start)
        key = ids()
        minted.append((key, ids.decode(key).timestamp))
        start += step
    return minted


# -- keyed permutations and other transforms not known to keep order -----------------------


@pytest.mark.parametrize("key", range(4))
def test_a_snowflake_encoded_with_opaque_bigint_is_refused(key: int) -> None:
    public = OpaqueBigint(bytes([key]) * 32)
    ids = Snowflake(worker_id=3, transform=public.encode)
    with pytest.raises(InvalidSnowflakeError, match=r"OpaqueBigint\.encode") as caught:
        snowflake_bounds(*WINDOW, ids)
    message = str(caught.value)
    assert "keyed permutation" in message
    assert "untransformed" in message  # what to do instead
    assert isinstance(caught.value, SeqKeysError)


@given(key=st.binary(min_size=32, max_size=32), tweak=st.binary(max_size=8))
@settings(max_examples=25, deadline=None)
def test_every_opaque_bigint_key_is_refused(key: bytes, tweak: bytes) -> None:
    # about half the keys happen to map the two bounds in order
    public = OpaqueBigint(key, tweak=tweak)
    for transform in (public.encode, public.decode):
        with pytest.raises(InvalidSnowflakeError, match="no id range"):
            snowflake_bounds(*WINDOW, transform=transform)
        with pytest.raises(InvalidSnowflakeError, match="no id range"):
            snowflake_bounds(*WINDOW, Snowflake(worker_id=1, transform=transform))


def swap_neighbour_ms(value: int) -> int:
    # swaps each pair of neighbouring milliseconds: the bounds of a window of 2 ms or
    # more stay in order, yet ids at its edges move out of (or into) it
    return value ^ (1 << 22)


@pytest.mark.parametrize(
    "transform",
    [
        swap_neighbour_ms,
        lambda v: v + 1,  # keeps order, but nothing can tell
        functools.partial(operator.add, 0.5),  # a float offset: not an id
        functools.partial(int.__add__, True),  # a bool is not an offset
        functools.partial(operator.sub, 10**17),  # decreasing
        functools.partial(int.__mul__, 3),
        (3).__mul__,
        abs,
    ],
    ids=["swap-ms", "lambda", "float-offset", "bool-offset", "sub", "mul", "int-mul", "abs"],
)
def test_transforms_not_known_to_keep_order_are_refused(transform: Callable[[int], int]) -> None:
    with pytest.raises(InvalidSnowflakeError, match="not known to keep order") as caught:
        snowflake_bounds(*WINDOW, transform=transform)
    assert "snowflake_bounds(start, end, layout)" in str(caught.value)  # the way out


def test_a_refused_transform_is_not_called() -> None:
    calls: list[int] = []

    def recording(value: int) -> int:
        calls.append(value)
        return value

    with pytest.raises(InvalidSnowflakeError, match="not known to keep order"):
        snowflake_bounds(*WINDOW, transform=recording)
    assert calls == []


def test_in_order_bounds_of_a_swap_would_miss_ids_of_the_window() -> None:
    # why an in-order pair of bounds proves nothing: the window's ids fall outside them
    lo, hi = (swap_neighbour_ms(b) for b in snowflake_bounds(*WINDOW))
    assert lo < hi
    in_window = [swap_neighbour_ms(k) for k, t in mint_around() if WINDOW[0] <= t < WINDOW[1]]
    assert [k for k in in_window if not lo <= k < hi]


# -- transforms known to keep order -------------------------------------------------------


@pytest.mark.parametrize(
    "transform",
    [
        None,
        functools.partial(int.__add__, 10**17),
        functools.partial(operator.add, 10**17),
        functools.partial(operator.add, -(10**6)),
        (10**17).__add__,
    ],
    ids=["none", "int-add", "operator-add", "negative-offset", "bound-add"],
)
def test_order_keeping_transforms_give_exactly_the_window(
    transform: Callable[[int], int] | None,
) -> None:
    apply = transform or (lambda v: v)
    lo, hi = snowflake_bounds(*WINDOW, Snowflake(worker_id=7, transform=transform))
    assert (lo, hi) == snowflake_bounds(*WINDOW, SnowflakeLayout(), transform=transform)
    minted = [(apply(k), t) for k, t in mint_around()]
    inside = [k for k, _ in minted if lo <= k < hi]
    assert inside == [k for k, t in minted if WINDOW[0] <= t < WINDOW[1]]
    assert 3000 < len(inside) < len(minted)  # 1 s of ids every 0.3 ms, of 1.02 s


@pytest.mark.parametrize(
    "transform", [rotate_digits, reverse_bits], ids=["rotate-digits", "reverse-bits"]
)
def test_the_librarys_own_scattering_transforms_keep_their_reason(
    transform: Callable[[int], int],
) -> None:
    with pytest.raises(InvalidSnowflakeError, match=r"scatter|far apart") as caught:
        snowflake_bounds(*WINDOW, transform=transform)
    assert "untransformed" in str(caught.value)
