"""BitReversedSequence: the same 1,000 values as Spanner's on every engine, and in the ORM."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from sqlalchemy_seqkeys import (
    BitReversedSequence,
    SequenceAllocationError,
    SequenceExhaustedError,
    reverse_bits,
    sequences_table,
)

pytestmark = pytest.mark.backend

START = 1000
# about one value in five of the first thousand falls in here, so the counters
# that would give them must be consumed, as Spanner consumes them
SKIP = (2**60, 2**61 + 2**59)
COUNT = 1000


def model(start: int, skip: tuple[int, int], n: int) -> list[int]:
    """What the sequence should hand out, computed from the definition alone."""
    low, high = skip
    values = (reverse_bits(c) for c in itertools.count(start))
    return list(itertools.islice((v for v in values if not low <= v <= high), n))


def take(engine: Engine, name: str, n: int, batch_size: int = 1) -> list[int]:
    sequence = BitReversedSequence(name, start=START, skip_range=SKIP, batch_size=batch_size)
    sequence.drop(engine, checkfirst=True)
    sequence.create(engine)
    try:
        with engine.begin() as conn:
            return [sequence.next_value(conn) for _ in range(n)]
    finally:
        sequence.drop(engine)


@pytest.fixture(scope="module")
def spanner_values(engines: Any) -> list[int]:
    """The first 1,000 values of the native sequence, as the emulator hands them out."""
    return take(engines.get("spanner"), "seqkeys_brs_reference", COUNT)


def test_the_emulator_skips_like_the_model(spanner_values: list[int]) -> None:
    expected = model(START, SKIP, COUNT)
    assert spanner_values == expected
    consumed = reverse_bits(expected[-1]) - START + 1  # counters used, skipped ones included
    assert consumed - COUNT > 150  # the skip range really was exercised


@pytest.mark.parametrize("batch_size", [1, 7])
def test_same_values_as_spanner(engine: Engine, spanner_values: list[int], batch_size: int) -> None:
    """One value per statement, or blocks of 7 counters: the emulator's values, in order."""
    assert take(engine, "seqkeys_brs_check", COUNT, batch_size) == spanner_values


@pytest.fixture
def models(engine: Engine) -> Iterator[tuple[type[Any], type[Any], Any]]:
    class Base(DeclarativeBase):
        pass

    sequences_table(Base.metadata)  # used on the engines without sequences
    counter = BitReversedSequence(
        "seqkeys_order_id", start=5, skip_range=(1, 2**61), metadata=Base.metadata
    )

    class Order(Base):
        __tablename__ = "seqkeys_brs_orders"
        id: Mapped[int] = mapped_column(
            sa.BigInteger, primary_key=True, default=counter, autoincrement=False
        )
        note: Mapped[str] = mapped_column(sa.String(20))

    class Line(Base):
        __tablename__ = "seqkeys_brs_lines"
        order_id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, autoincrement=False)
        id: Mapped[int] = mapped_column(
            sa.BigInteger, primary_key=True, default=counter, autoincrement=False
        )

    Base.metadata.drop_all(engine)
    Base.metadata.create_all(engine)
    try:
        yield Order, Line, counter
    finally:
        Base.metadata.drop_all(engine)


def test_orm_primary_key_and_composite_key(
    engine: Engine, models: tuple[type[Any], type[Any], Any]
) -> None:
    order, line, _ = models
    with Session(engine) as session:
        orders = [order(note=str(i)) for i in range(10)]
        session.add_all(orders)
        session.flush()
        session.add_all(line(order_id=o.id) for o in orders for _ in range(2))
        session.commit()
        ids = [o.id for o in orders]
        line_ids = session.scalars(sa.select(line.id)).all()
    everything = ids + list(line_ids)
    assert len(set(everything)) == 30
    # drawn in order from one sequence: the model's first 30 values, in flush order
    assert ids == model(5, (1, 2**61), 30)[:10]
    assert sorted(everything) == sorted(model(5, (1, 2**61), 30))
    assert min(everything) > 2**61  # the skip range is honoured


def test_drop_all_removes_the_sequence(engine: Engine) -> None:
    metadata = sa.MetaData()
    sequences_table(metadata)
    sequence = BitReversedSequence("seqkeys_brs_gone", metadata=metadata)
    metadata.drop_all(engine)
    metadata.create_all(engine)
    first = sequence.next_value(engine)
    assert first == reverse_bits(1)
    metadata.create_all(engine)  # checkfirst: a second create_all changes nothing
    assert sequence.next_value(engine) == reverse_bits(2)
    metadata.drop_all(engine)
    with engine.connect() as conn:
        inspector = sa.inspect(conn)
        if engine.dialect.supports_sequences:
            assert not inspector.has_sequence("seqkeys_brs_gone")
        else:
            assert not inspector.has_table("sequences")


def test_a_skip_range_over_everything_is_reported(engine: Engine) -> None:
    sequence = BitReversedSequence("seqkeys_brs_all", skip_range=(0, 2**63 - 1))
    sequence.drop(engine, checkfirst=True)
    sequence.create(engine)
    try:
        # Spanner checks the skip range itself and says the sequence is exhausted
        match = "has no value left" if dialect_is_spanner(engine) else "covers nearly all"
        with pytest.raises(SequenceExhaustedError, match=match):
            sequence.next_value(engine)
    finally:
        sequence.drop(engine)


def dialect_is_spanner(engine: Engine) -> bool:
    return engine.dialect.name.startswith("spanner")


@pytest.mark.parametrize("batch_size", [1, 5])
def test_a_failing_native_sequence_is_a_seqkeys_error(engine: Engine, batch_size: int) -> None:
    """The server's error on the native nextval comes as a SeqKeysError, its cause kept."""
    if not engine.dialect.supports_sequences:
        pytest.skip("no native sequence here: the sequences table's errors are tested elsewhere")
    sequence = BitReversedSequence("br_gone", batch_size=batch_size)
    sequence.create(engine, checkfirst=True)
    sequence.drop(engine)  # a migration dropped it under a running process
    with engine.connect() as conn, pytest.raises(SequenceAllocationError) as info:
        sequence.next_value(conn)
    assert isinstance(info.value.__cause__, sa.exc.DBAPIError)
    assert "br_gone" in str(info.value)
