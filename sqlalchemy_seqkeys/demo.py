"""``seqkeys demo``: every key strategy, inserted through the ORM and decoded.

It creates, writes and drops only objects named ``seqkeys_demo_...``
(:data:`PREFIX`). What it creates and prints: the "Try the demo" section of the
Tutorial (docs/getting-started.md) and "The seqkeys command" reference page
(docs/reference/cli.md).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from ._urls import no_database, shown
from ._validate import check_int
from .bitreverse import BitReversedSequence, reverse_bits
from .comb import CombLayout, comb_timestamp
from .errors import SeqKeysError
from .sequences import SequenceMode, TableSequence, sequences_table
from .snowflake import Snowflake, rotate_digits
from .types import CombGuid, new_comb_guid
from .uuid7 import new_uuid7

__all__ = ["PREFIX", "run"]

#: The start of every name the demo creates; it touches nothing else.
PREFIX = "seqkeys_demo_"
_SEQUENCES_TABLE = f"{PREFIX}sequences"


class _Base(DeclarativeBase):
    pass


class CombText(_Base):
    """COMB GUID, the layout chosen for the dialect, 36-character storage."""

    __tablename__ = f"{PREFIX}comb"
    id: Mapped[uuid.UUID] = mapped_column(CombGuid(), primary_key=True, default=new_comb_guid)
    note: Mapped[str] = mapped_column(sa.String(40))


class CombBinary(_Base):
    """COMB GUID in 16-byte storage."""

    __tablename__ = f"{PREFIX}comb_binary"
    id: Mapped[uuid.UUID] = mapped_column(
        CombGuid(binary=True), primary_key=True, default=new_comb_guid
    )
    note: Mapped[str] = mapped_column(sa.String(40))


class CombAtEnd(_Base):
    """COMB GUID forced to the SQL Server layout (timestamp in the last 6 bytes)."""

    __tablename__ = f"{PREFIX}comb_at_end"
    id: Mapped[uuid.UUID] = mapped_column(
        CombGuid(), primary_key=True, default=new_comb_guid.with_layout("at_end")
    )
    note: Mapped[str] = mapped_column(sa.String(40))


class Uuid7(_Base):
    """RFC 9562 UUIDv7."""

    __tablename__ = f"{PREFIX}uuid7"
    id: Mapped[uuid.UUID] = mapped_column(CombGuid(), primary_key=True, default=new_uuid7)
    note: Mapped[str] = mapped_column(sa.String(40))


sequences_table(_Base.metadata, _SEQUENCES_TABLE)

_SEQUENCES = {
    mode: TableSequence(
        f"{PREFIX}{mode.value}",
        mode=mode,
        batch_size=20,
        low_watermark=5,
        table=_SEQUENCES_TABLE,
    )
    for mode in SequenceMode
}


def _sequence_model(mode: SequenceMode) -> type[Any]:
    return type(
        f"Seq_{mode.value}",
        (_Base,),
        {
            "__tablename__": f"{PREFIX}seq_{mode.value}",
            "__doc__": f"TableSequence in mode {mode.value}.",
            "id": mapped_column(sa.BigInteger, primary_key=True, default=_SEQUENCES[mode]),
            "note": mapped_column(sa.String(40)),
            "__annotations__": {"id": Mapped[int], "note": Mapped[str]},
        },
    )


_SEQUENCE_MODELS = {mode: _sequence_model(mode) for mode in SequenceMode}


def _sequence_describe(mode: SequenceMode) -> Callable[[Any, sa.Dialect], str]:
    what = {
        SequenceMode.IN_TRANSACTION: "taken in the flush's transaction: ordered, gapless",
        SequenceMode.SEPARATE: "taken in a transaction of its own: ordered",
        SequenceMode.BATCH: "from a block of 20 reserved in one round trip",
        SequenceMode.ASYNC_BATCH: "from a block refilled in the background",
    }[mode]
    return lambda key, dialect: what


_SNOWFLAKE = Snowflake(worker_id=1)
_ROTATED = Snowflake(worker_id=1, transform=rotate_digits)


class SnowflakePlain(_Base):
    """Snowflake ids (41-bit ms, 10-bit worker, 12-bit sequence)."""

    __tablename__ = f"{PREFIX}snowflake"
    id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, default=_SNOWFLAKE)
    note: Mapped[str] = mapped_column(sa.String(40))


class SnowflakeRotated(_Base):
    """Snowflake ids with the last digit rotated to the second place."""

    __tablename__ = f"{PREFIX}snowflake_rotated"
    id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, default=_ROTATED)
    note: Mapped[str] = mapped_column(sa.String(40))


def _snowflake_describe(generator: Snowflake) -> Callable[[Any, sa.Dialect], str]:
    def describe(key: int, dialect: sa.Dialect) -> str:
        d = generator.decode(key)
        return f"worker {d.worker_id}, sequence {d.sequence}, minted at {d.timestamp.isoformat()}"

    return describe


_ACCOUNT_ID = BitReversedSequence(
    f"{PREFIX}account_id", table=_SEQUENCES_TABLE, metadata=_Base.metadata
)


class BitReversedKey(_Base):
    """Spanner's bit-reversed sequence values (emulated here, the same values)."""

    __tablename__ = f"{PREFIX}bit_reversed"
    id: Mapped[int] = mapped_column(
        sa.BigInteger, primary_key=True, default=_ACCOUNT_ID, autoincrement=False
    )
    note: Mapped[str] = mapped_column(sa.String(40))


