"""An unsigned snowflake layout's ids past 2**63 - 1, in the column the docs name, on each engine.

The ids of ``SnowflakeLayout.discord(unsigned=True)`` pass 2**63 - 1 from its top
timestamp bit on. Stored in ``UnsignedBigInteger()`` (PostgreSQL ``NUMERIC(20, 0)``,
MariaDB ``BIGINT UNSIGNED``, SQLite ``BIGINT``), they must come back as ints, be
found by ``==`` and ``in_``, sort by value on the server and fall into the window
``snowflake_bounds`` gives, and ``Snowflake.decode`` must take them as read.
Before: with ``sa.Numeric(20, 0)`` PostgreSQL refused ``id == 2**63`` (the value
bound as ``::BIGINT``) and rows came back as ``Decimal``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from sqlalchemy_seqkeys import Snowflake, SnowflakeLayout, UnsignedBigInteger, snowflake_bounds

pytestmark = pytest.mark.backend

LAYOUT = SnowflakeLayout.discord(unsigned=True)
#: the first tick whose ids are past 2**63 - 1, and the layout's last tick
PAST_BIGINT = 2 ** (LAYOUT.timestamp_bits - 1)
LAST = 2**LAYOUT.timestamp_bits - 1
FIELDS = [(0, 0), (5, 7), (LAYOUT.max_worker_id, 2**LAYOUT.sequence_bits - 1)]
TICKS = [*range(PAST_BIGINT - 4, PAST_BIGINT + 4), LAST - 1, LAST]
ALL_IDS = sorted(LAYOUT.compose(t, w, s) for t in TICKS for w, s in FIELDS)
#: the engines and the worker id each one's generator mints with (one tick per generator
#: and worker id in this process: a second one would wait for a tick its clock never reaches)
WORKERS = {"sqlite": 901, "postgresql": 902, "mysql": 903}


def stored_ids(backend: str) -> list[int]:
    """The ids an engine can store: SQLite's integers stop at 2**63 - 1."""
    return [i for i in ALL_IDS if backend != "sqlite" or i <= 2**63 - 1]


class Base(DeclarativeBase):
    pass


class Message(Base):
    __tablename__ = "seqkeys_unsigned_messages"
    id: Mapped[int] = mapped_column(UnsignedBigInteger(), primary_key=True, autoincrement=False)
    n: Mapped[int] = mapped_column(sa.Integer, default=0)


def _clock_at(tick: int) -> Any:
    """A Snowflake clock (Unix ns) stopped at ``tick`` of LAYOUT."""
    ns = int(LAYOUT.instant_of(tick).timestamp() * 1000) * 1_000_000
    return lambda: ns


@pytest.fixture(params=list(WORKERS))
def db(request: pytest.FixtureRequest, engines: Any) -> Iterator[Engine]:
    engine = engines.get(request.param)
    Base.metadata.drop_all(engine)
    Base.metadata.create_all(engine)
    yield engine
    Base.metadata.drop_all(engine)


def _fill(engine: Engine) -> list[int]:
    ids = stored_ids(engine.dialect.name)
    with Session(engine) as session:
        session.add_all([Message(id=i, n=n) for n, i in enumerate(ids)])
        session.commit()
    return ids


def test_read_back_as_ints_in_server_order(db: Engine) -> None:
    ids = _fill(db)
    with Session(db) as session:
        got = session.scalars(sa.select(Message.id).order_by(Message.id)).all()
        top = session.scalar(sa.select(sa.func.max(Message.id)))
    assert got == ids
    assert all(type(i) is int for i in got)
    assert top == ids[-1]
    assert type(top) is int
    ids_gen = Snowflake(worker_id=0, layout=LAYOUT)
    assert [ids_gen.decode(i) for i in got] == [LAYOUT.decode(i) for i in ids]


def test_equal_and_in_find_the_rows(db: Engine) -> None:
    ids = _fill(db)
    probes = [ids[0], 2**63 - 1, 2**63, 2**64 - 1]
    if db.dialect.name == "sqlite":  # a value past 2**63 - 1 is refused, never rounded
        with pytest.raises(OverflowError), Session(db) as session:
            session.scalars(sa.select(Message.id).where(Message.id == 2**63)).all()
        probes = [p for p in probes if p <= 2**63 - 1]
    with Session(db) as session:
        for probe in probes:
            found = session.scalars(sa.select(Message.id).where(Message.id == probe)).all()
            assert found == ([probe] if probe in ids else []), probe
        found = session.scalars(
            sa.select(Message.id).where(Message.id.in_(probes)).order_by(Message.id)
        ).all()
        assert found == sorted(p for p in probes if p in ids)
        row = session.get(Message, ids[-1])
        assert row is not None
        assert row.id == ids[-1]
        assert type(row.id) is int


def _window(backend: str) -> tuple[int, int]:
    """Ticks of a window around 2**63 (below it on SQLite, whose binds stop there)."""
    if backend == "sqlite":
        return PAST_BIGINT - 3, PAST_BIGINT - 1
    return PAST_BIGINT - 2, PAST_BIGINT + 2


def test_the_snowflake_bounds_window_selects_exactly_its_ids(db: Engine) -> None:
    ids = _fill(db)
    first, stop = _window(db.dialect.name)
    start, end = LAYOUT.instant_of(first), LAYOUT.instant_of(stop)
    lo, hi = snowflake_bounds(start, end, LAYOUT)
    want = [i for i in ids if start <= LAYOUT.decode(i).timestamp < end]
    assert want
    with Session(db) as session:
        got = session.scalars(
            sa.select(Message.id).where(Message.id >= lo, Message.id < hi).order_by(Message.id)
        ).all()
    assert got == want


def test_a_default_mints_past_bigint(db: Engine) -> None:
    backend = db.dialect.name
    tick = PAST_BIGINT - 1 if backend == "sqlite" else PAST_BIGINT + 1
    minter = Snowflake(worker_id=WORKERS[backend], layout=LAYOUT, clock=_clock_at(tick))
    metadata = sa.MetaData()
    events = sa.Table(
        "seqkeys_unsigned_events",
        metadata,
        sa.Column("id", UnsignedBigInteger(), primary_key=True, default=minter),
    )
    metadata.create_all(db)
    try:
        with db.begin() as conn:
            (key,) = conn.execute(events.insert()).inserted_primary_key or ()
            stored = conn.scalar(sa.select(events.c.id).where(events.c.id == key))
        assert stored == key
        assert type(stored) is int
        assert (stored > 2**63 - 1) is (backend != "sqlite")
        assert minter.decode(stored).timestamp == LAYOUT.instant_of(tick)
    finally:
        metadata.drop_all(db)


def test_async_drivers_compare_and_read_ints(async_database: Any) -> None:
    ids = stored_ids(async_database.backend)
    probe = ids[-1]

    async def main() -> tuple[list[int], list[int]]:
        engine = async_database.engine()
        try:
            async with engine.begin() as conn:
                await conn.run_sync(Base.metadata.drop_all)
                await conn.run_sync(Base.metadata.create_all)
                await conn.execute(sa.insert(Message), [{"id": i, "n": 0} for i in ids])
                equal = (await conn.scalars(sa.select(Message.id).where(Message.id == probe))).all()
                above = await conn.scalars(
                    sa.select(Message.id).where(Message.id >= ids[1]).order_by(Message.id)
                )
                return list(equal), list(above.all())
        finally:
            async with engine.begin() as conn:
                await conn.run_sync(Base.metadata.drop_all)
            await engine.dispose()

    equal, above = asyncio.run(main())
    assert equal == [probe]
    assert type(equal[0]) is int
    assert above == ids[1:]
