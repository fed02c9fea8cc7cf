"""The column checks of tests/unit/test_column_checks.py, where they were too lenient.

- A ``Numeric`` key column on SQLite: SQLAlchemy binds its integers as floats
  there (SQLite has no decimal type), so 63-bit keys that differ in their low
  bits became one value (duplicates in a plain column, IntegrityError on a
  primary key). A ``Numeric`` base type is now judged as SQLite uses it when the
  column has no variant of its own for SQLite; tests/backend/test_numeric_keys_sqlite.py
  shows the keys on the engines.
- An unsigned Snowflake layout: SQLite holds no integer past 2**63 - 1; an
  integer variant for it is accepted (sqlite3 refuses a larger id loudly), a
  ``Numeric`` one is not.
- GUID defaults mint ``uuid.UUID``: a ``TypeDecorator`` that does not convert is
  judged by its ``impl`` (one over ``String(10)`` was taken, and MariaDB then
  refused the row); text of 36 characters and ``Uuid(as_uuid=False)`` stay
  accepted (psycopg, PyMySQL and asyncmy bind a ``uuid.UUID`` there).
- A ``Sequence`` after a positional seqkeys sequence replaced it silently.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import mysql, oracle, postgresql
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from sqlalchemy_seqkeys import (
    BitReversed,
    BitReversedSequence,
    CombGuid,
    CombGuidDefault,
    InvalidGuidError,
    PooledSequence,
    SeqKeysError,
    Snowflake,
    SnowflakeLayout,
    TableSequence,
    UnsignedBigInteger,
    new_comb_guid,
    new_uuid7,
)
from sqlalchemy_seqkeys._columns import bigint_problem, u64_problem


def table(*columns: sa.Column[Any]) -> sa.Table:
    return sa.Table("t", sa.MetaData(), *columns)


INTEGER_DEFAULTS: dict[str, Callable[[], Any]] = {
    "Snowflake": lambda: Snowflake(worker_id=1),
    "TableSequence": lambda: TableSequence("s", mode="batch"),
    "PooledSequence": lambda: PooledSequence("s"),
    "BitReversed": lambda: BitReversed(TableSequence("s", mode="in_transaction")),
    "BitReversedSequence": lambda: BitReversedSequence("b"),
}

#: types SQLAlchemy binds as floats on SQLite, wide enough for 63 bits elsewhere
ROUNDED_ON_SQLITE: list[Any] = [
    sa.Numeric(19, 0),
    sa.Numeric(20, 0),
    sa.Numeric(38),
    sa.DECIMAL(19, 0),
    sa.NUMERIC(38, 0),
    mysql.DECIMAL(20, 0),
    postgresql.NUMERIC(19, 0),
    oracle.NUMBER(),
    oracle.NUMBER(19),
]


# -- 63-bit keys -------------------------------------------------------------------------


@pytest.mark.parametrize("type_", ROUNDED_ON_SQLITE, ids=repr)
def test_a_numeric_type_rounds_keys_on_sqlite(type_: Any) -> None:
    problem = bigint_problem(type_, "sqlite")
    assert problem is not None
    assert "float on SQLite" in problem
    assert "round into one value" in problem
    assert bigint_problem(type_, "sqlite+aiosqlite") == problem
    # elsewhere the type holds 2**63 - 1 exactly
    assert bigint_problem(type_, "postgresql") is None
    assert bigint_problem(type_) is None


@pytest.mark.parametrize(
    "type_", [sa.BigInteger(), sa.Integer(), sa.BIGINT(), mysql.BIGINT(unsigned=True)], ids=repr
)
def test_an_integer_type_holds_63_bit_keys_on_sqlite(type_: Any) -> None:
    assert bigint_problem(type_, "sqlite") is None


@pytest.mark.parametrize("make", INTEGER_DEFAULTS.values(), ids=list(INTEGER_DEFAULTS))
@pytest.mark.parametrize("type_", ROUNDED_ON_SQLITE, ids=repr)
def test_a_numeric_key_column_without_a_sqlite_variant_is_refused(
    make: Callable[[], Any], type_: Any
) -> None:
    # before: accepted, and SQLite stored 1,000 snowflake ids as 6 distinct values
    with pytest.raises(SeqKeysError) as raised:
        table(sa.Column("id", type_, primary_key=True, default=make()))
    message = str(raised.value)
    assert message.startswith("column t.id (on SQLite, which has no variant of its own) ")
    assert "float on SQLite" in message
    assert "sa.BigInteger, or keep its type elsewhere" in message
    assert ".with_variant(sa.BigInteger(), 'sqlite')" in message


@pytest.mark.parametrize("make", INTEGER_DEFAULTS.values(), ids=list(INTEGER_DEFAULTS))
@pytest.mark.parametrize(
    "variant", [sa.BigInteger(), sa.Integer(), sa.BIGINT()], ids=lambda t: f"sqlite-{t!r}"
)
def test_a_numeric_key_column_with_an_integer_sqlite_variant_is_accepted(
    make: Callable[[], Any], variant: Any
) -> None:
    t = table(
        sa.Column(
            "id", sa.Numeric(19, 0).with_variant(variant, "sqlite"), primary_key=True,
            default=make(),
        )
    )  # fmt: skip
    assert t.c.id.autoincrement is False


@pytest.mark.parametrize("make", INTEGER_DEFAULTS.values(), ids=list(INTEGER_DEFAULTS))
def test_a_numeric_sqlite_variant_is_refused(make: Callable[[], Any]) -> None:
    type_ = sa.BigInteger().with_variant(sa.Numeric(19, 0), "sqlite")
    with pytest.raises(SeqKeysError, match=r"^column t\.id \(its variant for sqlite\) .*float"):
        table(sa.Column("id", type_, primary_key=True, default=make()))


def test_the_orm_refuses_a_numeric_key_column_too() -> None:
    class Base(DeclarativeBase):
        pass

    with pytest.raises(SeqKeysError, match=r"column orders\.id \(on SQLite"):

        class Order(Base):
            __tablename__ = "orders"
            id: Mapped[int] = mapped_column(
                sa.Numeric(19, 0), primary_key=True, default=Snowflake(worker_id=1)
            )

    class Invoice(Base):
        __tablename__ = "invoices"
        id: Mapped[int] = mapped_column(
            sa.Numeric(19, 0).with_variant(sa.BigInteger(), "sqlite"),
            primary_key=True,
            default=Snowflake(worker_id=1),
        )

    assert Invoice.__table__.c.id.autoincrement is False


def test_a_type_decorator_over_numeric_is_judged_by_its_impl_on_sqlite() -> None:
    class Key(sa.TypeDecorator[int]):
        impl = sa.Numeric(19, 0)
        cache_ok = True

    assert bigint_problem(Key(), "sqlite") is not None
    with pytest.raises(SeqKeysError, match="on SQLite, which has no variant"):
        table(sa.Column("id", Key(), primary_key=True, default=Snowflake(worker_id=1)))


# -- unsigned (64-bit) layouts --------------------------------------------------------------

UNSIGNED = SnowflakeLayout.discord(unsigned=True)


def unsigned_table(type_: Any) -> sa.Table:
    return table(sa.Column("id", type_, primary_key=True, default=Snowflake(1, layout=UNSIGNED)))


def test_u64_on_sqlite_takes_an_integer_and_refuses_a_numeric() -> None:
    for type_ in (sa.BigInteger(), sa.Integer(), mysql.BIGINT(unsigned=True)):
        assert u64_problem(type_, "sqlite") is None, type_
    for type_ in (sa.Numeric(20, 0), sa.Numeric(38, 0), oracle.NUMBER()):
        problem = u64_problem(type_, "sqlite")
        assert problem is not None
        assert "float on SQLite" in problem
        assert "SQLite holds no integer past 2**63 - 1" in problem
    # elsewhere, as before
    assert u64_problem(sa.BigInteger()) is not None
    assert u64_problem(sa.Numeric(20, 0)) is None
    assert u64_problem(sa.Numeric(20, 0), "postgresql") is None


@pytest.mark.parametrize(
    "type_",
    [
        sa.Numeric(20, 0).with_variant(sa.BigInteger(), "sqlite"),
        sa.Numeric(38, 0).with_variant(sa.Integer(), "sqlite"),
        mysql.BIGINT(unsigned=True),  # an integer on SQLite: BIGINT
        sa.Numeric(20, 0)
        .with_variant(mysql.BIGINT(unsigned=True), "mysql")
        .with_variant(sa.BigInteger(), "sqlite"),
    ],
    ids=repr,
)
def test_an_unsigned_layout_takes_an_integer_variant_for_sqlite(type_: Any) -> None:
    assert unsigned_table(type_).c.id.autoincrement is False


def test_an_unsigned_layout_on_a_numeric_without_a_sqlite_variant_is_refused() -> None:
    # before: accepted, while the message recommending Numeric(20, 0) said
    # "(not on SQLite ...)"; SQLite then rounded the ids
    with pytest.raises(SeqKeysError) as raised:
        unsigned_table(sa.Numeric(20, 0))
    message = str(raised.value)
    assert message.startswith("column t.id (on SQLite, which has no variant of its own) ")
    assert "whose layout is unsigned" in message
    assert "SQLite holds no integer past 2**63 - 1 at all" in message
    assert ".with_variant(sa.BigInteger(), 'sqlite')" in message
    assert "fails at its INSERT instead of being rounded" in message


def test_an_unsigned_layout_on_a_numeric_sqlite_variant_is_refused() -> None:
    type_ = mysql.BIGINT(unsigned=True).with_variant(sa.Numeric(20, 0), "sqlite")
    with pytest.raises(SeqKeysError, match=r"column t\.id \(its variant for sqlite\) .*unsigned"):
        unsigned_table(type_)


def test_the_unsigned_message_elsewhere_recommends_unsigned_big_integer() -> None:
    with pytest.raises(SeqKeysError) as raised:
        unsigned_table(sa.BigInteger())
    message = str(raised.value)
    assert message.startswith("column t.id cannot hold the ids")
    assert "Declare it sqlalchemy_seqkeys.UnsignedBigInteger()" in message
    assert "not on SQLite" not in message
    unsigned_table(UnsignedBigInteger())  # and the type it recommends is accepted


# -- GUID defaults ----------------------------------------------------------------------------

GUID_DEFAULTS: dict[str, Any] = {
    "new_uuid7": new_uuid7,
    "new_comb_guid": new_comb_guid,
    "CombGuidDefault": CombGuidDefault(),
}


class PlainText(sa.TypeDecorator[str]):
    """A TypeDecorator that converts nothing: the driver gets the uuid.UUID."""

    impl = sa.String(36)
    cache_ok = True


class ShortText(sa.TypeDecorator[str]):
    """Converts nothing, over a column too short for a GUID's text."""

    impl = sa.String(10)
    cache_ok = True


