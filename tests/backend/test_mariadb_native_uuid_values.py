"""The values MariaDB's ``UUID`` type refuses are refused when stored, with the library's error.

MariaDB 10.11.5+ answers ``Incorrect uuid value`` for a UUID of version 8 to 15 whose
byte 8 is 0x01 to 0x80 (stored as given, it would read back as one it had swapped).
``CombGuid(native_uuid=True)`` raises InvalidGuidError for such a value and
``TypeIDType(..., native_uuid=True)`` InvalidTypeIDError, both naming
``native_uuid=False``: each of the 256 version and variant nibble pairs is stored and
read back equal, or refused that way, never by the driver. A comparison with such a
value is not refused: it finds no row (``==``, ``in_``), and storing it still raises.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import (
    CombGuid,
    InvalidGuidError,
    InvalidTypeIDError,
    SeqKeysError,
    TypeID,
    TypeIDType,
    new_uuid7,
)

#: every version nibble with every variant nibble, the other bits fixed (byte 8 is 0xV7)
PAIRS = [(version, variant) for version in range(16) for variant in range(16)]


def _value(version: int, variant: int, byte8_low: int = 7) -> uuid.UUID:
    return uuid.UUID(f"01941f29-7c00-{version:x}d75-{variant:x}{byte8_low:x}ad-cfe72f36ad3d")


def _mariadb_refuses(value: uuid.UUID) -> bool:
    """MariaDB's rule, measured on 10.11 over every byte 6 and byte 8 (and random values)."""
    b = value.bytes
    return b[6] >= 0x80 and 0x01 <= b[8] <= 0x80


@pytest.fixture
def mariadb(mysql_engine: Engine) -> Iterator[tuple[Engine, sa.MetaData]]:
    if not mysql_engine.dialect.is_mariadb:  # type: ignore[attr-defined]
        pytest.skip("MySQL has no UUID type")
    md = sa.MetaData()
    yield mysql_engine, md
    md.drop_all(mysql_engine)


def _store(engine: Engine, table: sa.Table, value: Any) -> Any:
    """Insert ``value`` and read it back; the library's error (unwrapped) if it refused it.

    A driver error (``sa.exc.DBAPIError``) is not caught: the test fails on it.
    """
    try:
        with engine.begin() as conn:
            conn.execute(table.insert(), {"id": value})
            return conn.scalar(sa.select(table.c.id).where(table.c.id == value))
    except sa.exc.StatementError as exc:
        if isinstance(exc, sa.exc.DBAPIError) or not isinstance(exc.orig, SeqKeysError):
            raise
        return exc.orig


def _is_error(got: object, error: type[Exception]) -> bool:
    """``got`` is ``error`` (a TypeID column's error is no GUID error, nor the reverse)."""
    other = InvalidTypeIDError if error is InvalidGuidError else InvalidGuidError
    return isinstance(got, error) and not isinstance(got, other)


def _check_every_pair(
    engine: Engine, table: sa.Table, make: Callable[[uuid.UUID], Any], error: type[Exception]
) -> None:
    refused = []
    for version, variant in PAIRS:
        value = make(_value(version, variant))
        got = _store(engine, table, value)
        if isinstance(got, Exception):
            assert _is_error(got, error), got
            assert "MariaDB's UUID type" in str(got), got
            assert "native_uuid=False" in str(got), got
            refused.append((version, variant))
        else:
            assert got == value
    # versions 8 to 15 with the NCS variant (top variant bit 0): 64 of the 256 pairs
    assert refused == [(v, w) for v, w in PAIRS if v >= 8 and w < 8]
    assert refused == [p for p in PAIRS if _mariadb_refuses(_value(*p))]


def test_combguid_native_uuid_stores_or_refuses_every_version_and_variant(
    mariadb: tuple[Engine, sa.MetaData],
) -> None:
    engine, md = mariadb
    table = sa.Table("guids", md, sa.Column("id", CombGuid(native_uuid=True), primary_key=True))
    md.create_all(engine)
    _check_every_pair(engine, table, lambda u: u, InvalidGuidError)


def test_typeidtype_native_uuid_stores_or_refuses_every_version_and_variant(
    mariadb: tuple[Engine, sa.MetaData],
) -> None:
    engine, md = mariadb
    column = sa.Column("id", TypeIDType("user", native_uuid=True), primary_key=True)
    table = sa.Table("users", md, column)
    md.create_all(engine)
    _check_every_pair(engine, table, lambda u: TypeID("user", u), InvalidTypeIDError)


#: each form a column binds: a UUID, its text and 32 hex digits; a TypeID, its text, a UUID
GUID_FORMS: list[Callable[[uuid.UUID], Any]] = [lambda u: u, str, lambda u: u.hex]
TYPEID_FORMS: list[Callable[[uuid.UUID], Any]] = [
    lambda u: TypeID("user", u),
    lambda u: str(TypeID("user", u)),
    lambda u: u,
]


