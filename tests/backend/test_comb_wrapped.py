"""A type over CombGuid reads as itself on every engine: its own result conversion runs.

Two ways to build on :class:`CombGuid`: a ``TypeDecorator`` whose ``impl`` is
``CombGuid`` (``UserId`` here: the application sees ``"user:<uuid>"``) and a
subclass (``TextGuid``: the application sees the text). Before, reading such a
column in a SELECT, ``select(table)``, a subquery, a RETURNING clause or the
ORM gave a plain ``uuid.UUID``: ``CombGuid.column_expression`` (which names the
column in the error for a stored value that is no GUID) read every selected
column as a fixed CombGuid in place of the column's own type, so the outer
type's ``process_result_value`` never ran. Here on each engine and storage
form (text, ``binary=True``, ``native_uuid=True``: MariaDB's UUID type), with
values of each COMB layout, UUIDv7 and UUIDv4; and a stored value that is no
GUID still raises ``InvalidGuidError`` naming the column.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.engine.interfaces import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from sqlalchemy_seqkeys import CombGuid, CombLayout, InvalidGuidError, new_comb, new_uuid7

pytestmark = pytest.mark.backend

TABLE = "seqkeys_comb_wrapped"
FORMS: dict[str, dict[str, bool]] = {
    "text": {},
    "binary": {"binary": True},
    "native_uuid": {"native_uuid": True},
}


class UserId(sa.TypeDecorator[str]):
    """A GUID column the application reads and writes as ``"user:<uuid>"``."""

    impl = CombGuid
    cache_ok = True

    def __init__(self, binary: bool = False, native_uuid: bool = False) -> None:
        super().__init__(binary, native_uuid)
        self.binary = binary
        self.native_uuid = native_uuid

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if isinstance(value, str) and value.startswith("user:"):
            return value[len("user:") :]
        return value

    def process_result_value(self, value: Any, dialect: Dialect) -> str | None:
        return None if value is None else f"user:{value}"


class TextGuid(CombGuid):
    """A CombGuid that hands the application the GUID's text (e.g. for JSON)."""

    cache_ok = True

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        guid = super().process_result_value(value, dialect)
        return None if guid is None else str(guid)


#: the type under test, and what it gives the application for a uuid.UUID
TYPES: dict[str, tuple[Callable[..., sa.types.TypeEngine[Any]], Callable[[uuid.UUID], str]]] = {
    "wrapped": (UserId, lambda guid: f"user:{guid}"),
    "subclass": (TextGuid, str),
}


def _is_mariadb_uuid(engine: Engine, form: str) -> bool:
    return form == "native_uuid" and bool(getattr(engine.dialect, "is_mariadb", False))


def _guids(engine: Engine, form: str) -> list[uuid.UUID]:
    if _is_mariadb_uuid(engine, form):
        # MariaDB's UUID type refuses some COMB values outright (their random
        # bits read as a version above 8 with another variant: test_mariadb_uuid)
        # and the column is for UUIDv7 keys: new_comb_guid is refused on it
        return [new_uuid7(), new_uuid7(), uuid.uuid4()]
    return [new_comb(layout) for layout in CombLayout] + [new_uuid7(), uuid.uuid4()]


