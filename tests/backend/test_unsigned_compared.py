"""``UnsignedBigInteger``: what a comparison or an arithmetic expression binds, and
integers that are not ``int`` (numpy's, any object with ``__index__``).

Before, a value compared with the column was bound with the stored key's checks:
``id > -1``, ``id < 2**64``, ``id.in_([Decimal("5")])``, ``id <= Decimal(...)``
(what a raw ``SELECT max(id)`` reads on PostgreSQL), ``(id - 10) > -6`` and
``id * 0.5 > 2`` raised ``InvalidSnowflakeError``, and ``np.int64(5)`` /
``np.uint64(2**63 + 5)`` were refused in an ``INSERT`` (they were stored before
that check). Now an integer of any kind (``operator.index``, a bool excepted) is
stored when it is from 0 to 2**64 - 1; a compared value is any whole number,
bound exactly, or a fraction, compared as it is (never rounded to the column's
scale); ``select(id * 0.5)`` reads ``2.5``, not ``2``.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import InvalidSnowflakeError, UnsignedBigInteger

pytestmark = pytest.mark.backend


class Indexed:
    """An integer that is no int: what numpy's integers are to the type (``__index__``)."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value

    def __repr__(self) -> str:
        return f"Indexed({self.value})"


@pytest.fixture(params=["sqlite", "postgresql", "mysql"])
def table(request: pytest.FixtureRequest, engines: Any) -> Iterator[tuple[Engine, sa.Table]]:
    engine: Engine = engines.get(request.param)
    md = sa.MetaData()
    t = sa.Table(
        "seqkeys_unsigned_compared",
        md,
        sa.Column("id", UnsignedBigInteger(), primary_key=True, autoincrement=False),
    )
    md.drop_all(engine)
    md.create_all(engine)
    yield engine, t
    md.drop_all(engine)


def _big(engine: Engine) -> int:
    # SQLite holds no integer past 2**63 - 1
    return 2**62 + 5 if engine.dialect.name == "sqlite" else 2**63 + 5


def _ids(engine: Engine, t: sa.Table, where: Any) -> list[int]:
    with engine.connect() as conn:
        return list(conn.execute(sa.select(t.c.id).where(where).order_by(t.c.id)).scalars())


def test_an_integer_with_index_is_stored_and_compared(table: tuple[Engine, sa.Table]) -> None:
    engine, t = table
    big = _big(engine)
    with engine.begin() as conn:
        conn.execute(t.insert(), [{"id": Indexed(5)}, {"id": Indexed(big)}])
    assert _ids(engine, t, t.c.id >= Indexed(0)) == [5, big]
    assert _ids(engine, t, t.c.id == Indexed(big)) == [big]
    assert _ids(engine, t, t.c.id.in_([Indexed(5), Indexed(6)])) == [5]


@pytest.mark.parametrize("value", [Indexed(-1), Indexed(2**64)], ids=repr)
def test_an_integer_with_index_out_of_range_is_refused(
    table: tuple[Engine, sa.Table], value: Any
) -> None:
    engine, t = table
    with engine.begin() as conn, pytest.raises(sa.exc.StatementError) as raised:
        conn.execute(t.insert(), {"id": value})
    assert isinstance(raised.value.orig, InvalidSnowflakeError)
    assert repr(value) in str(raised.value.orig)


def test_numpy_integers_are_stored_and_compared(table: tuple[Engine, sa.Table]) -> None:
    np = pytest.importorskip("numpy")
    engine, t = table
    big = _big(engine)
    with engine.begin() as conn:
        conn.execute(t.insert(), [{"id": np.int64(5)}, {"id": np.uint64(big)}])
    assert _ids(engine, t, t.c.id >= np.int64(0)) == [5, big]
    assert _ids(engine, t, t.c.id == np.uint64(big)) == [big]
    assert _ids(engine, t, t.c.id == np.int64(5)) == [5]
    with engine.begin() as conn, pytest.raises(sa.exc.StatementError) as raised:
        conn.execute(t.insert(), {"id": np.True_})
    assert isinstance(raised.value.orig, InvalidSnowflakeError)


