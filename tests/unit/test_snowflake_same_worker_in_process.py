"""Generators of one process with the same fixed worker id (and layout): one made after
another was dropped, or two alive at once, with the real clock or one ahead of it, never
mint an id twice (the later one starts after the last tick any of them minted)."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

import pytest

from sqlalchemy_seqkeys import SeqKeysError, Snowflake, SnowflakeLayout, rotate_digits


def _ahead(ms: int) -> Callable[[], int]:
    def clock() -> int:
        return time.time_ns() + ms * 1_000_000

    return clock


def _assert_unique(ids: list[int]) -> None:
    assert len(set(ids)) == len(ids), f"{len(ids) - len(set(ids))} ids minted twice"


def test_a_generator_made_again_after_the_first_was_dropped_repeats_no_id() -> None:
    every: list[int] = []
    for _ in range(200):
        first = Snowflake(worker_id=3)
        every += [first() for _ in range(50)]
        del first
        gc.collect()
        second = Snowflake(worker_id=3)
        every += [second() for _ in range(50)]
        del second
    _assert_unique(every)


def test_two_generators_alive_at_once_with_one_worker_id_repeat_no_id() -> None:
    first, second = Snowflake(worker_id=4), Snowflake(worker_id=4)
    every: list[int] = []
    for _ in range(2000):
        every += [first(), second(), second()]
    _assert_unique(every)
    assert {first.decode(v).worker_id for v in every} == {4}


def test_a_generator_made_while_another_lives_repeats_none_of_its_ids() -> None:
    every: list[int] = []
    keep = []
    for _ in range(100):
        generator = Snowflake(worker_id=5)
        keep.append(generator)
        every += [generator() for _ in range(30)]
    every += [g() for g in keep for _ in range(3)]
    _assert_unique(every)


def test_a_clock_ahead_then_the_real_clock_after_the_first_was_dropped() -> None:
    ahead = Snowflake(worker_id=6, clock=_ahead(300))
    first = [ahead() for _ in range(3000)]
    del ahead
    gc.collect()
    real = Snowflake(worker_id=6)
    later: list[int] = []
    end = time.monotonic() + 0.6
    while time.monotonic() < end:
        later.append(real())
    _assert_unique(first + later)


def test_two_generators_with_different_clocks_alive_at_once() -> None:
    ahead = Snowflake(worker_id=7, clock=_ahead(20))
    real = Snowflake(worker_id=7)
    every: list[int] = []
    for _ in range(10):
        every += [ahead() for _ in range(500)]
        every += [real() for _ in range(500)]
    _assert_unique(every)


def test_other_layouts_and_worker_ids_are_not_held_back() -> None:
    # a layout of its own: another sequence, its ids unaffected by worker id 8 of the default
    wide = SnowflakeLayout(sequence_bits=13, worker_bits=9)
    one, other = Snowflake(worker_id=8), Snowflake(worker_id=8, layout=wide)
    assert one.decode(one()).worker_id == 8
    assert other.decode(other()).worker_id == 8
    assert Snowflake(worker_id=9).decode(Snowflake(worker_id=9)()).worker_id == 9


def _at(base_ns: int, offset_ms: int) -> Callable[[], int]:
    """A frozen clock ``offset_ms`` after ``base_ns``."""
    return lambda: base_ns + offset_ms * 1_000_000


def test_ticks_stay_minted_when_more_than_32_spans_merge() -> None:
    # past 32 spans of ticks the two closest merge; a new span merged with the next one
    # was cut back to its own tick, freeing the next one's ticks: a generator at that
    # instant again minted the same id
    base = time.time_ns()
    kept = [Snowflake(worker_id=3, clock=_at(base, k * 2000)) for k in range(1, 34)]
    every = [generator() for generator in kept]  # 33 spans, 2 s apart
    victim = 80_000
    kept.append(Snowflake(worker_id=3, clock=_at(base, victim)))
    every.append(kept[-1]())
    kept.append(Snowflake(worker_id=3, clock=_at(base, victim - 1100)))  # merged into it
    every.append(kept[-1]())
    kept.append(Snowflake(worker_id=3, clock=_at(base, victim)))  # the victim's instant
    with pytest.raises(SeqKeysError, match="does not advance"):
        kept[-1]()  # its tick is taken, and its frozen clock never passes it: no id
    _assert_unique(every)


def test_a_worker_id_taken_back_is_transformed_once() -> None:
    # a generator whose fixed worker id another generator (another clock) took over
    # takes it back at its next call: that id went through transform twice
    first = Snowflake(worker_id=5, transform=rotate_digits)
    assert first.decode(first()).worker_id == 5
    Snowflake(worker_id=5, clock=_ahead(0))()  # another clock: takes worker id 5 over
    taken_back = first()
    decoded = first.decode(taken_back)
    assert decoded.worker_id == 5, decoded
    assert abs(decoded.timestamp.timestamp() - time.time()) < 60, decoded
