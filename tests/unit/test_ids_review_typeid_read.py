"""A ``TypeIDType`` column holding a value that is no GUID: the error names the column's type.

Before, reading it raised an error saying the value came "from a
CombGuid(binary=True) column", the storage ``TypeIDType`` uses inside. Now
the message names ``TypeIDType(prefix='user')`` (an ``InvalidGuidError``, as
before). It does not name ``table.column`` yet, as ``CombGuid``'s does.
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import sqlite

from sqlalchemy_seqkeys import InvalidGuidError, TypeIDType

GARBAGE: list[object] = [
    b"\x00" * 15,
    b"\x00" * 17,
    5,
    b"0x000000-0000-0000-0000-000000000001",
    "not a guid",
]


@pytest.mark.parametrize("native_uuid", [False, True], ids=["binary", "native_uuid"])
@pytest.mark.parametrize("garbage", GARBAGE, ids=repr)
def test_reading_a_value_that_is_no_guid_names_the_typeid_column(
    garbage: object, native_uuid: bool
) -> None:
    engine = sa.create_engine("sqlite://")
    column_type = TypeIDType("user", native_uuid=native_uuid)
    t = sa.Table(
        "accounts",
        sa.MetaData(),
        sa.Column("k", sa.Integer, primary_key=True),
        sa.Column("tid", column_type),
    )
    t.create(engine)
    with engine.begin() as conn:
        conn.exec_driver_sql("INSERT INTO accounts (k, tid) VALUES (1, ?)", (garbage,))
    with engine.connect() as conn, pytest.raises(InvalidGuidError) as raised:
        conn.execute(sa.select(t.c.tid)).all()
    message = str(raised.value)
    assert f"from a {column_type!r} column on sqlite" in message
    assert "CombGuid" not in message


def test_process_result_value_names_the_typeid_type() -> None:
    dialect = sqlite.dialect()
    column_type = TypeIDType("user")
    with pytest.raises(InvalidGuidError) as raised:
        column_type.process_result_value(b"\x01" * 3, dialect)
    assert "TypeIDType(prefix='user')" in str(raised.value)
    assert "CombGuid" not in str(raised.value)
    process = column_type.dialect_impl(dialect).result_processor(dialect, None)
    assert process is not None
    with pytest.raises(InvalidGuidError) as raised:
        process(b"\x01" * 3)
    assert "TypeIDType(prefix='user')" in str(raised.value)
    assert "CombGuid" not in str(raised.value)
