"""CombGuid compiled for every dialect (no server): the exact DDL, binds, literals, layouts."""

from __future__ import annotations

import base64
import uuid
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy.dialects import mssql, mysql, oracle, postgresql, sqlite
from sqlalchemy.engine.interfaces import Dialect
from sqlalchemy.schema import CreateTable

from sqlalchemy_seqkeys import (
    CombGuid,
    CombGuidDefault,
    CombLayout,
    InvalidGuidError,
    new_comb_guid,
)
from sqlalchemy_seqkeys import types as types_module


def spanner_dialect() -> Dialect:
    from google.cloud.sqlalchemy_spanner.sqlalchemy_spanner import SpannerDialect

    return SpannerDialect()  # type: ignore[no-any-return]


DIALECTS: dict[str, Any] = {
    "sqlite": sqlite.dialect,
    "postgresql": postgresql.dialect,
    "mysql": mysql.dialect,
    "mariadb": lambda: mysql.dialect(is_mariadb=True),
    "mssql": mssql.dialect,
    "oracle": oracle.dialect,
    "spanner": spanner_dialect,
}

# (text form, binary=True form) of the key column, as each dialect's DDL says it
EXPECTED_DDL = {
    "sqlite": ("CHAR(36)", "BLOB"),
    "postgresql": ("UUID", "UUID"),
    "mysql": ("CHAR(36) CHARACTER SET ascii", "BINARY(16)"),
    "mariadb": ("CHAR(36) CHARACTER SET ascii", "BINARY(16)"),
    "mssql": ("UNIQUEIDENTIFIER", "UNIQUEIDENTIFIER"),
    "oracle": ("RAW(16)", "RAW(16)"),
    "spanner": ("STRING(36)", "BYTES(16)"),
}

VALUE = uuid.UUID("0190b6a8-6c3e-7d4a-9f1e-2b5c8d7e6f10")


def ddl(dialect: Dialect, binary: bool) -> str:
    table = sa.Table("t", sa.MetaData(), sa.Column("id", CombGuid(binary=binary), primary_key=True))
    return " ".join(str(CreateTable(table).compile(dialect=dialect)).split())


@pytest.mark.parametrize("name", list(DIALECTS))
def test_ddl_per_dialect(name: str) -> None:
    text, binary = EXPECTED_DDL[name]
    dialect = DIALECTS[name]()
    if name == "spanner":
        assert ddl(dialect, False) == f"CREATE TABLE t ( id {text} NOT NULL ) PRIMARY KEY (id)"
        assert ddl(dialect, True) == f"CREATE TABLE t ( id {binary} NOT NULL ) PRIMARY KEY (id)"
    else:
        assert ddl(dialect, False) == f"CREATE TABLE t ( id {text} NOT NULL, PRIMARY KEY (id) )"
        assert ddl(dialect, True) == f"CREATE TABLE t ( id {binary} NOT NULL, PRIMARY KEY (id) )"


EXPECTED_LITERAL = {
    "sqlite": ("'0190b6a8-6c3e-7d4a-9f1e-2b5c8d7e6f10'", "X'0190B6A86C3E7D4A9F1E2B5C8D7E6F10'"),
    "postgresql": ("'0190b6a8-6c3e-7d4a-9f1e-2b5c8d7e6f10'",) * 2,
    "mysql": ("'0190b6a8-6c3e-7d4a-9f1e-2b5c8d7e6f10'", "X'0190B6A86C3E7D4A9F1E2B5C8D7E6F10'"),
    "mariadb": ("'0190b6a8-6c3e-7d4a-9f1e-2b5c8d7e6f10'", "X'0190B6A86C3E7D4A9F1E2B5C8D7E6F10'"),
    "mssql": ("'0190b6a8-6c3e-7d4a-9f1e-2b5c8d7e6f10'",) * 2,
    "oracle": ("HEXTORAW('0190B6A86C3E7D4A9F1E2B5C8D7E6F10')",) * 2,
    "spanner": (
        "'0190b6a8-6c3e-7d4a-9f1e-2b5c8d7e6f10'",
        "FROM_HEX('0190B6A86C3E7D4A9F1E2B5C8D7E6F10')",
    ),
}


