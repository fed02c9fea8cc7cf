"""BitReversed keys through the ORM on every engine, alone and in a composite key."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from sqlalchemy_seqkeys import (
    BitReversed,
    InvalidBitReversalError,
    TableSequence,
    reverse_bits,
    sequences_table,
)

pytestmark = pytest.mark.backend


def make_models(default: BitReversed) -> tuple[type[Any], type[Any], sa.MetaData]:
    class Base(DeclarativeBase):
        pass

    class Single(Base):
        __tablename__ = "seqkeys_br_single"
        id: Mapped[int] = mapped_column(
            sa.BigInteger, primary_key=True, default=default, autoincrement=False
        )
        note: Mapped[str] = mapped_column(sa.String(20))

    class Composite(Base):
        __tablename__ = "seqkeys_br_composite"
        tenant: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, autoincrement=False)
        id: Mapped[int] = mapped_column(
            sa.BigInteger, primary_key=True, default=default, autoincrement=False
        )

    sequences_table(Base.metadata)
    return Single, Composite, Base.metadata


@pytest.mark.parametrize("mode", ["in_transaction", "async_batch"])
def test_bit_reversed_table_sequence(engine: Engine, mode: str) -> None:
    counter = TableSequence("br_counter", mode=mode, batch_size=20, low_watermark=5)
    single, composite, metadata = make_models(BitReversed(counter))
    metadata.drop_all(engine)
    metadata.create_all(engine)
    counter.create(engine)
    try:
        with Session(engine) as session:
            session.add_all(single(note=str(i)) for i in range(30))
            session.add_all(composite(tenant=i % 3) for i in range(30))
            session.commit()
            ids = session.scalars(sa.select(single.id)).all()
            composite_ids = session.scalars(sa.select(composite.id)).all()
        counters = sorted(reverse_bits(v) for v in ids + composite_ids)
        assert len(set(counters)) == 60
        if mode == "in_transaction":
            assert counters == list(range(1, 61))  # the counters 1..60, reversed
        assert max(ids) > 2**61  # spread over the top of the key space
    finally:
        metadata.drop_all(engine)


def test_bit_reversed_native_sequence(engine: Engine) -> None:
    sequence = sa.Sequence("seqkeys_br_native")
    single, _, metadata = make_models(BitReversed(sequence))
    if not engine.dialect.supports_sequences:
        metadata.drop_all(engine)
        metadata.create_all(engine)
        try:
            with Session(engine) as session:
                session.add(single(note="x"))
                with pytest.raises(sa.exc.StatementError) as info:
                    session.flush()
            assert isinstance(info.value.orig, InvalidBitReversalError)
            assert "wrap a TableSequence" in str(info.value)
        finally:
            metadata.drop_all(engine)
        return
    sequence.drop(engine, checkfirst=True)
    sequence.create(engine)
    metadata.drop_all(engine)
    metadata.create_all(engine)
    try:
        with Session(engine) as session:
            session.add_all(single(note=str(i)) for i in range(5))
            session.commit()
            ids = sorted(session.scalars(sa.select(single.id)).all())
        # the same values on every engine: Spanner's own reversal, or ours
        assert ids == sorted(reverse_bits(c) for c in range(1, 6))
    finally:
        metadata.drop_all(engine)
        sequence.drop(engine, checkfirst=True)