def _table(metadata: sa.MetaData, kind: str, form: str) -> sa.Table:
    make, _ = TYPES[kind]
    return sa.Table(
        TABLE,
        metadata,
        sa.Column("id", make(**FORMS[form]), primary_key=True),
        sa.Column("n", sa.Integer, nullable=False),
    )


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("kind", list(TYPES))
def test_core_reads_through_the_outer_type(
    engine: Engine, metadata: sa.MetaData, kind: str, form: str
) -> None:
    table = _table(metadata, kind, form)
    metadata.create_all(engine)
    _, seen = TYPES[kind]
    guids = _guids(engine, form)
    wanted = [seen(guid) for guid in guids]
    with engine.begin() as conn:
        conn.execute(table.insert(), [{"id": guid, "n": n} for n, guid in enumerate(guids)])
    with engine.connect() as conn:
        by_n = table.c.n
        assert conn.execute(sa.select(table.c.id).order_by(by_n)).scalars().all() == wanted
        assert [row.id for row in conn.execute(sa.select(table).order_by(by_n))] == wanted
        labelled = sa.select(table.c.id.label("key")).order_by(by_n)
        assert conn.execute(labelled).scalars().all() == wanted
        inner = sa.select(table.c.id, table.c.n).subquery()
        assert conn.execute(sa.select(inner.c.id).order_by(inner.c.n)).scalars().all() == wanted
        aliased = table.alias("other")
        got = conn.execute(sa.select(aliased.c.id).order_by(aliased.c.n)).scalars().all()
        assert got == wanted
        # and each value the application holds finds its row
        for n, value in enumerate(wanted):
            found = conn.execute(sa.select(table.c.n).where(table.c.id == value)).scalar_one()
            assert found == n


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("kind", list(TYPES))
def test_returning_reads_through_the_outer_type(
    engine: Engine, metadata: sa.MetaData, kind: str, form: str
) -> None:
    if not engine.dialect.insert_returning:
        pytest.skip(f"{engine.dialect.name} has no INSERT ... RETURNING")
    table = _table(metadata, kind, form)
    metadata.create_all(engine)
    _, seen = TYPES[kind]
    guids = _guids(engine, form)
    with engine.begin() as conn:
        one = conn.execute(table.insert().returning(table.c.id), {"id": guids[0], "n": 0})
        assert one.scalar_one() == seen(guids[0])
        rows = [{"id": guid, "n": n} for n, guid in enumerate(guids[1:], 1)]
        many = conn.execute(table.insert().returning(table.c.id, table.c.n), rows)
        assert sorted(many.all(), key=lambda row: row.n) == [
            (seen(guid), n) for n, guid in enumerate(guids[1:], 1)
        ]


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("kind", list(TYPES))
def test_orm_reads_through_the_outer_type(engine: Engine, kind: str, form: str) -> None:
    make, seen = TYPES[kind]

    class Base(DeclarativeBase):
        pass

    class Row(Base):
        __tablename__ = TABLE
        id: Mapped[str] = mapped_column(make(**FORMS[form]), primary_key=True)
        n: Mapped[int] = mapped_column(sa.Integer)

    Base.metadata.drop_all(engine)
    Base.metadata.create_all(engine)
    try:
        wanted = [seen(guid) for guid in _guids(engine, form)]
        with Session(engine) as session:
            session.add_all(Row(id=value, n=n) for n, value in enumerate(wanted))
            session.commit()
        with Session(engine) as session:
            rows = session.scalars(sa.select(Row).order_by(Row.n)).all()
            assert [row.id for row in rows] == wanted
            assert session.scalars(sa.select(Row.id).order_by(Row.n)).all() == wanted
        with Session(engine) as session:
            row = session.get(Row, wanted[-1])
            assert row is not None
            assert row.id == wanted[-1]
            assert row.n == len(wanted) - 1
    finally:
        Base.metadata.drop_all(engine)


@pytest.mark.parametrize("kind", list(TYPES))
def test_a_stored_value_that_is_no_guid_still_names_the_column(
    engine: Engine, metadata: sa.MetaData, kind: str
) -> None:
    table = _table(metadata, kind, "text")
    metadata.create_all(engine)
    # the same table as a plain column: writes what CombGuid would refuse. A
    # sign where a digit goes: uuid.UUID reads it as 0190b6a8-..., strictly it is no GUID
    raw = sa.Table(TABLE, sa.MetaData(), sa.Column("id", sa.String(36)), sa.Column("n", sa.Integer))
    for garbage in ("garbage", "+190b6a8-6c3e-7d4a-9f1e-2b5c8d7e6f10"):
        with engine.begin() as conn:
            conn.execute(raw.delete())
        try:
            with engine.begin() as conn:
                conn.execute(raw.insert().values(id=garbage, n=1))
        except sa.exc.DBAPIError:
            # PostgreSQL's uuid type refuses the text: nothing wrong can be stored
            assert engine.dialect.name == "postgresql"
            continue
        for query in (sa.select(table.c.id), sa.select(table), sa.select(table.c.n, table.c.id)):
            expected = pytest.raises(InvalidGuidError, match=rf"column {TABLE}\.id")
            with engine.connect() as conn, expected as raised:
                conn.execute(query).all()
            assert "not a GUID" in str(raised.value)
            assert repr(garbage) in str(raised.value)
