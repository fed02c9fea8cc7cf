"""A TypeID column default that cannot fill its column is refused when the table is declared.

``typeid_default(prefix)`` with another prefix than the ``TypeIDType`` column's would
fail at every INSERT ("pass an id of type 'user'"), and the bare ``new_typeid``
(SQLAlchemy calls it with the execution context as its prefix) with "a TypeID prefix
is a str ..., not SQLiteExecutionContext": both raise InvalidTypeIDError saying why
and what to write, at the ``Table``, a model and ``Table.append_column`` alike.
"""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from sqlalchemy_seqkeys import (
    InvalidTypeIDError,
    TypeID,
    TypeIDType,
    new_typeid,
    typeid_default,
)


def _table(type_: Any, default: Any) -> sa.Table:
    return sa.Table(
        "users", sa.MetaData(), sa.Column("id", type_, primary_key=True, default=default)
    )


@pytest.mark.parametrize("native_uuid", [False, True])
def test_a_default_of_another_prefix_is_refused(native_uuid: bool) -> None:
    with pytest.raises(
        InvalidTypeIDError,
        match=r"column users\.id is TypeIDType\(prefix='user'.*\), whose ids are of type "
        r"'user', but its default typeid_default\('order'\) mints ids of type 'order'.*"
        r"default=typeid_default\('user'\)",
    ):
        _table(TypeIDType("user", native_uuid=native_uuid), typeid_default("order"))


def test_the_empty_prefix_is_a_prefix_like_any_other() -> None:
    with pytest.raises(InvalidTypeIDError, match=r"of type '', but .* of type 'user'"):
        _table(TypeIDType(""), typeid_default("user"))
    with pytest.raises(InvalidTypeIDError, match=r"of type 'user', but .* of type ''"):
        _table(TypeIDType("user"), typeid_default(""))
    _table(TypeIDType(""), typeid_default(""))


def test_a_variant_of_another_prefix_is_refused() -> None:
    type_ = TypeIDType("user").with_variant(TypeIDType("member"), "postgresql")
    with pytest.raises(InvalidTypeIDError, match=r"its variant for postgresql.*'member'"):
        _table(type_, typeid_default("user"))


def test_the_bare_new_typeid_is_refused() -> None:
    with pytest.raises(
        InvalidTypeIDError,
        match=r"column users\.id has default=new_typeid.*execution context.*"
        r"default=typeid_default\('user'\)",
    ):
        _table(TypeIDType("user"), new_typeid)
    # on a column of another type too: it can never be a column default
    with pytest.raises(InvalidTypeIDError, match=r"typeid_default\('<prefix>'\)"):
        _table(sa.String(40), new_typeid)


def test_a_model_and_append_column_are_checked_too() -> None:
    class Base(DeclarativeBase):
        pass

    with pytest.raises(InvalidTypeIDError, match="'order'"):

        class User(Base):
            __tablename__ = "users"
            id: Mapped[TypeID] = mapped_column(
                TypeIDType("user"), primary_key=True, default=typeid_default("order")
            )

    table = sa.Table("users", sa.MetaData(), sa.Column("n", sa.Integer, primary_key=True))
    with pytest.raises(InvalidTypeIDError, match="new_typeid"):
        table.append_column(sa.Column("other", TypeIDType("user"), default=new_typeid))


def test_the_right_default_is_taken_and_inserts() -> None:
    table = _table(TypeIDType("user"), typeid_default("user"))
    engine = sa.create_engine("sqlite://")
    table.metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(table.insert())
        assert conn.scalar(sa.select(table.c.id)).prefix == "user"  # type: ignore[union-attr]
    engine.dispose()
