"""``seqkeys demo``: every key strategy, inserted through the ORM and decoded.

Creates one small table per strategy in an embedded SQLite file (or the
database ``--url`` names), inserts a few rows through a Session, reads them
back in the server's ``ORDER BY`` order and prints each key with what it
decodes to::

    $ seqkeys demo --url sqlite:///demo.db
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from .comb import CombLayout, comb_timestamp, new_uuid7
from .types import CombGuid, comb_guid

__all__ = ["run"]


class _Base(DeclarativeBase):
    pass


class CombText(_Base):
    """COMB GUID, the layout chosen for the dialect, 36-character storage."""

    __tablename__ = "demo_comb"
    id: Mapped[uuid.UUID] = mapped_column(CombGuid(), primary_key=True, default=comb_guid)
    note: Mapped[str] = mapped_column(sa.String(40))


class CombBinary(_Base):
    """COMB GUID in 16-byte storage."""

    __tablename__ = "demo_comb_binary"
    id: Mapped[uuid.UUID] = mapped_column(
        CombGuid(binary=True), primary_key=True, default=comb_guid
    )
    note: Mapped[str] = mapped_column(sa.String(40))


class CombAtEnd(_Base):
    """COMB GUID forced to the SQL Server layout (timestamp in the last 6 bytes)."""

    __tablename__ = "demo_comb_at_end"
    id: Mapped[uuid.UUID] = mapped_column(
        CombGuid(), primary_key=True, default=comb_guid.with_layout("at_end")
    )
    note: Mapped[str] = mapped_column(sa.String(40))


class Uuid7(_Base):
    """RFC 9562 UUIDv7."""

    __tablename__ = "demo_uuid7"
    id: Mapped[uuid.UUID] = mapped_column(CombGuid(), primary_key=True, default=new_uuid7)
    note: Mapped[str] = mapped_column(sa.String(40))


@dataclass(frozen=True)
class _Strategy:
    title: str
    model: type[Any]
    describe: Callable[[Any, sa.Dialect], str]


def _comb_describe(layout: CombLayout | None) -> Callable[[Any, sa.Dialect], str]:
    def describe(key: uuid.UUID, dialect: sa.Dialect) -> str:
        chosen = layout or comb_guid.layout_for(dialect)
        if chosen is None:
            return f"random version {key.version} (time-ordered keys are a hotspot here)"
        return f"{chosen.value}, minted at {comb_timestamp(key, chosen).isoformat()}"

    return describe


def _uuid7_describe(key: uuid.UUID, dialect: sa.Dialect) -> str:
    return f"version {key.version}, minted at {comb_timestamp(key, 'as_string').isoformat()}"


STRATEGIES = [
    _Strategy("COMB GUID (comb_guid, CombGuid())", CombText, _comb_describe(None)),
    _Strategy("COMB GUID (comb_guid, CombGuid(binary=True))", CombBinary, _comb_describe(None)),
    _Strategy("COMB GUID forced AT_END", CombAtEnd, _comb_describe(CombLayout.AT_END)),
    _Strategy("UUIDv7 (new_uuid7)", Uuid7, _uuid7_describe),
]


def run(url: str, rows: int = 3, echo: Callable[[str], None] = print) -> None:
    """Create the demo schema on ``url``, insert ``rows`` rows per strategy, print them."""
    engine = sa.create_engine(url)
    try:
        _Base.metadata.drop_all(engine)
        _Base.metadata.create_all(engine)
        with Session(engine) as session:
            for strategy in STRATEGIES:
                session.add_all(strategy.model(note=f"row {i + 1}") for i in range(rows))
            session.commit()
            for strategy in STRATEGIES:
                model = strategy.model
                column = model.__table__.c.id
                echo(f"\n{strategy.title}  [{column.type.compile(dialect=engine.dialect)}]")
                for row in session.scalars(sa.select(model).order_by(model.id)):
                    echo(f"  {row.id}  {row.note}: {strategy.describe(row.id, engine.dialect)}")
    finally:
        engine.dispose()