class OverComb(sa.TypeDecorator[uuid.UUID]):
    impl = CombGuid()
    cache_ok = True


class HexGuid(sa.TypeDecorator[uuid.UUID]):
    """SQLAlchemy's "backend-agnostic GUID" recipe: 32 hex digits, converted here."""

    impl = sa.CHAR(32)
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Any) -> Any:
        return None if value is None else uuid.UUID(str(value)).hex


class TextGuid(sa.TypeDecorator[uuid.UUID]):
    impl = sa.String(36)
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Any) -> Any:
        return None if value is None else str(value)


REFUSED_FOR_GUIDS: list[tuple[Any, str]] = [
    (ShortText(), "holds 10 characters"),
    (CombGuid().with_variant(ShortText(), "mysql"), "holds 10 characters"),
]


@pytest.mark.parametrize("default", GUID_DEFAULTS.values(), ids=list(GUID_DEFAULTS))
@pytest.mark.parametrize(
    ("type_", "why"), REFUSED_FOR_GUIDS, ids=[repr(t) for t, _ in REFUSED_FOR_GUIDS]
)
def test_a_guid_default_on_a_decorator_over_short_text_is_refused(
    default: Any, type_: Any, why: str
) -> None:
    # before: accepted (any TypeDecorator was), and MariaDB refused the row (1406)
    with pytest.raises(InvalidGuidError) as raised:
        table(sa.Column("id", type_, primary_key=True, default=default))
    message = str(raised.value)
    assert message.startswith("column t.id")
    assert why in message
    assert "CombGuid()" in message


