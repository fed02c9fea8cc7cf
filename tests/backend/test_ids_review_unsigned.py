"""``UnsignedBigInteger`` binds ints from 0 to 2**64 - 1 only, on every engine.

Before, it passed any value to the driver: 2.5 was stored as 3 on PostgreSQL
and as 2 on MariaDB and SQLite, ``Decimal("7.5")`` as 8, -1 was stored on
PostgreSQL and SQLite, 2**64 on PostgreSQL, and SQLite raised a raw
``OverflowError`` for 2**64. Now a value that is not an int (a bool, a float,
a Decimal, a str) or is outside 0 to 2**64 - 1 raises ``InvalidSnowflakeError``
before anything is sent in an ``INSERT``; nothing is stored. An int subclass
binds as its int value; None stays NULL. Compared in a ``WHERE``, a number is no
stored key: it is compared exactly and finds nothing here (SQLite refuses an int
past 2**63 - 1 with ``OverflowError``); text and a bool are refused there too
(tests/backend/test_unsigned_compared.py).
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import InvalidSnowflakeError, UnsignedBigInteger

pytestmark = pytest.mark.backend

#: values that are no id of an unsigned layout
REFUSED: list[Any] = [
    -1,
    2**64,
    2**70,
    2.5,
    1.5,
    10.0**19,
    Decimal("7.5"),
    Decimal(7),
    "12",
    True,
    False,
]


class Small(enum.IntEnum):
    SEVEN = 7


@pytest.fixture(params=["sqlite", "postgresql", "mysql"])
def table(request: pytest.FixtureRequest, engines: Any) -> Iterator[tuple[Engine, sa.Table]]:
    engine: Engine = engines.get(request.param)
    md = sa.MetaData()
    t = sa.Table(
        "seqkeys_ids_review_unsigned",
        md,
        sa.Column("k", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("id", UnsignedBigInteger(), nullable=True),
    )
    md.drop_all(engine)
    md.create_all(engine)
    yield engine, t
    md.drop_all(engine)


def _orig(raised: pytest.ExceptionInfo[sa.exc.StatementError]) -> BaseException:
    orig = raised.value.orig
    assert orig is not None
    return orig


@pytest.mark.parametrize("value", REFUSED, ids=repr)
def test_a_value_that_is_no_unsigned_id_is_refused(
    table: tuple[Engine, sa.Table], value: Any
) -> None:
    engine, t = table
    with engine.begin() as conn, pytest.raises(sa.exc.StatementError) as raised:
        conn.execute(t.insert(), {"k": 1, "id": value})
    error = _orig(raised)
    assert isinstance(error, InvalidSnowflakeError), repr(error)
    message = str(error)
    assert "UnsignedBigInteger" in message
    assert "from 0 to 2**64 - 1" in message
    assert repr(value)[:20] in message
    with engine.connect() as conn:
        where = sa.select(t.c.k).where(t.c.id == value)
        if isinstance(value, (str, bool)):
            with pytest.raises(sa.exc.StatementError) as raised:
                conn.execute(where).all()
            assert isinstance(_orig(raised), InvalidSnowflakeError)
        elif engine.dialect.name == "sqlite" and abs(value) > 2**63 - 1:
            with pytest.raises(OverflowError):  # never rounded
                conn.execute(where).all()
        else:  # a compared number is no stored key: compared as it is
            assert conn.execute(where).all() == []
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(t)).scalar() == 0


def test_ints_in_range_an_int_subclass_and_none_are_stored(table: tuple[Engine, sa.Table]) -> None:
    engine, t = table
    top = 2**63 - 1 if engine.dialect.name == "sqlite" else 2**64 - 1
    values: list[Any] = [0, 1, 2**62, top, Small.SEVEN, None]
    with engine.begin() as conn:
        conn.execute(t.insert(), [{"k": k, "id": v} for k, v in enumerate(values)])
        got = conn.execute(sa.select(t.c.id).order_by(t.c.k)).scalars().all()
        assert got == [None if v is None else int(v) for v in values]
        assert [type(v) for v in got if v is not None] == [int] * 5
        found = conn.execute(sa.select(t.c.k).where(t.c.id == Small.SEVEN)).scalars().all()
        assert found == [4]
        found = conn.execute(sa.select(t.c.k).where(t.c.id == top)).scalars().all()
        assert found == [3]
