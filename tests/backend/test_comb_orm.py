"""COMB GUIDs through the ORM on every engine: the server's ORDER BY is minting order."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from sqlalchemy_seqkeys import (
    CombGuid,
    CombGuidDefault,
    CombLayout,
    comb_timestamp,
    new_comb_guid,
    new_uuid7,
)
from sqlalchemy_seqkeys import uuid7 as uuid7_module

pytestmark = pytest.mark.backend

ROWS_PER_FLUSH = 100
FLUSHES = 25


class Recorder:
    """A column default that delegates to ``inner`` and remembers what it minted, in order."""

    def __init__(self, inner: CombGuidDefault) -> None:
        self.inner = inner
        self.minted: list[uuid.UUID] = []

    def __call__(self, context: Any) -> uuid.UUID:
        value = self.inner(context)
        self.minted.append(value)
        return value


def make_model(binary: bool, default: Recorder) -> tuple[type[Any], sa.MetaData]:
    class Base(DeclarativeBase):
        pass

    class Row(Base):
        __tablename__ = f"seqkeys_comb_{'bin' if binary else 'txt'}"
        id: Mapped[uuid.UUID] = mapped_column(
            CombGuid(binary=binary), primary_key=True, default=default
        )
        payload: Mapped[str] = mapped_column(sa.String(100))

    return Row, Base.metadata


def insert_in_flushes(engine: Engine, model: type[Any]) -> None:
    with Session(engine) as session:
        for flush in range(FLUSHES):
            session.add_all(model(payload=f"{flush}-{i}") for i in range(ROWS_PER_FLUSH))
            session.flush()
            time.sleep(0.002)  # let the clock move: the rows span many milliseconds
        session.commit()


@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
def test_order_by_id_is_minting_order(engine: Engine, binary: bool) -> None:
    # new_comb_guid mints uuid4 on Spanner (by design); force the layout there to
    # prove the storage keeps time order when a user asks for it.
    layout = new_comb_guid.layout_for(engine.dialect) or CombLayout.AS_STRING
    recorder = Recorder(new_comb_guid.with_layout(layout))
    model, metadata = make_model(binary, recorder)
    metadata.drop_all(engine)
    metadata.create_all(engine)
    try:
        insert_in_flushes(engine, model)
        minted = recorder.minted
        assert len(minted) == FLUSHES * ROWS_PER_FLUSH >= 2000
        assert len({comb_timestamp(v, layout) for v in minted}) >= 20
        with Session(engine) as session:
            ordered = session.scalars(sa.select(model.id).order_by(model.id)).all()
            assert all(isinstance(v, uuid.UUID) for v in ordered)
            assert ordered == minted
            # round trip: each key reads back equal and finds its own row
            probe = minted[len(minted) // 2]
            row = session.get(model, probe)
            assert row is not None
            assert row.id == probe
            count = session.scalar(sa.select(sa.func.count()).where(model.id.in_(minted[:50])))
            assert count == 50
    finally:
        metadata.drop_all(engine)


def test_default_comb_guid_on_the_engine(engine: Engine) -> None:
    recorder = Recorder(new_comb_guid)
    model, metadata = make_model(False, recorder)
    metadata.drop_all(engine)
    metadata.create_all(engine)
    try:
        with Session(engine) as session:
            session.add_all(model(payload=str(i)) for i in range(200))
            session.commit()
            ordered = session.scalars(sa.select(model.id).order_by(model.id)).all()
        if engine.dialect.name.startswith("spanner"):
            # random version 4 keys: no hotspot on Spanner's last key range
            assert all(v.version == 4 for v in recorder.minted)
            assert ordered != recorder.minted
            assert sorted(ordered, key=str) == sorted(recorder.minted, key=str)
        else:
            assert ordered == recorder.minted
    finally:
        metadata.drop_all(engine)


@contextmanager
def _counted_many_minter(kind: str, engine: Engine) -> Iterator[tuple[Any, list[int]]]:
    """The default of ``kind``, with its many-at-once minter counting its calls."""
    calls: list[int] = []

    def counting(real: Callable[[int], list[uuid.UUID]]) -> Callable[[int], list[uuid.UUID]]:
        def mint_many(k: int) -> list[uuid.UUID]:
            calls.append(k)
            return real(k)

        return mint_many

    if kind == "new_comb_guid":
        default = new_comb_guid.with_layout(new_comb_guid.layout_for(engine.dialect) or "as_string")
        name = engine.dialect.name
        default._many[name] = counting(default._minter_many(name))
        yield default, calls
    else:
        # the generator class's method: its instances have no attributes to swap
        generator_class = uuid7_module._Uuid7Generator
        real = generator_class.mint_many

        def counted(self: uuid7_module._Uuid7Generator, k: int) -> list[uuid.UUID]:
            calls.append(k)
            return real(self, k)

        generator_class.mint_many = counted  # type: ignore[method-assign]
        try:
            yield new_uuid7, calls
        finally:
            generator_class.mint_many = real  # type: ignore[method-assign]


@pytest.mark.parametrize("kind", ["new_comb_guid", "new_uuid7"])
def test_an_executemany_mints_its_rows_values_at_once_in_row_order(
    engine: Engine, kind: str
) -> None:
    """One many-at-once call for an executemany's rows: in row order, each value once, also
    in a second column on the same default and in a table copied by to_metadata; the
    default executed on its own (``conn.scalar(column.default)``) still mints one."""
    rows = 500
    metadata = sa.MetaData()
    with _counted_many_minter(kind, engine) as (default, calls):
        table = sa.Table(
            f"seqkeys_{kind}_many",
            metadata,
            sa.Column("id", CombGuid(), primary_key=True, default=default),
            sa.Column("other", CombGuid(), nullable=False, default=default),
            sa.Column("n", sa.Integer, nullable=False),
        )
        assert table.c.id.default is not None
        if hasattr(table.c.id.default, "_given_arg"):  # SQLAlchemy 2.1 keeps what was given
            assert table.c.id.default._given_arg is default  # what it copies and compares
        copy = table.to_metadata(sa.MetaData(), name=f"seqkeys_{kind}_copy")
        metadata.drop_all(engine)
        metadata.create_all(engine)
        copy.create(engine)
        try:
            with engine.begin() as conn:
                conn.execute(table.insert(), [{"n": n} for n in range(rows)])
                conn.execute(copy.insert(), [{"n": n} for n in range(rows)])
                alone = conn.scalar(table.c.id.default)  # type: ignore[arg-type]
            with engine.connect() as conn:
                got = conn.execute(sa.select(table.c.id, table.c.other).order_by(table.c.n)).all()
                copied = conn.scalars(sa.select(copy.c.id).order_by(copy.c.n)).all()
        finally:
            copy.drop(engine)
            metadata.drop_all(engine)
    ids = [r.id for r in got]
    every = ids + [r.other for r in got] + list(copied) + [alone]
    assert calls == [rows, rows]  # one call per executemany, none for the rest
    assert len(set(every)) == 3 * rows + 1
    assert ids == sorted(ids)  # the rows got them in order
    assert list(copied) == sorted(copied)
    assert all(isinstance(v, uuid.UUID) for v in every)
    if kind == "new_uuid7":
        assert all(v.version == 7 for v in every)


def test_batched_multi_row_insert(engine: Engine) -> None:
    """Client-side keys let SQLAlchemy send one INSERT per batch, not one per row."""
    recorder = Recorder(new_comb_guid)
    model, metadata = make_model(False, recorder)
    metadata.drop_all(engine)
    metadata.create_all(engine)
    inserts: list[str] = []

    def count_inserts(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.lstrip().upper().startswith("INSERT"):
            inserts.append(statement)

    sa.event.listen(engine, "before_cursor_execute", count_inserts)
    try:
        with Session(engine) as session:
            session.add_all(model(payload=str(i)) for i in range(1000))
            session.commit()
    finally:
        sa.event.remove(engine, "before_cursor_execute", count_inserts)
        metadata.drop_all(engine)
    assert 1 <= len(inserts) <= 10, f"{len(inserts)} INSERT statements for 1,000 rows"