@pytest.mark.parametrize(
    ("type_", "forms", "error"),
    [
        (CombGuid(native_uuid=True), GUID_FORMS, InvalidGuidError),
        (TypeIDType("user", native_uuid=True), TYPEID_FORMS, InvalidTypeIDError),
    ],
    ids=["CombGuid", "TypeIDType"],
)
def test_each_bound_form_and_the_byte_8_edges(
    mariadb: tuple[Engine, sa.MetaData],
    type_: Any,
    forms: list[Callable[[uuid.UUID], Any]],
    error: type[Exception],
) -> None:
    engine, md = mariadb
    table = sa.Table("ids", md, sa.Column("id", type_, primary_key=True))
    md.create_all(engine)
    # byte 8 of 0x00 is taken, 0x80 refused: MariaDB's test is on -byte8, not the variant
    stored, refused = _value(9, 0, byte8_low=0), _value(8, 8, byte8_low=0)
    assert not _mariadb_refuses(stored)
    assert _mariadb_refuses(refused)
    for form in forms:
        assert _store(engine, table, form(stored)) is not None
        got = _store(engine, table, form(refused))
        assert _is_error(got, error), got
        with engine.begin() as conn:
            conn.execute(table.delete())
    # an executemany with one such value among good ones: refused before anything is sent
    rows = [{"id": new_uuid7()} for _ in range(5)] + [{"id": refused}]
    with pytest.raises(sa.exc.StatementError) as caught, engine.begin() as conn:
        conn.execute(table.insert(), rows)
    assert not isinstance(caught.value, sa.exc.DBAPIError)
    assert _is_error(caught.value.orig, error)
    with engine.connect() as conn:
        assert conn.scalar(sa.select(sa.func.count()).select_from(table)) == 0


def test_offline_sql_refuses_them_too() -> None:
    mariadb = sa.engine.make_url("mariadb+pymysql://").get_dialect()()
    value = _value(9, 3)
    for type_, given, error in [
        (CombGuid(native_uuid=True), value, InvalidGuidError),
        (TypeIDType("user", native_uuid=True), TypeID("user", value), InvalidTypeIDError),
    ]:
        table = sa.Table("t", sa.MetaData(), sa.Column("id", type_))
        insert = table.insert().values(id=given)
        # SQLAlchemy reports an error rendering a literal as a CompileError from it
        with pytest.raises(sa.exc.CompileError) as caught:
            insert.compile(dialect=mariadb, compile_kwargs={"literal_binds": True})
        assert _is_error(caught.value.__cause__, error)
        assert "MariaDB's UUID type" in str(caught.value.__cause__)
        assert "native_uuid=False" in str(caught.value.__cause__)
        # without native_uuid, the same value is 16 bytes and compiles
        plain = sa.Table("t", sa.MetaData(), sa.Column("id", type(type_)(*_plain_args(type_))))
        plain.insert().values(id=given).compile(
            dialect=mariadb, compile_kwargs={"literal_binds": True}
        )


def _plain_args(type_: Any) -> tuple[Any, ...]:
    return (type_.prefix,) if isinstance(type_, TypeIDType) else (True,)


@pytest.mark.parametrize("name", ["sqlite", "postgresql"])
def test_other_engines_store_them_all(name: str, engines: Any) -> None:
    # native_uuid=True is MariaDB's UUID only: elsewhere every value is stored
    engine = engines.get(name)
    md = sa.MetaData()
    table = sa.Table("guids", md, sa.Column("id", CombGuid(native_uuid=True), primary_key=True))
    md.create_all(engine)
    try:
        values = [_value(v, w) for v, w in PAIRS]
        with engine.begin() as conn:
            conn.execute(table.insert(), [{"id": v} for v in values])
            assert sorted(conn.scalars(sa.select(table.c.id))) == sorted(values)
    finally:
        md.drop_all(engine)


@pytest.mark.parametrize(
    ("type_", "make", "error"),
    [
        (CombGuid(native_uuid=True), lambda u: u, InvalidGuidError),
        (TypeIDType("user", native_uuid=True), lambda u: TypeID("user", u), InvalidTypeIDError),
    ],
    ids=["CombGuid", "TypeIDType"],
)
def test_a_comparison_with_a_refused_value_finds_no_row(
    mariadb: tuple[Engine, sa.MetaData],
    type_: Any,
    make: Callable[[uuid.UUID], Any],
    error: type[Exception],
) -> None:
    # only a stored value is refused: a comparison binds the text, no row holds it
    engine, md = mariadb
    table = sa.Table(
        "ids", md, sa.Column("id", type_, primary_key=True), sa.Column("n", sa.Integer)
    )
    md.create_all(engine)
    good, refused = make(_value(7, 8)), make(_value(9, 3))
    assert _mariadb_refuses(_value(9, 3))
    column = table.c.id
    with engine.begin() as conn:
        conn.execute(table.insert(), {"id": good, "n": 1})
        assert conn.execute(sa.select(table).where(column == refused)).all() == []
        assert conn.scalars(sa.select(column).where(column.in_([good, refused]))).all() == [good]
        assert conn.scalars(sa.select(column).where(column.in_([refused]))).all() == []
        # MariaDB compares with NULL (warning 1292): no row either way, and no error
        conn.execute(sa.select(table).where(column != refused)).all()
        conn.execute(sa.select(table).where(column.not_in([refused]))).all()
        assert conn.execute(table.update().where(column == refused).values(n=2)).rowcount == 0
        assert conn.execute(table.delete().where(column == refused)).rowcount == 0
        assert conn.scalars(sa.select(table.c.n)).all() == [1]
    where = sa.select(table).where(column == refused)
    assert "id =" in str(where.compile(engine, compile_kwargs={"literal_binds": True}))
    # storing it is still refused, by INSERT and by UPDATE ... SET, with the library's error
    assert _is_error(_store(engine, table, refused), error)
    with pytest.raises(sa.exc.StatementError) as caught, engine.begin() as conn:
        conn.execute(table.update().where(column == good).values(id=refused))
    assert not isinstance(caught.value, sa.exc.DBAPIError)
    assert _is_error(caught.value.orig, error)
    # the comparison's type is cached, and not the stored type in the statement cache
    compared = type_.coerce_compared_value(sa.sql.operators.eq, refused)
    assert compared is type_.coerce_compared_value(sa.sql.operators.eq, good)
    assert compared._static_cache_key != type_._static_cache_key
