"""server_uuid() declared once in an Annotated type, on live servers (MariaDB 10.11, PostgreSQL 18).

The key is declared as SQLAlchemy suggests for a column many models share: a
``mapped_column`` template in ``Annotated``, its type from ``type_annotation_map``.
Each model's table is created with the server's function as its key column's
default, the server mints the keys, and each ORM object gets its own row's key.
A model that gives the key a ``CHAR(32)`` of its own is refused with
UnsupportedServerFunctionError when the DDL is compiled: nothing reaches the
server (before the fix MariaDB got ``char(32) DEFAULT uuid()`` and its first
INSERT failed with "Data too long").
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Annotated, Any, ClassVar

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from sqlalchemy_seqkeys import CombGuid, UnsupportedServerFunctionError, server_uuid

pytestmark = pytest.mark.backend

#: the key, declared once: its type comes from the base's type_annotation_map
ServerKey = Annotated[uuid.UUID, mapped_column(primary_key=True, server_default=server_uuid())]

#: the servers whose server_uuid() goes into CombGuid(native_uuid=True): UUID() into
#: MariaDB's UUID type, uuidv7() into PostgreSQL's uuid
SERVING = ("mysql", "postgresql18")


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {uuid.UUID: CombGuid(native_uuid=True)}


class Order(Base):
    __tablename__ = "seqkeys_annotated_orders"
    id: Mapped[ServerKey]
    n: Mapped[int]


class Invoice(Base):
    __tablename__ = "seqkeys_annotated_invoices"
    id: Mapped[ServerKey]
    n: Mapped[int]


#: the same key with its type in the template
TypedServerKey = Annotated[
    uuid.UUID,
    mapped_column(CombGuid(native_uuid=True), primary_key=True, server_default=server_uuid()),
]


class LegacyBase(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {uuid.UUID: CombGuid(native_uuid=True)}


class Legacy(LegacyBase):
    __tablename__ = "seqkeys_annotated_legacy"
    id: Mapped[ServerKey] = mapped_column(sa.CHAR(32))  # too small for any UUID's text
    n: Mapped[int]


class TypedLegacyBase(DeclarativeBase):
    pass


class TypedLegacy(TypedLegacyBase):
    __tablename__ = "seqkeys_annotated_typed_legacy"
    id: Mapped[TypedServerKey] = mapped_column(sa.CHAR(32))  # the model's type wins
    n: Mapped[int]


@pytest.fixture(params=SERVING)
def serving_engine(request: pytest.FixtureRequest, engines: Any) -> Iterator[Engine]:
    engine: Engine = engines.get(request.param)
    if request.param == "mysql" and not engine.dialect.is_mariadb:  # type: ignore[attr-defined]
        pytest.skip("MySQL has no UUID type")
    Base.metadata.drop_all(engine)
    Base.metadata.create_all(engine)
    yield engine
    Base.metadata.drop_all(engine)


def test_each_model_gets_the_servers_keys(serving_engine: Engine) -> None:
    with serving_engine.connect() as conn:
        inspector = sa.inspect(conn)
        for model in (Order, Invoice):
            (id_column,) = [
                c for c in inspector.get_columns(model.__tablename__) if c["name"] == "id"
            ]
            assert "uuid" in str(id_column["type"]).lower(), id_column  # not CHAR(36), not NULL
            assert id_column["default"], id_column  # the server's function
    for model in (Order, Invoice):
        objects = [model(n=i) for i in range(200)]
        with Session(serving_engine) as session:
            session.add_all(objects)
            session.flush()
            flushed = {o.n: o.id for o in objects}
            session.commit()
            in_db = dict(session.execute(sa.select(model.n, model.id)).all())
        assert flushed == in_db  # each object got its own row's key, read back
        assert len(set(in_db.values())) == len(in_db)
        assert all(isinstance(key, uuid.UUID) for key in in_db.values())


@pytest.mark.parametrize("name", SERVING)
@pytest.mark.parametrize(
    "model", [Legacy, TypedLegacy], ids=["type from the map", "typed template"]
)
def test_a_model_with_a_char32_key_is_refused_before_anything_is_sent(
    engines: Any, name: str, model: Any
) -> None:
    engine: Engine = engines.get(name)
    with pytest.raises(UnsupportedServerFunctionError) as caught:
        model.metadata.create_all(engine)
    message = str(caught.value)
    assert f"column {model.__tablename__}.id is CHAR(32)" in message, message
    assert "default=new_uuid7" in message
    with engine.connect() as conn:
        assert not sa.inspect(conn).has_table(model.__tablename__)
