"""MySQL/MariaDB's INSERT IGNORE turns "data too long" and "out of range" into
warnings: create() reads the row back and never reports a row it did not store.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from sqlalchemy_seqkeys import (
    SeqKeysError,
    TableSequence,
)
from sqlalchemy_seqkeys.sequences.table import create_table_sequence

pytestmark = pytest.mark.backend


@pytest.fixture
def my_engine(engines: Any) -> Iterator[sa.Engine]:
    with engines.fresh_database("mysql", "seq_review") as url:
        engine = sa.create_engine(url)
        yield engine
        engine.dispose()


def _handmade(engine: sa.Engine) -> None:
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "CREATE TABLE handmade (name VARCHAR(20) CHARACTER SET utf8mb4 COLLATE "
                "utf8mb4_bin PRIMARY KEY, next_value INT NOT NULL)"
            )
        )


def _rows(engine: sa.Engine) -> list[Any]:
    with engine.connect() as conn:
        return list(conn.execute(sa.text("SELECT name, next_value FROM handmade")).all())


def test_mysql_create_never_reports_a_cut_name(my_engine: sa.Engine) -> None:
    _handmade(my_engine)
    sequence = TableSequence("x" * 20 + "_orders", mode="batch", table="handmade")
    with pytest.raises(SeqKeysError, match=r"(?is)varchar\(20\).*sequences_table"):
        sequence.create(my_engine)
    assert _rows(my_engine) == []  # nothing was changed
    with pytest.raises(SeqKeysError, match="create_sequences_table"):
        sequence.create(my_engine, checkfirst=True)
    assert _rows(my_engine) == []


def test_mysql_create_never_says_a_cut_name_existed(my_engine: sa.Engine) -> None:
    _handmade(my_engine)
    with my_engine.begin() as conn:  # a row of the name cut to 20 characters
        conn.execute(sa.text("INSERT INTO handmade VALUES (:n, 1)"), {"n": "z" * 20})
    sequence = TableSequence("z" * 20 + "_users", mode="batch", table="handmade")
    for checkfirst in (False, True):
        with pytest.raises(SeqKeysError, match=r"(?i)data (too long|truncated)"):
            sequence.create(my_engine, checkfirst=checkfirst)
    assert _rows(my_engine) == [("z" * 20, 1)]


def test_mysql_create_never_reports_a_clamped_start(my_engine: sa.Engine) -> None:
    _handmade(my_engine)
    sequence = TableSequence("big", mode="batch", table="handmade", start=5_000_000_000)
    with pytest.raises(SeqKeysError, match=r"(?i)int"):
        sequence.create(my_engine)
    assert _rows(my_engine) == []
    fits = TableSequence("small", mode="batch", table="handmade", start=7)
    assert fits.create(my_engine)
    assert not fits.create(my_engine, checkfirst=True)
    assert _rows(my_engine) == [("small", 7)]


def test_mysql_create_in_a_callers_transaction_says_to_roll_back(my_engine: sa.Engine) -> None:
    _handmade(my_engine)
    with my_engine.connect() as conn:
        with pytest.raises(SeqKeysError, match="roll"):
            create_table_sequence(conn, "y" * 30, table="handmade")
        conn.rollback()
    assert _rows(my_engine) == []
