"""A shard id hashes what the hashed columns store, as Spanner's CAST(col AS STRING) reads it.

``sa.Enum`` over an ``enum.Enum`` stores the member's name (or what its
``values_callable`` gives), a ``Boolean`` column given 1 stores true: the filled
column and a ``ShardId`` default hash that, the value Spanner's generated column
holds for the same row. A value the column type would store as something else than
its text (a datetime in a ``Date`` column, 2 in a ``Boolean``, a bool in an integer
column) is refused with ``InvalidShardError``, not hashed as its Python text.
"""

from __future__ import annotations

import enum
import re
from datetime import date, datetime, timezone
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import (
    InvalidShardError,
    ShardId,
    fill_shard_columns,
    shard_of,
    spanner_shard_column,
)
from tests._helpers import fresh_tables
from tests.backend.test_shard_orm import own_engine

pytestmark = pytest.mark.backend


class Region(enum.Enum):
    EU = "eu-west"
    US = "us-east"


class Tier(str, enum.Enum):
    GOLD = "gold-tier"
    LEAD = "lead-tier"


HASHED = ("region", "tier", "active", "day", "n")


def typed_table(
    metadata: sa.MetaData, name: str = "seqkeys_shard_typed", generated: bool = True
) -> sa.Table:
    """The hashed columns, a ShardId default ``dflt`` and (``generated``) a shard column ``gen``."""
    generated_column = [spanner_shard_column("gen", *HASHED, shards=64)] if generated else []
    return sa.Table(
        name,
        metadata,
        *generated_column,
        sa.Column("n", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("region", sa.Enum(Region, length=20, validate_strings=True), nullable=False),
        sa.Column(
            "tier",
            sa.Enum(Tier, values_callable=lambda e: [m.value for m in e], length=20),
            nullable=False,
        ),
        sa.Column("active", sa.Boolean, nullable=False),
        sa.Column("day", sa.Date, nullable=False),
        sa.Column("dflt", sa.BigInteger, nullable=False, default=ShardId(*HASHED, shards=64)),
    )


ROWS: list[dict[str, Any]] = [
    {"n": 1, "region": Region.EU, "tier": Tier.GOLD, "active": 1, "day": date(2024, 1, 2)},
    {"n": 2, "region": Region.US, "tier": Tier.LEAD, "active": 0, "day": date(1999, 12, 31)},
    {"n": 3, "region": "EU", "tier": "gold-tier", "active": True, "day": date(2024, 2, 29)},
    {"n": -4, "region": Region.EU, "tier": Tier.LEAD, "active": False, "day": date(1, 1, 1)},
]


def spanner_text(region: str, tier: str, active: bool, day: date, n: int) -> str:
    """What CONCAT(CAST(region AS STRING), ...) of the stored row is on Spanner."""
    return f"{region}{tier}{'true' if active else 'false'}{day.isoformat()}{n}"


def test_the_hash_is_of_what_the_columns_store(engine: Engine) -> None:
    metadata = sa.MetaData()
    table = typed_table(metadata)
    with own_engine(engine) as mine:
        fill_shard_columns(mine)
        with fresh_tables(mine, metadata):
            with mine.begin() as conn:
                conn.execute(sa.insert(table), ROWS[:2])  # executemany
                conn.execute(sa.insert(table), ROWS[2])  # one row
                conn.execute(sa.insert(table).values(**ROWS[3]))  # values in the statement
            with mine.connect() as conn:
                stored = conn.execute(
                    sa.select(
                        sa.type_coerce(table.c.region, sa.String()),  # the stored text
                        sa.type_coerce(table.c.tier, sa.String()),
                        table.c.active,
                        table.c.day,
                        table.c.n,
                        table.c.gen,
                        table.c.dflt,
                    ).order_by(table.c.n)
                ).all()
    assert [tuple(r[:2]) for r in stored] == [
        ("EU", "lead-tier"),
        ("EU", "gold-tier"),
        ("US", "lead-tier"),
        ("EU", "gold-tier"),
    ]
    for region, tier, active, day, n, generated, default in stored:
        expected = shard_of(spanner_text(region, tier, active, day, n), 64)
        # on Spanner the server generated ``gen``: the ShardId default equals it
        assert (n, generated, default) == (n, expected, expected)


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        (
            "day",
            datetime(2024, 1, 2, 3, tzinfo=timezone.utc),
            r"for column 'day', a Date: .*pass a date",
        ),
        ("active", 2, r"for column 'active', a Boolean: pass True or False"),
        ("active", "true", r"'true' \(str\) for column 'active', a Boolean"),
        ("n", True, r"True \(bool\) for column 'n', an integer column: pass an int"),
        ("n", "5", r"for column 'n', an integer column"),
        (
            "region",
            "eu-west",
            r"'eu-west' \(str\) for column 'region', an Enum of 'EU', 'US': it is none",
        ),
        ("region", Tier.GOLD, r"\(Tier\) for column 'region', an Enum"),
        ("tier", 5, r"5 \(int\) for column 'tier', an Enum of 'gold-tier', 'lead-tier'"),
    ],
)
def test_a_value_the_column_stores_otherwise_is_refused(
    column: str, value: object, message: str
) -> None:
    metadata = sa.MetaData()
    table = typed_table(metadata)
    engine = sa.create_engine("sqlite://")
    fill_shard_columns(engine)
    metadata.create_all(engine)
    row = {**ROWS[0], column: value}
    with pytest.raises(InvalidShardError, match=message), engine.begin() as conn:
        conn.execute(sa.insert(table), row)
    # the ShardId default refuses it too (SQLAlchemy wraps what a default raises)
    plain = typed_table(metadata, "seqkeys_shard_plain", generated=False)
    plain.create(engine)
    with pytest.raises(sa.exc.StatementError) as raised, engine.begin() as conn:
        conn.execute(sa.insert(plain), row)
    assert isinstance(raised.value.orig, InvalidShardError)
    assert re.search(message, str(raised.value.orig))
    engine.dispose()


def test_of_still_hashes_python_values() -> None:
    shard = ShardId("a", "b", shards=64)
    assert shard.of(True, 7) == shard_of("true7", 64)
    assert shard.of("EU", date(2024, 1, 2)) == shard_of("EU2024-01-02", 64)