@pytest.mark.parametrize("name", list(DIALECTS))
def test_literal_rendering_for_offline_sql(name: str) -> None:
    dialect = DIALECTS[name]()
    for binary, expected in zip((False, True), EXPECTED_LITERAL[name], strict=True):
        table = sa.Table("t", sa.MetaData(), sa.Column("id", CombGuid(binary=binary)))
        sql = (
            sa.select(table.c.id)
            .where(table.c.id == VALUE)
            .compile(dialect=dialect, compile_kwargs={"literal_binds": True})
        )
        assert str(sql).endswith(f"= {expected}")


@pytest.mark.parametrize("name", list(DIALECTS))
def test_bind_and_result_round_trip(name: str) -> None:
    dialect = DIALECTS[name]()
    for binary in (False, True):
        guid = CombGuid(binary=binary)
        stored = guid.process_bind_param(VALUE, dialect)
        # the Spanner DB-API hands BYTES back base64-encoded
        returned = base64.b64encode(stored) if name == "spanner" and binary else stored
        assert guid.process_result_value(returned, dialect) == VALUE
        # text binds are accepted and mean the same GUID
        assert guid.process_bind_param(str(VALUE).upper(), dialect) == stored
        assert guid.process_bind_param(None, dialect) is None


def test_stored_forms() -> None:
    assert CombGuid().process_bind_param(VALUE, sqlite.dialect()) == str(VALUE)
    assert CombGuid(binary=True).process_bind_param(VALUE, mysql.dialect()) == VALUE.bytes
    assert CombGuid().process_bind_param(VALUE, oracle.dialect()) == VALUE.bytes
    assert CombGuid().process_bind_param(VALUE, postgresql.dialect()) == VALUE


@pytest.mark.parametrize("bad", [12345, b"\x01" * 16, 1.5, "not-a-guid", object()])
def test_wrong_values_are_refused_with_a_clear_error(bad: object) -> None:
    with pytest.raises(InvalidGuidError, match=r"CombGuid column takes a uuid\.UUID|is not a GUID"):
        CombGuid().process_bind_param(bad, sqlite.dialect())


def test_wrong_value_through_an_engine_names_the_problem() -> None:
    engine = sa.create_engine("sqlite://")
    table = sa.Table("t", sa.MetaData(), sa.Column("id", CombGuid(), primary_key=True))
    table.metadata.create_all(engine)
    with engine.begin() as conn, pytest.raises(sa.exc.StatementError) as info:
        conn.execute(table.insert(), {"id": 42})
    assert isinstance(info.value.orig, InvalidGuidError)
    assert "not int 42" in str(info.value)


EXPECTED_LAYOUT = {
    "sqlite": CombLayout.AS_STRING,
    "postgresql": CombLayout.AS_STRING,
    "mysql": CombLayout.AS_STRING,
    "mariadb": CombLayout.AS_STRING,
    "mssql": CombLayout.AT_END,
    "oracle": CombLayout.AS_STRING,  # RAW(16) holds UUID.bytes: RFC order, like the text
    "spanner": None,  # random version 4: time order is a hotspot on Spanner
}


@pytest.mark.parametrize("name", list(DIALECTS))
def test_comb_guid_layout_per_dialect(name: str) -> None:
    dialect = DIALECTS[name]()
    assert new_comb_guid.layout_for(dialect) is EXPECTED_LAYOUT[name]
    forced = new_comb_guid.with_layout("as_binary")
    assert forced.layout_for(dialect) is CombLayout.AS_BINARY
    assert isinstance(forced, CombGuidDefault)


def test_comb_guid_is_a_one_argument_column_default() -> None:
    # SQLAlchemy passes the execution context only to one-argument callables.
    column = sa.Column("id", CombGuid(), default=new_comb_guid)
    assert column.default is not None
    assert column.default.is_callable
    assert repr(new_comb_guid) == "new_comb_guid"


@given(st.uuids())
def test_fast_text_form_is_str(value: uuid.UUID) -> None:
    assert types_module._uuid_text(value) == str(value)


def test_comb_guid_is_the_deprecated_name_of_new_comb_guid() -> None:
    import sqlalchemy_seqkeys

    with pytest.deprecated_call(match="use sqlalchemy_seqkeys.new_comb_guid"):
        old = sqlalchemy_seqkeys.comb_guid
    assert old is new_comb_guid
    with pytest.deprecated_call(match="use sqlalchemy_seqkeys.new_comb_guid"):
        from sqlalchemy_seqkeys import comb_guid
    assert comb_guid is new_comb_guid
