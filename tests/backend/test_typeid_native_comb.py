"""``TypeIDType(native_uuid=True)`` refuses a COMB default, as ``CombGuid(native_uuid=True)`` does.

MariaDB's ``UUID`` type swaps the groups of the values whose bits read as a UUID of
versions 1 to 5, as many COMB GUIDs do (tests/backend/test_mariadb_uuid.py shows it on
the server), so their time order is lost; UUIDv7 keys, what ``typeid_default`` mints,
keep it. Checked when the column joins its table, on every engine alike.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import (
    CombGuid,
    InvalidGuidError,
    TypeID,
    TypeIDType,
    new_comb,
    new_comb_guid,
    new_uuid7,
    typeid_default,
)
from sqlalchemy_seqkeys.comb import comb_minter


def _id(default: object) -> str:
    """The default's repr without its address: the same in every xdist worker."""
    return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(default))


COMB_DEFAULTS: list[Callable[..., Any]] = [
    new_comb_guid,
    comb_minter("as_binary"),
    functools.partial(new_comb, "as_string"),
]


@pytest.mark.parametrize("default", COMB_DEFAULTS, ids=_id)
def test_a_comb_default_on_a_native_uuid_typeid_column_is_refused(
    default: Callable[..., Any],
) -> None:
    with pytest.raises(
        InvalidGuidError,
        match=r"column orders\.id is TypeIDType\(prefix='ord', native_uuid=True\), "
        r"MariaDB's UUID type.*typeid_default\('ord'\)",
    ):
        sa.Table(
            "orders",
            sa.MetaData(),
            sa.Column("id", TypeIDType("ord", native_uuid=True), primary_key=True, default=default),
        )
    # CombGuid's refusal is unchanged
    with pytest.raises(InvalidGuidError, match=r"is CombGuid\(native_uuid=True\).*new_uuid7"):
        sa.Table(
            "orders",
            sa.MetaData(),
            sa.Column("id", CombGuid(native_uuid=True), primary_key=True, default=default),
        )


@pytest.mark.parametrize("default", [*COMB_DEFAULTS, typeid_default("ord"), new_uuid7], ids=_id)
def test_the_16_byte_typeid_column_takes_any_of_them(default: Callable[..., Any]) -> None:
    sa.Table(
        "orders",
        sa.MetaData(),
        sa.Column("id", TypeIDType("ord"), primary_key=True, default=default),
    )


@pytest.mark.parametrize("default", [typeid_default("ord"), new_uuid7], ids=_id)
def test_uuidv7_defaults_are_taken_on_native_uuid(default: Callable[..., Any]) -> None:
    sa.Table(
        "orders",
        sa.MetaData(),
        sa.Column("id", TypeIDType("ord", native_uuid=True), primary_key=True, default=default),
    )


@pytest.fixture
def mariadb(mysql_engine: Engine) -> Iterator[Engine]:
    if not mysql_engine.dialect.is_mariadb:  # type: ignore[attr-defined]
        pytest.skip("MySQL has no UUID type")
    yield mysql_engine
    sa.Table("seqkeys_typeid_native", sa.MetaData()).drop(mysql_engine, checkfirst=True)


@pytest.mark.backend
def test_the_default_it_takes_keeps_minting_order_in_mariadb_uuid(mariadb: Engine) -> None:
    table = sa.Table(
        "seqkeys_typeid_native",
        sa.MetaData(),
        sa.Column(
            "id",
            TypeIDType("ord", native_uuid=True),
            primary_key=True,
            default=typeid_default("ord"),
        ),
        sa.Column("n", sa.Integer, nullable=False),
    )
    table.drop(mariadb, checkfirst=True)
    table.create(mariadb)
    with mariadb.begin() as conn:
        assert (
            "uuid"
            in conn.execute(sa.text("SHOW CREATE TABLE seqkeys_typeid_native")).one()[1].lower()
        )
        for n in range(300):  # over many milliseconds, where COMB keys lose their order
            conn.execute(sa.insert(table), {"n": n})
            if n % 10 == 0:
                time.sleep(0.002)
        rows = conn.execute(sa.select(table.c.n, table.c.id).order_by(table.c.id)).all()
    assert [n for n, _ in rows] == list(range(300))
    assert all(isinstance(key, TypeID) and key.prefix == "ord" for _, key in rows)