@pytest.mark.parametrize("default", GUID_DEFAULTS.values(), ids=list(GUID_DEFAULTS))
@pytest.mark.parametrize(
    "type_",
    [
        CombGuid(),
        CombGuid(binary=True),
        OverComb(),  # converts nothing itself: its impl, CombGuid, does
        HexGuid(),  # converts: judged by what it does, not its impl's 32 characters
        TextGuid(),
        PlainText(),  # its impl: text of 36, which some drivers bind a uuid.UUID to
        sa.Uuid(),
        postgresql.UUID(),
        CombGuid().with_variant(sa.Uuid(), "postgresql"),
        sa.String(36),  # psycopg, PyMySQL and asyncmy take a uuid.UUID here (documented)
        sa.Text(),
        sa.Uuid(as_uuid=False),
    ],
    ids=repr,
)
def test_a_guid_default_on_a_type_that_takes_a_uuid_is_accepted(default: Any, type_: Any) -> None:
    t = table(sa.Column("id", type_, primary_key=True, default=default))
    assert t.c.id.default is not None


# -- a positional sequence and a Sequence ------------------------------------------------

SEQUENCE_LIKE: dict[str, Callable[[], Any]] = {
    "PooledSequence": lambda: PooledSequence("a"),
    "BitReversedSequence": lambda: BitReversedSequence("a"),
    "TableSequence": lambda: TableSequence("a", mode="batch"),
}


