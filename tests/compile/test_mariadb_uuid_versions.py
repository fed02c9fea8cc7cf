"""Which MariaDB releases get their own ``UUID`` type for ``native_uuid=True``.

MariaDB stores UUIDs of version 6 and up unswapped from 10.9.8, 10.10.6, 10.11.5
and 11.0.3 (MDEV-29959), but those releases, 11.1.0 to 11.1.2 and 11.2.0 to
11.2.1 compare such values wrongly (MDEV-31926, "UUID v7 are compared
incorrectly": ``WHERE id > x``, ranges and sorts go wrong). The fix came in
10.10.7, 10.11.6, 11.0.4, 11.1.3 and 11.2.2, and is in every 11.3 and later.
Before a fixed release ``CombGuid(native_uuid=True)`` is ``CHAR(36)`` and
``TypeIDType(..., native_uuid=True)`` ``BINARY(16)``, as on 10.11.4.
"""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.engine.interfaces import Dialect
from sqlalchemy.schema import CreateTable

from sqlalchemy_seqkeys import CombGuid, TypeIDType
from sqlalchemy_seqkeys._dialect import mariadb_uuid_keeps_v7_order

#: server version -> whether MariaDB's UUID type keeps (and compares) version 7 in order
VERSIONS: list[tuple[tuple[Any, ...], bool]] = [
    ((10, 7, 8), False),
    ((10, 9, 8), False),  # MDEV-29959 in, MDEV-31926 not: the last 10.9
    ((10, 10, 5), False),
    ((10, 10, 6), False),
    ((10, 10, 7), True),
    ((10, 11, 4), False),
    ((10, 11, 5), False),
    ((10, 11, 6), True),
    ((10, 11, 19), True),  # this suite's server
    ((11, 0, 2), False),
    ((11, 0, 3), False),
    ((11, 0, 4), True),
    ((11, 1, 0), False),
    ((11, 1, 2), False),
    ((11, 1, 3), True),
    ((11, 2, 0), False),
    ((11, 2, 1), False),
    ((11, 2, 2), True),
    ((11, 3, 0), True),
    ((11, 4, 2), True),
    ((12, 0, 1), True),
    # as SQLAlchemy parses "10.11.5-MariaDB-1:10.11.5+maria~ubu2204"
    ((10, 11, 5, "MariaDB"), False),
    ((10, 11, 6, "MariaDB"), True),
]


def _mariadb(version: tuple[Any, ...] | None) -> Dialect:
    dialect = mysql.dialect(is_mariadb=True)  # what mysql+pymysql:// becomes on MariaDB
    dialect.server_version_info = version
    return dialect


def _ddl(dialect: Dialect, type_: Any) -> str:
    table = sa.Table("t", sa.MetaData(), sa.Column("id", type_, primary_key=True))
    return " ".join(str(CreateTable(table).compile(dialect=dialect)).split())


@pytest.mark.parametrize(("version", "native"), VERSIONS, ids=lambda v: str(v))
def test_keeps_v7_order(version: tuple[Any, ...], native: bool) -> None:
    assert mariadb_uuid_keeps_v7_order(_mariadb(version)) is native


@pytest.mark.parametrize(("version", "native"), VERSIONS, ids=lambda v: str(v))
def test_combguid_column(version: tuple[Any, ...], native: bool) -> None:
    ddl = _ddl(_mariadb(version), CombGuid(native_uuid=True))
    assert ("id UUID NOT NULL" if native else "id CHAR(36) CHARACTER SET ascii NOT NULL") in ddl


@pytest.mark.parametrize(("version", "native"), VERSIONS, ids=lambda v: str(v))
def test_typeid_column(version: tuple[Any, ...], native: bool) -> None:
    ddl = _ddl(_mariadb(version), TypeIDType("user", native_uuid=True))
    assert ("id UUID NOT NULL" if native else "id BINARY(16) NOT NULL") in ddl


def test_unconnected_mariadb_url_counts_as_new_enough() -> None:
    dialect = sa.engine.make_url("mariadb+pymysql://").get_dialect()()
    assert dialect.server_version_info is None
    assert mariadb_uuid_keeps_v7_order(dialect)
    assert "id UUID NOT NULL" in _ddl(dialect, CombGuid(native_uuid=True))


@pytest.mark.parametrize("version", [(8, 0, 36), (8, 4, 0), None])
def test_mysql_has_no_uuid_type(version: tuple[int, ...] | None) -> None:
    dialect = mysql.dialect()
    dialect.server_version_info = version
    assert not mariadb_uuid_keeps_v7_order(dialect)
