"""Every bad argument to a public name gets a SeqKeysError that says what was wrong.

One row per bad input: what a user wrote, and the error class it must raise
(each a SeqKeysError subclass). Nothing here reaches a server: a bad argument
is refused before any I/O, so no key is lost or handed out.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import sqlalchemy as sa

from sqlalchemy_seqkeys import (
    BitReversedSequence,
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
    WorkerLease,
    new_comb_guid,
)
from tests._helpers import without_package


def _sqlite() -> sa.Engine:
    return sa.create_engine("sqlite://")


def _table(*columns: sa.Column[object]) -> sa.Table:
    return sa.Table("t", sa.MetaData(), *columns)


BAD_INPUTS: list[tuple[str, Callable[[], object], type[SeqKeysError]]] = [
    ("Snowflake worker_id as a str", lambda: Snowflake(worker_id="3"), InvalidSnowflakeError),  # type: ignore[arg-type]
    ("Snowflake worker_id as a float", lambda: Snowflake(worker_id=3.0), InvalidSnowflakeError),  # type: ignore[arg-type]
    ("Snowflake worker_id as a bool", lambda: Snowflake(worker_id=True), InvalidSnowflakeError),
    (
        "Snowflake max_backwards_ms NaN",
        lambda: Snowflake(worker_id=1, max_backwards_ms=math.nan),
        InvalidSnowflakeError,
    ),
    (
        "TableSequence name with a NUL",
        lambda: TableSequence("a\x00b", mode="batch"),
        InvalidSequenceError,
    ),
    ("TableSequence name None", lambda: TableSequence(None, mode="batch"), InvalidSequenceError),  # type: ignore[arg-type]
    (
        "TableSequence name with a lone surrogate",
        lambda: TableSequence("a\ud800b", mode="batch"),
        InvalidSequenceError,
    ),
    (
        "TableSequence table with a lone surrogate",
        lambda: TableSequence("s", mode="batch", table="t\udc80"),
        InvalidSequenceError,
    ),
    (
        "PooledSequence name with a lone surrogate",
        lambda: PooledSequence("a\ud800b"),
        InvalidSequenceError,
    ),
    (
        "TableSequence batch_size past BIGINT",
        lambda: TableSequence("s", mode="batch", batch_size=2**63),
        InvalidSequenceError,
    ),
    (
        "TableSequence low_watermark as a bool",
        lambda: TableSequence("s", mode="async_batch", low_watermark=True),
        InvalidSequenceError,
    ),
    (
        "next_values with a float count",
        lambda: TableSequence("s", mode="separate").next_values(_sqlite(), 2.5),  # type: ignore[arg-type]
        InvalidSequenceError,
    ),
    (
        "next_values with a bool count",
        lambda: TableSequence("s", mode="separate").next_values(_sqlite(), True),
        InvalidSequenceError,
    ),
    ("WorkerLease ttl NaN", lambda: WorkerLease(_sqlite(), ttl=math.nan), InvalidSnowflakeError),
    ("WorkerLease ttl inf", lambda: WorkerLease(_sqlite(), ttl=math.inf), InvalidSnowflakeError),
    ("WorkerLease ttl as a str", lambda: WorkerLease(_sqlite(), ttl="30"), InvalidSnowflakeError),  # type: ignore[arg-type]
    (
        "WorkerLease max_worker_id -1",
        lambda: WorkerLease(_sqlite(), max_worker_id=-1),
        InvalidSnowflakeError,
    ),
    (
        "Snowflake default on a 32-bit Integer column",
        lambda: _table(sa.Column("id", sa.Integer, primary_key=True, default=Snowflake(1))),
        InvalidSnowflakeError,
    ),
    (
        "new_comb_guid on a String(20) column",
        lambda: _table(sa.Column("id", sa.String(20), primary_key=True, default=new_comb_guid)),
        InvalidGuidError,
    ),
    (
        "PooledSequence allocation_size 0",
        lambda: PooledSequence("s", batch_size=0),
        InvalidSequenceError,
    ),
    (
        "PooledSequence allocation_size as a bool",
        lambda: PooledSequence("s", batch_size=True),
        InvalidSequenceError,
    ),
    (
        "BitReversedSequence batch_size 0",
        lambda: BitReversedSequence("s", batch_size=0),
        InvalidBitReversalError,
    ),
    (
        "ShardId naming a column the table lacks",
        lambda: _table(
            sa.Column("shard", sa.BigInteger, primary_key=True, default=ShardId("nope", shards=8)),
            sa.Column("at", sa.String(30)),
        ),
        InvalidShardError,
    ),
]


@pytest.mark.parametrize(
    ("call", "error"),
    [pytest.param(call, error, id=what) for what, call, error in BAD_INPUTS],
)
def test_bad_input_raises_a_seqkeys_error(
    call: Callable[[], object], error: type[SeqKeysError]
) -> None:
    with pytest.raises(error) as raised:
        call()
    message = str(raised.value)
    assert len(message) > 20, f"{message!r} does not say what was wrong"


def test_a_missing_optional_package_names_its_extra() -> None:
    # alembic made unimportable in a fresh interpreter: the integration must
    # say which extra to install, not raise a bare ModuleNotFoundError.
    code = (
        "from sqlalchemy_seqkeys import MissingExtraError\n"
        "try:\n"
        "    import sqlalchemy_seqkeys.alembic\n"
        "except MissingExtraError as exc:\n"
        "    print(exc)\n"
    )
    assert "pip install 'sqlalchemy-seqkeys[alembic]'" in without_package("alembic", code)