def test_a_compared_whole_number_of_any_size_is_bound_exactly(
    table: tuple[Engine, sa.Table],
) -> None:
    engine, t = table
    big = _big(engine)
    with engine.begin() as conn:
        conn.execute(t.insert(), [{"id": 5}, {"id": big}])
    assert _ids(engine, t, t.c.id > -1) == [5, big]
    assert _ids(engine, t, t.c.id >= -(2**40)) == [5, big]
    assert _ids(engine, t, t.c.id.in_([Decimal("5")])) == [5]
    assert _ids(engine, t, t.c.id.in_([Decimal("5"), Decimal(big)])) == [5, big]
    assert _ids(engine, t, t.c.id == Decimal(big)) == [big]
    assert _ids(engine, t, t.c.id <= Decimal(big)) == [5, big]
    assert _ids(engine, t, t.c.id < Decimal(big)) == [5]
    assert _ids(engine, t, t.c.id == 5.0) == [5]
    assert _ids(engine, t, t.c.id.between(Decimal("5"), 6)) == [5]
    if engine.dialect.name != "sqlite":  # SQLite's ints stop at 2**63 - 1: OverflowError
        assert _ids(engine, t, t.c.id < 2**64) == [5, big]
        assert _ids(engine, t, t.c.id < 2**80) == [5, big]
        assert _ids(engine, t, t.c.id > -(2**70)) == [5, big]
        assert _ids(engine, t, t.c.id == 2**64 + 5) == []
        assert _ids(engine, t, t.c.id < Decimal(2**64)) == [5, big]
        with engine.connect() as conn:  # what a NUMERIC(20, 0) column reads on PostgreSQL
            raw = conn.exec_driver_sql(f"SELECT max(id) FROM {t.name}").scalar()
        assert _ids(engine, t, t.c.id <= raw) == [5, big]


def test_a_compared_fraction_is_compared_as_it_is_never_rounded(
    table: tuple[Engine, sa.Table],
) -> None:
    engine, t = table
    big = _big(engine)
    with engine.begin() as conn:
        conn.execute(t.insert(), [{"id": 5}, {"id": big}])
    # rounded to the column's scale, 4.5 and 5.4 would find id 5
    assert _ids(engine, t, t.c.id == Decimal("4.5")) == []
    assert _ids(engine, t, t.c.id == 4.5) == []
    assert _ids(engine, t, t.c.id == Decimal("5.4")) == []
    assert _ids(engine, t, t.c.id > 4.5) == [5, big]
    assert _ids(engine, t, t.c.id < 5.5) == [5]
    assert _ids(engine, t, t.c.id > Decimal("5.4")) == [big]
    assert _ids(engine, t, t.c.id < Decimal("5.4")) == [5]
    assert _ids(engine, t, t.c.id.in_([Decimal("5"), Decimal("7.5")])) == [5]
    assert _ids(engine, t, t.c.id.in_([Decimal("4.5"), 9])) == []


def test_arithmetic_on_the_column_is_numeric(table: tuple[Engine, sa.Table]) -> None:
    engine, t = table
    big = _big(engine)
    with engine.begin() as conn:
        conn.execute(t.insert(), [{"id": 5}, {"id": big}])
    if engine.dialect.name != "mysql":  # BIGINT UNSIGNED refuses 5 - 10 (out of range)
        assert _ids(engine, t, (t.c.id - 10) > -6) == [5, big]
        assert _ids(engine, t, (t.c.id - 10) == -5) == [5]
    assert _ids(engine, t, (t.c.id - 4) > -6) == [5, big]
    assert _ids(engine, t, (t.c.id + 1) == 6) == [5]
    assert _ids(engine, t, (t.c.id * 0.5) > 2) == [5, big]
    assert _ids(engine, t, (t.c.id * 0.5) > 2.5) == [big]
    assert _ids(engine, t, (t.c.id % 2) == 1) == [5, big]
    with engine.connect() as conn:
        half = conn.execute(sa.select(t.c.id * 0.5).where(t.c.id == 5)).scalar()
        plus = conn.execute(sa.select(t.c.id + 1).where(t.c.id == 5)).scalar()
    assert half == 2.5, repr(half)  # not truncated to 2
    assert plus == 6


@pytest.mark.parametrize("value", ["12", True, False], ids=repr)
def test_a_compared_value_that_is_no_number_is_refused(
    table: tuple[Engine, sa.Table], value: Any
) -> None:
    engine, t = table
    with engine.connect() as conn, pytest.raises(sa.exc.StatementError) as raised:
        conn.execute(sa.select(t.c.id).where(t.c.id == value)).all()
    error = raised.value.orig
    assert isinstance(error, InvalidSnowflakeError), repr(error)
    assert repr(value) in str(error)