def _bit_reversed_describe(key: int, dialect: sa.Dialect) -> str:
    return f"counter {reverse_bits(key)}, its 63 bits reversed"


@dataclass(frozen=True)
class _Strategy:
    title: str
    model: type[Any]
    describe: Callable[[Any, sa.Dialect], str]


def _comb_describe(layout: CombLayout | None) -> Callable[[Any, sa.Dialect], str]:
    def describe(key: uuid.UUID, dialect: sa.Dialect) -> str:
        chosen = layout or new_comb_guid.layout_for(dialect)
        if chosen is None:
            return f"random version {key.version} (time-ordered keys are a hotspot here)"
        return f"{chosen.value}, minted at {comb_timestamp(key, chosen).isoformat()}"

    return describe


def _uuid7_describe(key: uuid.UUID, dialect: sa.Dialect) -> str:
    return f"version {key.version}, minted at {comb_timestamp(key, 'as_string').isoformat()}"


STRATEGIES = [
    _Strategy("COMB GUID (new_comb_guid, CombGuid())", CombText, _comb_describe(None)),
    _Strategy("COMB GUID (new_comb_guid, CombGuid(binary=True))", CombBinary, _comb_describe(None)),
    _Strategy(
        "COMB GUID forced AT_END (SQL Server's order; other engines sort it as text)",
        CombAtEnd,
        _comb_describe(CombLayout.AT_END),
    ),
    _Strategy("UUIDv7 (new_uuid7)", Uuid7, _uuid7_describe),
    _Strategy("Snowflake(worker_id=1)", SnowflakePlain, _snowflake_describe(_SNOWFLAKE)),
    _Strategy(
        "Snowflake(worker_id=1, transform=rotate_digits)",
        SnowflakeRotated,
        _snowflake_describe(_ROTATED),
    ),
    _Strategy(f"BitReversedSequence({_ACCOUNT_ID.name!r})", BitReversedKey, _bit_reversed_describe),
    *(
        _Strategy(
            f"TableSequence mode={mode.value!r}", _SEQUENCE_MODELS[mode], _sequence_describe(mode)
        )
        for mode in SequenceMode
    ),
]


def run(url: str, rows: int = 3, echo: Callable[[str], None] = print) -> None:
    """Create the demo schema on ``url``, insert ``rows`` rows per strategy, print them.

    Only the demo's own ``seqkeys_demo_...`` tables and sequence are dropped
    (from an earlier run) and created; nothing else on ``url`` is touched.
    The tables stay afterwards.

    Example::

        run("sqlite:///seqkeys-demo.db", rows=2)

    :param url: the database URL, as ``sqlalchemy.create_engine`` takes it
      (``"sqlite:///seqkeys-demo.db"`` for an embedded file); its driver must
      be installed.
    :param rows: rows inserted per strategy (default 3); each run starts
      from empty tables, so the table sequences hand out 1 to ``rows``.
    :param echo: called with each line of output (default ``print``); pass
      ``list.append`` of a list, or a logger's method, to keep the lines.
    :raises SeqKeysError: ``rows`` is not a whole number of 1 or more, or ``url``
      names no database and the connection has none (MySQL's
      ``mysql+pymysql://user@host/``); nothing is touched then.
    """
    check_int(
        rows, "rows", SeqKeysError, min=1, hint="the demo inserts that many rows per strategy"
    )
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            missing = no_database(conn)
        if missing is not None:  # MySQL's reflection would fail on every table
            raise SeqKeysError(f"the demo cannot create its tables: {missing}")
        _Base.metadata.drop_all(engine)  # the demo's own tables, and only those
        _Base.metadata.create_all(engine)
        for sequence in _SEQUENCES.values():
            sequence.create(engine)
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
        echo(
            f"\nThe demo's tables stay on {shown(engine.url)} for a look: "
            f"{PREFIX}*. Nothing else there was touched; the next run replaces them."
        )
    finally:
        engine.dispose()
