"""next_values() keeps its documented order when two threads run out of a block at once.

The thread whose nextval answers late installs a lower block behind the current one;
one call's keys still come back in order: PooledSequence's ascending,
BitReversedSequence's in ascending counter order.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import BitReversedSequence, PooledSequence, reverse_bits

pytestmark = pytest.mark.backend

SIZE = 5


@pytest.fixture(params=["postgresql", "mysql"])
def server_engine(request: pytest.FixtureRequest, engines: Any) -> Iterator[Engine]:
    """A pool of its own, so that the listener below sees this test's statements only."""
    engine = sa.create_engine(engines.get(request.param).url)
    yield engine
    engine.dispose()


def two_threads_run_out_at_once(engine: Engine, take_one: Callable[[], int]) -> None:
    """Thread "slow" fetches a block whose answer is held back until this thread has
    fetched the next one: the late, lower block is installed behind it."""
    answered, release = threading.Event(), threading.Event()

    def late(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if "nextval" in statement.lower() and threading.current_thread().name == "slow":
            answered.set()
            release.wait(10)

    sa.event.listen(engine, "after_cursor_execute", late)
    try:
        slow = threading.Thread(target=take_one, name="slow")
        slow.start()
        try:
            assert answered.wait(10)
            take_one()  # runs out too, fetches the block after the slow thread's
        finally:
            release.set()
            slow.join()
    finally:
        sa.event.remove(engine, "after_cursor_execute", late)


def test_pooled_next_values_are_ascending(server_engine: Engine) -> None:
    engine = server_engine
    sequence = PooledSequence("seqkeys_order_pooled", batch_size=SIZE)
    sequence.drop(engine, checkfirst=True)
    sequence.create(engine)
    try:
        assert sequence.next_values(engine, SIZE) == [1, 2, 3, 4, 5]  # the first block used up
        two_threads_run_out_at_once(engine, lambda: sequence.next_value(engine))
        keys = sequence.next_values(engine, 2 * (SIZE - 1))  # the rest of both blocks
        assert keys == sorted(keys)
        assert keys == [7, 8, 9, 10, 12, 13, 14, 15]
    finally:
        sequence.drop(engine)


def test_bit_reversed_next_values_are_in_counter_order(server_engine: Engine) -> None:
    engine = server_engine
    sequence = BitReversedSequence("seqkeys_order_bitrev", batch_size=SIZE)
    sequence.drop(engine, checkfirst=True)
    sequence.create(engine)
    try:
        first = sequence.next_values(engine, SIZE)
        assert [reverse_bits(v) for v in first] == [1, 2, 3, 4, 5]
        two_threads_run_out_at_once(engine, lambda: sequence.next_value(engine))
        values = sequence.next_values(engine, 2 * (SIZE - 1))
        counters = [reverse_bits(v) for v in values]
        assert counters == sorted(counters)
        assert counters == [7, 8, 9, 10, 12, 13, 14, 15]
    finally:
        sequence.drop(engine)
