"""spanner_shard_column's DDL: a stored generated column on Spanner, a plain column elsewhere."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import mssql, mysql, oracle, postgresql, sqlite
from sqlalchemy.schema import CreateTable

from sqlalchemy_seqkeys import spanner_shard_column


def spanner_dialect() -> Any:
    from google.cloud.sqlalchemy_spanner.sqlalchemy_spanner import SpannerDialect

    return SpannerDialect()


def one_line(sql: object) -> str:
    return " ".join(str(sql).split())


def access_logs(**shard_kw: Any) -> sa.Table:
    return sa.Table(
        "UserAccessLogs",
        sa.MetaData(),
        spanner_shard_column("ShardId", "LastAccess", shards=2048, primary_key=True, **shard_kw),
        sa.Column("LastAccess", sa.DateTime(timezone=True), primary_key=True),
        sa.Column("UserId", sa.BigInteger, primary_key=True, autoincrement=False),
    )


def test_spanner_generates_the_shard_id_as_the_source_declares_it() -> None:
    ddl = one_line(CreateTable(access_logs()).compile(dialect=spanner_dialect()))
    assert ddl == (
        "CREATE TABLE `UserAccessLogs` ( `ShardId` INT64 NOT NULL AS "
        "(MOD(FARM_FINGERPRINT(CAST(`LastAccess` AS STRING)), 2048)) STORED, "
        "`LastAccess` TIMESTAMP NOT NULL, `UserId` INT64 NOT NULL ) "
        "PRIMARY KEY (ShardId, LastAccess, UserId)"
    )


def test_several_columns_are_concatenated_and_non_negative_folds_the_sign() -> None:
    table = sa.Table(
        "t",
        sa.MetaData(),
        spanner_shard_column("shard", "n", "s", shards=16, non_negative=True, primary_key=True),
        sa.Column("n", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("s", sa.String(10)),
    )
    ddl = one_line(CreateTable(table).compile(dialect=spanner_dialect()))
    assert (
        "shard INT64 NOT NULL AS (MOD(MOD(FARM_FINGERPRINT(CONCAT(CAST(n AS STRING), "
        "CAST(s AS STRING))), 16) + 16, 16)) STORED" in ddl
    )


@pytest.mark.parametrize(
    ("dialect", "expected"),
    [
        (sqlite.dialect, '"ShardId" BIGINT NOT NULL,'),
        (postgresql.dialect, '"ShardId" BIGINT NOT NULL,'),
        (mysql.dialect, "`ShardId` BIGINT NOT NULL,"),
        (mssql.dialect, "[ShardId] BIGINT NOT NULL,"),
        (oracle.dialect, '"ShardId" NUMBER(19) NOT NULL,'),
    ],
)
def test_elsewhere_a_plain_column(dialect: Any, expected: str) -> None:
    ddl = one_line(CreateTable(access_logs()).compile(dialect=dialect()))
    assert expected in ddl
    assert "GENERATED" not in ddl
    assert "FARM_FINGERPRINT" not in ddl
