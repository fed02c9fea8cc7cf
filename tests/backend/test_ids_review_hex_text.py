"""A GUID's text is read as hex digits only: "0x", "+", "_" and spaces spell no GUID.

Before, the quick path for the 36-character form (as a database hands it back)
checked for ASCII letters and digits and then read the digits with
``int(digits, 16)``, which takes a leading "0x": ``"0x000000-0000-...-0001"``
was read as ``00000000-0000-...-0001``, another value. ``UuidV47.decode`` of
such text returned a different key than the one encoded, a ``CombGuid`` bind
``id == "0x..."`` found another row, and a ``CHAR(36)`` column holding both
strings read them as one UUID. Now each of these refuses the text.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import CombGuid, InvalidGuidError, InvalidOpaqueIdError, UuidV47
from sqlalchemy_seqkeys._validate import parse_uuid

pytestmark = pytest.mark.backend

ONE = "00000000-0000-0000-0000-000000000001"
#: 36 characters, hyphens in place, ASCII letters and digits: none a GUID
ALIASES = [
    "0x000000-0000-0000-0000-000000000001",
    "0X000000-0000-0000-0000-000000000001",
    "0x7fffff-0000-7000-8000-000000000001",
]
#: the same shape with what else int() reads; refused before too, kept refused
OTHERS = [
    "+0000000-0000-0000-0000-000000000001",
    " 0000000-0000-0000-0000-000000000001",
    "0_000000-0000-0000-0000-000000000001",
    "\uff10" + "0000000-0000-0000-0000-000000000001",  # a full-width zero
]


@pytest.mark.parametrize("text", ALIASES + OTHERS)
def test_parse_uuid_reads_no_prefix_or_other_digits(text: str) -> None:
    assert parse_uuid(text) is None
    assert parse_uuid(text.replace("-", "")) is None
    assert parse_uuid("{" + text + "}") is None


def test_parse_uuid_still_reads_every_hex_digit() -> None:
    text = "0123abcd-ef45-6789-ABCD-EF0123456789"
    assert parse_uuid(text) == uuid.UUID(text)
    assert parse_uuid(ONE) == uuid.UUID(int=1)


def test_uuidv47_decode_refuses_a_0x_alias_of_a_public_id() -> None:
    public = UuidV47(bytes(16))
    key = uuid.UUID("0190b6a8-6c3e-7d4a-9f1e-2b5c8d7e6f10")
    text = str(public.encode(key))
    assert public.decode(text) == key
    alias = "0x" + text[2:]
    with pytest.raises(InvalidOpaqueIdError, match=r"takes a uuid\.UUID or its text form"):
        public.decode(alias)


@pytest.fixture(params=["sqlite", "mysql"])
def guid_table(request: pytest.FixtureRequest, engines: Any) -> Iterator[tuple[Engine, sa.Table]]:
    engine: Engine = engines.get(request.param)
    md = sa.MetaData()
    table = sa.Table(
        "seqkeys_ids_review_hex",
        md,
        sa.Column("id", CombGuid(), primary_key=True),
        sa.Column("n", sa.Integer),
    )
    md.drop_all(engine)
    md.create_all(engine)
    yield engine, table
    md.drop_all(engine)


def test_a_combguid_bind_of_a_0x_alias_is_refused(guid_table: tuple[Engine, sa.Table]) -> None:
    engine, table = guid_table
    with engine.begin() as conn:
        conn.execute(table.insert(), {"id": uuid.UUID(int=1), "n": 1})
    for alias in ALIASES:
        # SQLAlchemy wraps a bind processor's error in StatementError; .orig is ours
        with engine.connect() as conn, pytest.raises(sa.exc.StatementError) as raised:
            conn.execute(sa.select(table.c.n).where(table.c.id == alias)).all()
        assert isinstance(raised.value.orig, InvalidGuidError)
        assert "is not a GUID" in str(raised.value.orig)
        with engine.begin() as conn, pytest.raises(sa.exc.StatementError) as raised:
            conn.execute(table.insert(), {"id": alias, "n": 2})
        assert isinstance(raised.value.orig, InvalidGuidError)
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(table)).scalar() == 1


def test_a_char36_holding_a_0x_alias_is_no_guid(guid_table: tuple[Engine, sa.Table]) -> None:
    engine, table = guid_table
    raw = sa.Table(
        table.name,
        sa.MetaData(),
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("n", sa.Integer),
    )
    with engine.begin() as conn:
        conn.execute(raw.insert(), [{"id": ONE, "n": 1}, {"id": ALIASES[0], "n": 2}])
    with engine.connect() as conn:
        assert conn.execute(sa.select(table.c.id).where(table.c.n == 1)).scalar() == uuid.UUID(ONE)
        with pytest.raises(InvalidGuidError, match=f"column {table.name}.id"):
            conn.execute(sa.select(table.c.id).where(table.c.n == 2)).all()
