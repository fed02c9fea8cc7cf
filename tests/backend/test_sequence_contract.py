"""The three sequence classes keep one contract: the same option names, methods and results.

``TableSequence``, ``PooledSequence`` and ``BitReversedSequence`` take ``start`` and
``batch_size``, and ``create``/``drop`` (bool), ``next_value`` (int), ``next_values``
(list of int), their ``*_async`` twins and ``metadata=``/``attach`` behave alike on every
engine, sync and async (docs/reference/sequences.md, "The shared contract"). The factories
of version 0.2 and the aliases of the option names keep working.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import (
    BitReversedSequence,
    InvalidBitReversalError,
    InvalidSequenceError,
    PooledSequence,
    SequenceExistsError,
    SequenceNotFoundError,
    TableSequence,
    bit_reversed_sequence,
    pooled_sequence,
    reverse_bits,
    sequences_table,
)
from sqlalchemy_seqkeys.sequences._contract import KeySequence
from tests._helpers import fresh_table
from tests.conftest import AsyncDatabase

pytestmark = pytest.mark.backend

#: each class, made with the contract's option names
MAKERS: dict[str, Callable[..., Any]] = {
    "TableSequence": lambda name, **kw: TableSequence(name, mode="batch", **kw),
    "PooledSequence": PooledSequence,
    "BitReversedSequence": BitReversedSequence,
}
CLASSES = [TableSequence, PooledSequence, BitReversedSequence]
METHODS = [
    "create",
    "drop",
    "next_value",
    "next_values",
    "create_async",
    "drop_async",
    "next_value_async",
    "next_values_async",
    "attach",
]


def _first_values(kind: str, start: int, n: int) -> list[int]:
    """What a sequence made with ``start`` hands out first (its values in counter order)."""
    counters = list(range(start, start + n))
    return [reverse_bits(c) for c in counters] if kind == "BitReversedSequence" else counters


@pytest.fixture
def seq_engine(engine: Engine) -> Iterator[Engine]:
    with fresh_table(engine, sequences_table):
        yield engine


# -- the signatures ---------------------------------------------------------------------


def _shape(fn: Callable[..., Any]) -> list[tuple[str, Any, Any]]:
    """The parameters (after self) a caller relies on: name, kind, default; keyword-only
    parameters a class adds beyond the contract (an older name) are left out."""
    params = list(inspect.signature(fn).parameters.values())[1:]
    return [(p.name, p.kind, p.default) for p in params]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
@pytest.mark.parametrize("method", METHODS)
def test_every_class_has_the_method_with_the_contract_s_signature(cls: type, method: str) -> None:
    ours = inspect.signature(getattr(cls, method))
    theirs = inspect.signature(getattr(KeySequence, method))
    assert ours.return_annotation == theirs.return_annotation, (cls, method)
    expected = _shape(getattr(KeySequence, method))
    got = _shape(getattr(cls, method))[: len(expected)]
    # the protocol leaves defaults open (...): the contract's is checkfirst=False
    expected = [(n, k, False if d is Ellipsis else d) for n, k, d in expected]
    assert got == expected, (cls, method)
    extra = _shape(getattr(cls, method))[len(expected) :]
    assert all(kind is inspect.Parameter.KEYWORD_ONLY for _, kind, _ in extra)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_class_takes_start_batch_size_and_metadata(cls: type) -> None:
    params = inspect.signature(cls).parameters
    for name in ("start", "batch_size", "metadata"):
        assert name in params, (cls, name)
    sequence = MAKERS[cls.__name__]("seqkeys_contract_shape", start=7, batch_size=3)
    assert isinstance(sequence, KeySequence)
    assert (sequence.start, sequence.batch_size) == (7, 3)


# -- aliases and the deprecated factories ---------------------------------------------------


def test_allocation_size_is_an_alias_of_batch_size() -> None:
    sequence = PooledSequence("seqkeys_contract_alias", allocation_size=20)
    assert sequence.batch_size == sequence.allocation_size == 20
    with pytest.raises(InvalidSequenceError, match="not both"):
        PooledSequence("seqkeys_contract_alias", 20, allocation_size=20)


def test_start_with_counter_is_an_alias_of_start() -> None:
    sequence = BitReversedSequence("seqkeys_contract_alias", start_with_counter=9)
    assert sequence.start == sequence.start_with_counter == 9
    with pytest.raises(InvalidBitReversalError, match="not both"):
        BitReversedSequence("seqkeys_contract_alias", start=9, start_with_counter=9)


def test_pooled_sequence_is_deprecated_and_gives_the_same_object() -> None:
    with pytest.deprecated_call(match=r"PooledSequence\('seqkeys_x', batch_size=20"):
        sequence = pooled_sequence("seqkeys_x", 20, start=5)
    assert type(sequence) is PooledSequence
    assert (sequence.batch_size, sequence.start) == (20, 5)


def test_bit_reversed_sequence_is_deprecated_and_gives_the_same_object() -> None:
    with pytest.deprecated_call(match=r"BitReversedSequence\('seqkeys_x', start=5"):
        sequence = bit_reversed_sequence("seqkeys_x", start_with_counter=5, batch_size=4)
    assert type(sequence) is BitReversedSequence
    assert (sequence.start, sequence.batch_size) == (5, 4)


# -- the same behaviour on every engine -------------------------------------------------------


@pytest.mark.parametrize("kind", list(MAKERS))
def test_create_next_and_drop_on_every_engine(seq_engine: Engine, kind: str) -> None:
    name = f"seqkeys_contract_{kind.lower()}"
    sequence = MAKERS[kind](name, start=5, batch_size=3)
    sequence.drop(seq_engine, checkfirst=True)
    try:
        assert sequence.create(seq_engine) is True
        assert sequence.create(seq_engine, checkfirst=True) is False
        with pytest.raises(SequenceExistsError):
            sequence.create(seq_engine)
        first = sequence.next_value(seq_engine)
        more = sequence.next_values(seq_engine, 4)
        assert [first, *more] == _first_values(kind, 5, 5)  # one process: in counter order
        assert sequence.next_values(seq_engine, 0) == []
        with seq_engine.begin() as conn:  # a Connection as well as an Engine
            assert isinstance(sequence.next_value(conn), int)
        assert sequence.drop(seq_engine) is True
        assert sequence.drop(seq_engine, checkfirst=True) is False
        with pytest.raises(SequenceNotFoundError):
            sequence.drop(seq_engine)
    finally:
        sequence.drop(seq_engine, checkfirst=True)


@pytest.mark.parametrize("kind", list(MAKERS))
def test_metadata_creates_and_drops_it_on_every_engine(seq_engine: Engine, kind: str) -> None:
    metadata = sa.MetaData()
    name = f"seqkeys_contract_md_{kind.lower()}"
    sequence = MAKERS[kind](name, start=3, batch_size=2, metadata=metadata)
    # the table in a MetaData of its own: Spanner refuses a DROP TABLE in the transaction
    # where drop_all has just deleted a sequence's row
    data = sa.MetaData()
    table = sa.Table(
        f"seqkeys_contract_{kind.lower()}",
        data,
        sa.Column("id", sa.BigInteger, primary_key=True, default=sequence, autoincrement=False),
        sa.Column("note", sa.String(10)),
    )
    data.drop_all(seq_engine)
    # where the sequence is a row, create_all makes the sequences table if it is missing
    sequences_table(sa.MetaData()).drop(seq_engine)
    try:
        metadata.create_all(seq_engine)
        data.create_all(seq_engine)
        with seq_engine.begin() as conn:
            conn.execute(table.insert(), [{"note": "a"}, {"note": "b"}])
            keys = conn.scalars(sa.select(table.c.id)).all()
        assert sorted(keys) == sorted(_first_values(kind, 3, 2))
        metadata.drop_all(seq_engine)
        assert sequence.drop(seq_engine, checkfirst=True) is False  # drop_all dropped it
    finally:
        data.drop_all(seq_engine)
        sequences_table(sa.MetaData()).create(seq_engine, checkfirst=True)
        sequence.drop(seq_engine, checkfirst=True)


@pytest.mark.parametrize("kind", list(MAKERS))
def test_the_awaitable_twins_on_every_async_driver(
    async_database: AsyncDatabase, kind: str
) -> None:
    name = f"seqkeys_contract_async_{kind.lower()}"
    sequence = MAKERS[kind](name, start=5, batch_size=3)
    sync = async_database.sync

    async def main() -> None:
        engine = async_database.engine()
        try:
            assert await sequence.create_async(engine) is True
            assert await sequence.create_async(engine, checkfirst=True) is False
            first = await sequence.next_value_async(engine)
            more = await sequence.next_values_async(engine, 4)
            assert [first, *more] == _first_values(kind, 5, 5)
            async with engine.begin() as conn:  # an AsyncConnection joins its transaction
                assert isinstance(await sequence.next_value_async(conn), int)
            assert await sequence.drop_async(engine) is True
            assert await sequence.drop_async(engine, checkfirst=True) is False
        finally:
            await engine.dispose()

    with fresh_table(sync, sequences_table):
        sequence.drop(sync, checkfirst=True)
        try:
            asyncio.run(main())
        finally:
            sequence.drop(sync, checkfirst=True)
