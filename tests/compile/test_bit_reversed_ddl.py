"""The DDL of bit_reversed_sequence per dialect, compiled without a server; its bad input."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import mssql, oracle, postgresql
from sqlalchemy.schema import CreateSequence, DropSequence

from sqlalchemy_seqkeys import InvalidBitReversalError, bit_reversed_sequence


def spanner_dialect() -> Any:
    from google.cloud.sqlalchemy_spanner.sqlalchemy_spanner import SpannerDialect

    return SpannerDialect()


def mariadb_dialect() -> Any:
    from sqlalchemy.dialects.mysql.mariadb import MariaDBDialect

    return MariaDBDialect()


SEQUENCE = bit_reversed_sequence("order_id", start_with_counter=1000, skip_range=(1, 99_999))

EXPECTED = {
    # the skip range survives (sqlalchemy-spanner's own Sequence DDL drops it)
    "spanner": "CREATE SEQUENCE order_id OPTIONS (sequence_kind = 'bit_reversed_positive', "
    "start_with_counter = 1000, skip_range_min = 1, skip_range_max = 99999)",
    # elsewhere a plain counter: the reversal and the skip range are applied in Python
    "postgresql": "CREATE SEQUENCE order_id START WITH 1000 MINVALUE 1",
    "mariadb": "CREATE SEQUENCE order_id START WITH 1000 MINVALUE 1",
    "mssql": "CREATE SEQUENCE order_id START WITH 1000 MINVALUE 1",
    "oracle": "CREATE SEQUENCE order_id START WITH 1000 MINVALUE 1",
}
DIALECTS: dict[str, Any] = {
    "spanner": spanner_dialect,
    "postgresql": postgresql.dialect,
    "mariadb": mariadb_dialect,
    "mssql": mssql.dialect,
    "oracle": oracle.dialect,
}


@pytest.mark.parametrize("name", list(EXPECTED))
def test_create_sequence_ddl(name: str) -> None:
    dialect = DIALECTS[name]()
    assert str(CreateSequence(SEQUENCE.sequence).compile(dialect=dialect)) == EXPECTED[name]
    assert str(DropSequence(SEQUENCE.sequence).compile(dialect=dialect)) == "DROP SEQUENCE order_id"


def test_spanner_ddl_without_skip_range_and_if_not_exists() -> None:
    sequence = bit_reversed_sequence("plain")
    ddl = CreateSequence(sequence.sequence, if_not_exists=True).compile(dialect=spanner_dialect())
    assert str(ddl) == (
        "CREATE SEQUENCE IF NOT EXISTS plain OPTIONS "
        "(sequence_kind = 'bit_reversed_positive', start_with_counter = 1)"
    )


def test_plain_sequences_keep_sqlalchemy_spanners_ddl() -> None:
    ddl = CreateSequence(sa.Sequence("other")).compile(dialect=spanner_dialect())
    assert "sequence_kind = 'bit_reversed_positive'" in str(ddl)
    assert "skip_range" not in str(ddl)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"start_with_counter": 0}, "start_with_counter must be an int from 1"),
        ({"start_with_counter": 2**63}, "start_with_counter must be an int from 1"),
        ({"start_with_counter": True}, "start_with_counter must be an int from 1"),
        ({"skip_range": (5, 1)}, "0 <= skip_range_min <= skip_range_max < 2**63"),
        ({"skip_range": (-1, 10)}, "0 <= skip_range_min <= skip_range_max < 2**63"),
        ({"skip_range": (1, 2**63)}, "0 <= skip_range_min <= skip_range_max < 2**63"),
        ({"skip_range": 10}, "skip_range is a pair of ints"),
        ({"skip_range": (1.0, 2)}, "skip_range is a pair of ints"),
    ],
)
def test_bad_arguments(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidBitReversalError, match=message.replace("*", r"\*")):
        bit_reversed_sequence("s", **kwargs)


def test_repr_is_the_declaration() -> None:
    assert repr(SEQUENCE) == (
        "bit_reversed_sequence('order_id', start_with_counter=1000, skip_range=(1, 99999))"
    )
