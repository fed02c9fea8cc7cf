"""BitReversedSequence checks its native sequence in the catalog before it hands out a value
(PostgreSQL 15 and 18, MariaDB): one that cycles would hand the same keys out again, and one
whose increment is not 1 gives values that are not Spanner's. Both are refused with nothing
handed out, once per pool (the hot path reads no catalog), and a block whose counters are not
distinct is never handed out either.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import (
    BitReversed,
    BitReversedSequence,
    InvalidBitReversalError,
    reverse_bits,
)

pytestmark = pytest.mark.backend

NAMES = ("seqkeys_brcat_1", "seqkeys_brcat_4", "seqkeys_brcat_plain")


@pytest.fixture(params=["postgresql", "postgresql18", "mysql"])
def native(request: pytest.FixtureRequest, engines: Any) -> Iterator[Engine]:
    engine = engines.get(request.param)
    yield engine
    with engine.begin() as conn:
        for name in NAMES:
            sa.Sequence(name).drop(conn, checkfirst=True)


def execute(engine: Engine, sql: str) -> None:
    with engine.begin() as conn:
        conn.execute(sa.text(sql))


def raw_nextval(engine: Engine, name: str) -> int:
    with engine.begin() as conn:
        return int(conn.scalar(sa.select(sa.Sequence(name).next_value())))


@pytest.mark.parametrize("batch_size", [1, 4])
def test_a_cycling_sequence_is_refused_and_nothing_is_handed_out(
    native: Engine, batch_size: int
) -> None:
    name = f"seqkeys_brcat_{batch_size}"
    sequence = BitReversedSequence(name, batch_size=batch_size)
    sequence.create(native)
    execute(native, f"ALTER SEQUENCE {name} MAXVALUE 3 CYCLE")
    with pytest.raises(InvalidBitReversalError, match=rf"cycles.*ALTER SEQUENCE {name} NO CYCLE"):
        sequence.next_values(native, 6)
    with pytest.raises(InvalidBitReversalError, match="cycles"):  # a refusal is not remembered
        sequence.next_value(native)
    assert raw_nextval(native, name) == 1  # no counter was taken


def test_a_changed_increment_is_refused(native: Engine) -> None:
    name = "seqkeys_brcat_1"
    sequence = BitReversedSequence(name)
    sequence.create(native)
    execute(native, f"ALTER SEQUENCE {name} INCREMENT BY 2")
    with pytest.raises(InvalidBitReversalError, match=r"INCREMENT BY 2 .*INCREMENT BY 1"):
        sequence.next_value(native)
    execute(native, f"ALTER SEQUENCE {name} INCREMENT BY 1")
    assert [reverse_bits(v) for v in sequence.next_values(native, 3)] == [1, 2, 3]


def test_the_catalog_is_read_once_per_pool(native: Engine) -> None:
    sequence = BitReversedSequence("seqkeys_brcat_1")
    sequence.create(native)
    assert reverse_bits(sequence.next_value(native)) == 1
    statements: list[str] = []

    def count(*args: Any) -> None:
        statements.append(args[2])

    sa.event.listen(native, "before_cursor_execute", count)
    try:
        values = sequence.next_values(native, 5)
    finally:
        sa.event.remove(native, "before_cursor_execute", count)
    assert [reverse_bits(v) for v in values] == [2, 3, 4, 5, 6]
    assert len(statements) == 5, statements  # one nextval each, no catalog read


def test_a_bit_reversed_plain_sequence_that_cycles_is_refused(native: Engine) -> None:
    name = "seqkeys_brcat_plain"
    execute(native, f"CREATE SEQUENCE {name} MINVALUE 1 MAXVALUE 2 CYCLE")
    rows = sa.Table(
        "seqkeys_brcat_rows",
        sa.MetaData(),
        sa.Column(
            "id",
            sa.BigInteger,
            primary_key=True,
            autoincrement=False,
            default=BitReversed(sa.Sequence(name)),
        ),
    )
    rows.create(native)
    try:
        with (
            pytest.raises(sa.exc.StatementError, match="cycles") as raised,
            native.begin() as conn,
        ):
            conn.execute(rows.insert(), [{}, {}, {}])
        assert isinstance(raised.value.orig, InvalidBitReversalError)
        assert raw_nextval(native, name) == 1  # no counter was taken
    finally:
        rows.drop(native)


def test_a_block_with_repeated_counters_is_never_handed_out(
    native: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = "seqkeys_brcat_4"
    sequence = BitReversedSequence(name, batch_size=4)
    sequence.create(native)
    monkeypatch.setattr(BitReversedSequence, "_fetch_raw", lambda self, conn, state: [1, 2, 1, 3])
    with pytest.raises(InvalidBitReversalError, match="not distinct"):
        sequence.next_values(native, 2)
    monkeypatch.undo()
    assert [reverse_bits(v) for v in sequence.next_values(native, 2)] == [1, 2]
