"""Shared by the PooledSequence tests (test_pooled_*.py): names, the rows model, counting
the statements that take a block, and cleaning up.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from sqlalchemy_seqkeys import PooledSequence, sequences_table
from sqlalchemy_seqkeys._dialect import incrementing_sequences

#: the sequences table of the fallback (its own name: other tests own "sequences")
TABLE = "seqkeys_pooled_sequences"
ROWS = "seqkeys_pooled_rows"
SIZE = 50


def native(engine: Engine) -> bool:
    with engine.connect() as conn:  # a dialect learns what the server has when it connects
        return incrementing_sequences(conn.dialect)


def is_spanner(engine: Engine) -> bool:
    return engine.dialect.name.startswith("spanner")


def make_model(default: PooledSequence) -> tuple[type[Any], sa.MetaData]:
    class Base(DeclarativeBase):
        pass

    default.attach(Base.metadata)

    class Row(Base):
        __tablename__ = ROWS
        id: Mapped[int] = mapped_column(
            sa.BigInteger, primary_key=True, default=default, autoincrement=False
        )
        note: Mapped[str] = mapped_column(sa.String(20))

    return Row, Base.metadata


def drop_everything(engine: Engine, *names: str) -> None:
    """Drop the rows table, the sequences named, and the fallback's sequences table."""
    metadata = sa.MetaData()
    sa.Table(ROWS, metadata)
    metadata.drop_all(engine, checkfirst=True)
    for name in names:
        PooledSequence(name, table=TABLE).drop(engine, checkfirst=True)
    sequences_table(sa.MetaData(), TABLE).drop(engine, checkfirst=True)


@contextmanager
def counting(engine: Engine) -> Iterator[dict[str, int]]:
    """Count the statements that take a block (nextval, or the sequences-table UPDATE)."""
    counts = {"blocks": 0, "inserts": 0, "catalog": 0}

    def count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if conn.get_execution_options().get("seqkeys_raw"):
            return  # a raw writer's statement, not the library's
        text = statement.lstrip().lower()
        if "nextval(" in text or text.startswith(f"update {TABLE}"):
            counts["blocks"] += 1
        elif text.startswith(f"insert into {ROWS}"):
            counts["inserts"] += 1
        elif "seqincrement" in text or "cycle_option" in text:
            counts["catalog"] += 1

    sa.event.listen(engine, "before_cursor_execute", count)
    try:
        yield counts
    finally:
        sa.event.remove(engine, "before_cursor_execute", count)


def all_ids(engine: Engine) -> list[int]:
    with engine.connect() as conn:
        return [int(v) for v in conn.scalars(sa.text(f"SELECT id FROM {ROWS} ORDER BY id"))]


def execute(engine: Engine, sql: str) -> None:
    with engine.begin() as conn:
        conn.execute(sa.text(sql))