@pytest.mark.parametrize("make", SEQUENCE_LIKE.values(), ids=list(SEQUENCE_LIKE))
def test_a_sequence_after_a_positional_one_is_refused(make: Callable[[], Any]) -> None:
    # before: the Sequence silently became the column's default
    with pytest.raises(SeqKeysError, match=r"column 'id' has .*Sequence\('b'\) after it"):
        sa.Column("id", sa.BigInteger, make(), sa.Sequence("b"), primary_key=True)
    with pytest.raises(SeqKeysError, match=r"ColumnDefault\(5\) after it"):
        sa.Column("id", sa.BigInteger, make(), sa.ColumnDefault(5), primary_key=True)


@pytest.mark.parametrize("make", SEQUENCE_LIKE.values(), ids=list(SEQUENCE_LIKE))
def test_a_sequence_before_a_positional_one_is_still_refused(make: Callable[[], Any]) -> None:
    with pytest.raises(SeqKeysError, match="has a default already"):
        sa.Column("id", sa.BigInteger, sa.Sequence("b"), make(), primary_key=True)


def test_the_orm_refuses_a_sequence_after_a_positional_one() -> None:
    class Base(DeclarativeBase):
        pass

    with pytest.raises(SeqKeysError, match="after it would replace it"):

        class Order(Base):
            __tablename__ = "orders"
            id: Mapped[int] = mapped_column(
                sa.BigInteger, PooledSequence("a"), sa.Sequence("b"), primary_key=True
            )


def test_a_positional_sequence_keeps_an_onupdate_and_its_copies() -> None:
    pooled = PooledSequence("a")
    column = sa.Column("id", sa.BigInteger, pooled, primary_key=True, onupdate=lambda: 1)
    t = table(column)
    assert t.c.id.default is not None
    assert t.c.id.default.arg is pooled  # type: ignore[attr-defined]
    assert t.c.id.onupdate is not None
    copy = t.to_metadata(sa.MetaData())  # the copy gets default=: nothing refused
    assert copy.c.id.default is not None
    assert copy.c.id.default.arg is pooled  # type: ignore[attr-defined]
