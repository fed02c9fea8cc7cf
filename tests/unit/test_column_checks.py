"""A key column is checked when it joins its table, Core and ORM alike.

A default that hands out values the column cannot hold is refused where it is
declared, not at the first INSERT on one engine; an integer key column with a
seqkeys default is never auto-incrementing, so a migration of it cannot
become SERIAL / AUTO_INCREMENT (tests/backend/test_migrated_schema.py checks
that on the servers).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import mysql, oracle, postgresql
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from sqlalchemy_seqkeys import (
    BitReversed,
    BitReversedSequence,
    CombGuid,
    CombLayout,
    InvalidBitReversalError,
    InvalidGuidError,
    InvalidSequenceError,
    InvalidShardError,
    InvalidSnowflakeError,
    PooledSequence,
    SeqKeysError,
    ShardId,
    Snowflake,
    TableSequence,
    new_comb,
    new_comb_guid,
    new_uuid7,
    spanner_shard_column,
)
from sqlalchemy_seqkeys.comb import comb_minter


def table(*columns: sa.Column[Any]) -> sa.Table:
    return sa.Table("t", sa.MetaData(), *columns)


INTEGER_DEFAULTS: list[tuple[str, Callable[[], Any], type[SeqKeysError]]] = [
    ("Snowflake", lambda: Snowflake(worker_id=1), InvalidSnowflakeError),
    ("TableSequence", lambda: TableSequence("s", mode="batch"), InvalidSequenceError),
    (
        "BitReversed",
        lambda: BitReversed(TableSequence("s", mode="in_transaction")),
        InvalidBitReversalError,
    ),
    ("BitReversedSequence", lambda: BitReversedSequence("b"), InvalidBitReversalError),
]
INTEGER_IDS = [what for what, _, _ in INTEGER_DEFAULTS]

TOO_SMALL = [
    sa.Integer(),
    sa.SmallInteger(),
    sa.INTEGER(),
    mysql.INTEGER(unsigned=True),
    mysql.MEDIUMINT(),
    sa.Numeric(18, 0),
    sa.Numeric(20, 2),
    sa.Numeric(),
    sa.Float(),
    sa.Integer().with_variant(sa.BigInteger(), "postgresql"),
    sa.BigInteger().with_variant(sa.Integer(), "mysql"),
]

BIG_ENOUGH = [
    sa.BigInteger(),
    sa.BIGINT(),
    postgresql.BIGINT(),
    mysql.BIGINT(unsigned=True),
    # a NUMERIC needs an integer variant for SQLite, which binds it as a float
    # (tests/unit/test_column_checks_more.py)
    sa.Numeric(19, 0).with_variant(sa.BigInteger(), "sqlite"),
    sa.Numeric(38).with_variant(sa.BigInteger(), "sqlite"),
    oracle.NUMBER().with_variant(sa.BigInteger(), "sqlite"),
    oracle.NUMBER(19).with_variant(sa.Integer(), "sqlite"),
    sa.BigInteger().with_variant(sa.Integer(), "sqlite"),  # SQLite's INTEGER is 64-bit
    sa.BigInteger().with_variant(sa.Integer(), "spanner"),  # INT64
]


@pytest.mark.parametrize(("what", "make", "error"), INTEGER_DEFAULTS, ids=INTEGER_IDS)
@pytest.mark.parametrize("type_", TOO_SMALL, ids=repr)
def test_an_integer_key_too_small_for_63_bits_is_refused(
    what: str, make: Callable[[], Any], error: type[SeqKeysError], type_: Any
) -> None:
    with pytest.raises(error, match=r"column t\.id .*BigInteger"):
        table(sa.Column("id", type_, primary_key=True, default=make()))


@pytest.mark.parametrize(("what", "make", "error"), INTEGER_DEFAULTS, ids=INTEGER_IDS)
@pytest.mark.parametrize("type_", BIG_ENOUGH, ids=repr)
def test_a_bigint_key_is_accepted_and_not_autoincrementing(
    what: str, make: Callable[[], Any], error: type[SeqKeysError], type_: Any
) -> None:
    t = table(sa.Column("id", type_, primary_key=True, default=make()))
    assert t.c.id.autoincrement is False
    assert t.autoincrement_column is None


def test_the_orm_resolves_mapped_int_before_the_check() -> None:
    class Base(DeclarativeBase):
        pass

    with pytest.raises(InvalidSequenceError, match="type_annotation_map"):

        class Invoice(Base):
            __tablename__ = "invoices"
            id: Mapped[int] = mapped_column(
                primary_key=True, default=TableSequence("invoice_id", mode="batch")
            )

    class BigBase(DeclarativeBase):
        type_annotation_map = {int: sa.BigInteger}  # noqa: RUF012 - SQLAlchemy reads it as is

    class Order(BigBase):
        __tablename__ = "orders"
        id: Mapped[int] = mapped_column(primary_key=True, default=Snowflake(worker_id=1))

    assert isinstance(Order.__table__.c.id.type, sa.BigInteger)
    assert Order.__table__.c.id.autoincrement is False


def test_an_explicit_autoincrement_is_left_alone() -> None:
    t = table(
        sa.Column("id", sa.BigInteger, primary_key=True),
        sa.Column("n", sa.BigInteger, default=Snowflake(worker_id=1), autoincrement="ignore_fk"),
    )
    assert t.c.n.autoincrement == "ignore_fk"
    assert t.c.id.autoincrement == "auto"  # not ours


GUID_DEFAULTS: list[tuple[str, Any]] = [
    ("new_comb_guid", new_comb_guid),
    ("new_comb_guid.with_layout", new_comb_guid.with_layout("at_end")),
    ("new_uuid7", new_uuid7),
    ("comb_minter", comb_minter(CombLayout.AS_BINARY)),
    ("comb_minter as_string", comb_minter("as_string")),
    ("partial(new_comb)", partial(new_comb, "as_string")),
]

GUID_IDS = [what for what, _ in GUID_DEFAULTS]


@pytest.mark.parametrize(("what", "default"), GUID_DEFAULTS, ids=GUID_IDS)
@pytest.mark.parametrize(
    "type_",
    [
        sa.String(20),
        sa.CHAR(35),
        sa.Unicode(32),
        sa.Integer(),
        sa.BigInteger(),
        sa.LargeBinary(16),
        sa.BINARY(16),
        sa.DateTime(),
        sa.Enum("a", "b"),
        sa.String(36).with_variant(sa.String(32), "mysql"),
    ],
    ids=repr,
)
def test_a_guid_default_on_a_column_that_cannot_store_it_is_refused(
    what: str, default: Any, type_: Any
) -> None:
    with pytest.raises(InvalidGuidError, match=r"column t\.id .*CombGuid\(\)"):
        table(sa.Column("id", type_, primary_key=True, default=default))


@pytest.mark.parametrize(("what", "default"), GUID_DEFAULTS, ids=GUID_IDS)
@pytest.mark.parametrize(
    "type_",
    [CombGuid(), CombGuid(binary=True), sa.Uuid(), postgresql.UUID(), sa.String(36), sa.Text()],
    ids=repr,
)
def test_a_guid_default_on_a_guid_capable_column_is_accepted(
    what: str, default: Any, type_: Any
) -> None:
    t = table(sa.Column("id", type_, primary_key=True, default=default))
    assert t.c.id.autoincrement == "auto"  # not an integer key: nothing to say


def test_the_orm_checks_a_guid_column_typed_by_its_annotation() -> None:
    class Base(DeclarativeBase):
        pass

    class Document(Base):
        __tablename__ = "documents"
        id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_comb_guid)

    assert isinstance(Document.__table__.c.id.type, sa.Uuid)

    with pytest.raises(InvalidGuidError, match=r"column notes\.id"):

        class Note(Base):
            __tablename__ = "notes"
            id: Mapped[str] = mapped_column(sa.String(32), primary_key=True, default=new_uuid7)


def test_a_shard_column_may_come_before_the_columns_it_hashes() -> None:
    t = table(
        sa.Column("shard", sa.BigInteger, primary_key=True, default=ShardId("at", shards=8)),
        sa.Column("at", sa.String(30), primary_key=True),
    )
    assert t.c.shard.autoincrement is False

    class Base(DeclarativeBase):
        pass

    class Log(Base):
        __tablename__ = "logs"
        shard: Mapped[int] = spanner_shard_column("shard", "user_id", "at", shards=16)
        user_id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True)
        at: Mapped[str] = mapped_column(sa.String(30), primary_key=True)

    assert Log.__table__.c.shard.computed is not None


def test_a_shard_of_a_missing_column_is_refused_when_the_table_is_complete() -> None:
    with pytest.raises(InvalidShardError, match=r"column t\.shard hashes 'nope'.*'shard', 'at'"):
        table(
            sa.Column("shard", sa.BigInteger, primary_key=True, default=ShardId("nope", shards=8)),
            sa.Column("at", sa.String(30)),
        )

    class Base(DeclarativeBase):
        pass

    with pytest.raises(InvalidShardError, match=r"column logs\.shard hashes 'LastAccess'"):

        class Log(Base):
            __tablename__ = "logs"
            shard: Mapped[int] = spanner_shard_column("shard", "LastAccess", shards=16)
            last_access: Mapped[str] = mapped_column(sa.String(30), primary_key=True)


def test_columns_appended_later_are_checked_at_create_table() -> None:
    # The hashed column may be appended after the shard column: no error
    # until the table is created without it.
    engine = sa.create_engine("sqlite://")
    t = table(sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=False))
    t.append_column(sa.Column("shard", sa.BigInteger, default=ShardId("at", shards=8)))
    t.append_column(sa.Column("at", sa.String(30)))
    t.create(engine)  # complete: fine

    u = sa.Table(
        "u", sa.MetaData(), sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=False)
    )
    u.append_column(sa.Column("shard", sa.BigInteger, default=ShardId("nope", shards=8)))
    with pytest.raises(InvalidShardError, match="nope"):
        u.create(engine)
    assert not sa.inspect(engine).has_table("u")


def test_a_copy_of_the_table_keeps_the_flag_and_the_checks() -> None:
    t = table(sa.Column("id", sa.BigInteger, primary_key=True, default=Snowflake(worker_id=1)))
    copy = t.to_metadata(sa.MetaData())
    assert copy.c.id.autoincrement is False
    assert isinstance(copy.c.id.default, sa.ColumnDefault)


def test_columns_without_seqkeys_defaults_are_untouched() -> None:
    t = table(
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("n", sa.Integer, default=lambda: 1),
        sa.Column("s", sa.String(5), default=str),
    )
    assert t.c.id.autoincrement == "auto"
    assert t.autoincrement_column is t.c.id


SEQUENCE_LIKE: dict[str, Callable[[], Any]] = {
    "PooledSequence": lambda: PooledSequence("order_no", batch_size=50),
    "BitReversedSequence": lambda: BitReversedSequence("order_no"),
    "TableSequence": lambda: TableSequence("order_no", mode="batch"),
}


@pytest.mark.parametrize("make", SEQUENCE_LIKE.values(), ids=list(SEQUENCE_LIKE))
def test_a_sequence_like_default_given_positionally_is_the_default(
    make: Callable[[], Any],
) -> None:
    # Column("id", BigInteger, Sequence("x")) is how SQLAlchemy takes a sequence;
    # the library's sequences read the same way and mean exactly default=...
    default = make()
    table = sa.Table("t", sa.MetaData(), sa.Column("id", sa.BigInteger, default, primary_key=True))
    assert table.c.id.default is not None
    assert table.c.id.default.arg is default  # type: ignore[attr-defined]
    assert table.c.id.autoincrement is False  # checked as a default= column is
    with pytest.raises(SeqKeysError, match="32 bits"):
        sa.Table("u", sa.MetaData(), sa.Column("id", sa.Integer, make(), primary_key=True))


def test_a_positional_sequence_beside_another_default_is_refused() -> None:
    with pytest.raises(SeqKeysError, match="has a default already"):
        sa.Column("id", sa.BigInteger, PooledSequence("order_no"), default=5)


def test_a_positional_sequence_mints_on_sqlite() -> None:
    md = sa.MetaData()
    order_no = PooledSequence("order_no", batch_size=10, metadata=md)
    orders = sa.Table(
        "orders", md, sa.Column("id", sa.BigInteger, order_no, primary_key=True),
        sa.Column("note", sa.String(10)),
    )  # fmt: skip
    engine = sa.create_engine("sqlite://")
    md.create_all(engine)
    with engine.begin() as conn:
        conn.execute(orders.insert(), [{"note": "x"}] * 25)
        keys = conn.scalars(sa.select(orders.c.id).order_by(orders.c.id)).all()
    assert keys == list(range(1, 26))
    engine.dispose()
