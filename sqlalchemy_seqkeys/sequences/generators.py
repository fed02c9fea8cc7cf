"""``TableSequence``: numeric keys from the ``sequences`` table, in four modes.

:class:`SequenceMode` names the modes, the generators of Spanner's sequence-generation
guide: ``in_transaction`` (in the caller's transaction: ordered, gapless),
``separate`` (a short transaction of its own per value), ``batch`` (a block of
``batch_size`` values per round trip, handed out from memory) and ``async_batch``
(as ``batch``, refilled in the background below ``low_watermark``). How each mode
takes its values is in ``_modes``; no mode hands out a value twice.

User guide: docs/strategies/table-sequences.md; under asyncio: docs/asyncio.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine.default import DefaultExecutionContext

from sqlalchemy_seqkeys._enum import ChoiceEnum
from sqlalchemy_seqkeys._positional import PositionalDefault
from sqlalchemy_seqkeys._validate import check_int, check_seconds
from sqlalchemy_seqkeys._validate import check_name as check_name_arg
from sqlalchemy_seqkeys.errors import InvalidSequenceError

from . import _aio
from ._contract import SequenceContract
from ._modes import BlockModes, RowAllocations
from .table import (
    DEFAULT_TABLE,
    MAX_VALUE,
    check_name,
    create_table_sequence,
    drop_table_sequence,
    sequences_table,
    sequences_table_exists,
    statement_map,
    with_schema_map,
)

__all__ = ["MAX_BATCH_SIZE", "SequenceMode", "TableSequence"]

#: The largest block: one round trip per two billion values already costs
#: nothing, and a larger block only burns key space faster (a stopped process
#: loses what it held, and 2**32 blocks of 2**31 already fill a BIGINT).
MAX_BATCH_SIZE = 2**31


class SequenceMode(ChoiceEnum, error=InvalidSequenceError, noun="sequence mode"):
    """How a :class:`TableSequence` takes values; plain strings are accepted too.

    Example::

        >>> SequenceMode("async_batch") is SequenceMode.ASYNC_BATCH
        True
        >>> SequenceMode.coerce("batch")
        <SequenceMode.BATCH: 'batch'>
    """

    #: In the application's transaction: ordered and gapless (SYNC in Spanner's
    #: sequence-generation guide).
    IN_TRANSACTION = "in_transaction"
    #: In a short transaction of its own, per value (that guide's ASYNC).
    SEPARATE = "separate"
    #: ``batch_size`` values per round trip, handed out from memory.
    BATCH = "batch"
    #: As BATCH, refilled in the background (a thread; a task under asyncio) at the low watermark.
    ASYNC_BATCH = "async_batch"


class TableSequence(SequenceContract, PositionalDefault):
    """A numeric key from the sequences table; use it as a column default.

    It has the methods every sequence class has (docs/reference/sequences.md):
    ``create``, ``drop``, ``next_value``, ``next_values``, their ``*_async``
    twins and ``attach``.

    :param name: the sequence's name: its row in the sequences table.
    :param mode: one of :class:`SequenceMode` (or its string).
    :param batch_size: values per round trip in the batch modes, 1 to 2**31.
    :param low_watermark: ``async_batch`` refills once fewer values remain.
    :param start: the first value, written when :meth:`create` adds the row.
    :param table: the sequences table's name.
    :param refill_timeout: seconds a caller waits for a block another thread is fetching.
    :param metadata: create and drop the row with this ``MetaData``'s
        ``create_all`` / ``drop_all`` (the sequences table too if it is missing);
        see :meth:`attach`.

    Example::

        invoice_id = TableSequence("invoice_id", mode="in_transaction")
        id: Mapped[int] = mapped_column(BigInteger, primary_key=True, default=invoice_id)

        invoice_id.create(engine, checkfirst=True)
        invoice_id.next_value(engine)      # outside the ORM
        invoice_id.next_values(engine, 5)
        await invoice_id.next_value_async(async_engine)   # asyncio: the *_async forms
    """

    _info_key = "seqkeys_table_sequences"
    _error = InvalidSequenceError

    def __init__(
        self,
        name: str,
        *,
        mode: SequenceMode | str,
        batch_size: int = 200,
        low_watermark: int = 50,
        start: int = 1,
        table: str = DEFAULT_TABLE,
        refill_timeout: float = 30.0,
        metadata: sa.MetaData | None = None,
    ) -> None:
        self.name = check_name(name)
        self.mode = SequenceMode.coerce(mode)
        self.batch_size = check_int(
            batch_size,
            "batch_size",
            InvalidSequenceError,
            min=1,
            max=MAX_BATCH_SIZE,
            hint="a block is reserved per round trip, and what a stopped process held is lost",
        )
        if self.mode is SequenceMode.ASYNC_BATCH:
            self.low_watermark = check_int(
                low_watermark,
                "low_watermark",
                InvalidSequenceError,
                min=0,
                max=batch_size - 1,
                hint="the refill starts when fewer values than that remain (below batch_size)",
            )
        else:  # unused outside async_batch, so not held against batch_size
            self.low_watermark = check_int(
                low_watermark, "low_watermark", InvalidSequenceError, min=0, max=MAX_BATCH_SIZE - 1
            )
        self.start = check_int(start, "start", InvalidSequenceError, min=0, max=MAX_VALUE)
        self.table = check_name_arg(table, "table", InvalidSequenceError)
        self.refill_timeout = check_seconds(refill_timeout, "refill_timeout", InvalidSequenceError)
        if metadata is not None:
            self.attach(metadata)
        #: how the mode takes values (``_modes``): the first of ``n`` with ``n``, per value
        self._allocations: RowAllocations
        self._take: Callable[[sa.Engine, sa.Connection | None], int]
        if self.mode in (SequenceMode.BATCH, SequenceMode.ASYNC_BATCH):
            self._allocations = BlockModes(
                self.name,
                self.table,
                batch_size=self.batch_size,
                low_watermark=(
                    self.low_watermark if self.mode is SequenceMode.ASYNC_BATCH else None
                ),
                refill_timeout=self.refill_timeout,
            )
            self._take = self._allocations.take
        else:
            self._allocations = RowAllocations(self.name, self.table)
            if self.mode is SequenceMode.IN_TRANSACTION:
                self._take = self._allocations.in_transaction
            else:
                self._take = self._allocations.separate

    def __repr__(self) -> str:
        extra = ""
        if self.mode in (SequenceMode.BATCH, SequenceMode.ASYNC_BATCH):
            extra = f", batch_size={self.batch_size}"
        if self.mode is SequenceMode.ASYNC_BATCH:
            extra += f", low_watermark={self.low_watermark}"
        return f"TableSequence({self.name!r}, mode={self.mode.value!r}{extra})"

    # -- public API -------------------------------------------------------------

    def __call__(self, context: DefaultExecutionContext) -> int:
        """The column default: one value for the row being inserted."""
        conn = context.connection
        translate = statement_map(context)
        if translate is not False:  # a map given to this statement only
            return with_schema_map(conn, translate, lambda: self._take(conn.engine, conn))
        return self._take(conn.engine, conn)

    def create(self, bind: sa.Engine | sa.Connection, *, checkfirst: bool = False) -> bool:
        """Add this sequence's row, starting at ``start``; True if it was added.

        See :func:`create_table_sequence`. An existing row raises
        :class:`~sqlalchemy_seqkeys.SequenceExistsError` unless ``checkfirst``.

        :param bind: an Engine (a transaction of its own, committed) or a
            Connection (joins its transaction).
        :param checkfirst: leave an existing row as it is and return False
            (as ``sqlalchemy.Sequence.create``).

        Example::

            TableSequence("invoice_id", mode="batch", start=1000).create(engine, checkfirst=True)
        """
        return create_table_sequence(
            bind, self.name, self.start, table=self.table, checkfirst=checkfirst
        )

    def drop(self, bind: sa.Engine | sa.Connection, *, checkfirst: bool = False) -> bool:
        """Delete this sequence's row; True if it was there. See :func:`drop_table_sequence`.

        A missing row raises :class:`~sqlalchemy_seqkeys.SequenceNotFoundError`
        unless ``checkfirst``.

        :param bind: an Engine (a transaction of its own, committed) or a
            Connection (joins its transaction).
        :param checkfirst: make a missing row a no-op that returns False.

        Example::

            TableSequence("invoice_id", mode="batch").drop(engine, checkfirst=True)
        """
        return drop_table_sequence(bind, self.name, table=self.table, checkfirst=checkfirst)

    def next_value(self, bind: sa.Engine | sa.Connection) -> int:
        """Take one value outside the ORM; with an Engine, in a transaction of its own.

        With a Connection, ``in_transaction`` takes the value in that
        connection's transaction (the caller commits); the other modes take it
        as they do for a column default. :meth:`next_value_async` is its
        awaitable twin.

        :param bind: an Engine or a Connection.

        Example::

            invoice_id.next_value(engine)
        """
        _aio.check_sync_bind(bind, "next_value")
        if isinstance(bind, sa.Engine):
            return self._take(bind, None)
        return self._take(bind.engine, bind)

    def next_values(self, bind: sa.Engine | sa.Connection, n: int) -> list[int]:
        """Take ``n`` distinct values; in the per-value modes, as one contiguous block.

        :param bind: an Engine or a Connection, as for :meth:`next_value`.
        :param n: how many, 0 to 2**31.

        Example::

            invoice_id.next_values(engine, 3)   # e.g. [41, 42, 43]
        """
        check_int(n, "n", InvalidSequenceError, min=0, max=MAX_BATCH_SIZE)
        _aio.check_sync_bind(bind, "next_values")
        if n == 0:
            return []
        engine, conn = (bind, None) if isinstance(bind, sa.Engine) else (bind.engine, bind)
        if isinstance(self._allocations, BlockModes):
            return [self._take(engine, conn) for _ in range(n)]
        if self.mode is SequenceMode.IN_TRANSACTION:
            first = self._allocations.in_transaction(engine, conn, n)
        else:
            first = self._allocations.separate(engine, conn, n)
        return list(range(first, first + n))

    # -- attach(): the row, and the sequences table where it is missing -------------

    def _create_attached(self, conn: sa.Connection, made: set[str], *, checkfirst: bool) -> None:
        # A sequences table this create_all has just made is never asked about again:
        # Spanner's driver holds its CREATE back until the next DML, so the catalog
        # would say no, and a second CREATE would fail the whole batch.
        if self.table not in made:
            sequences_table(sa.MetaData(), self.table).create(conn, checkfirst=True)
        self.create(conn, checkfirst=checkfirst)

    def _drop_attached(self, conn: sa.Connection, dropping: set[str], *, checkfirst: bool) -> None:
        if self.table in dropping:
            return  # its row goes with the table (Spanner refuses a DROP after a DELETE)
        if not checkfirst or sequences_table_exists(conn, self.table):  # the tenant's
            self.drop(conn, checkfirst=checkfirst)

    def _create_statements(self, dialect: sa.Dialect, metadata: sa.MetaData) -> list[Any]:
        table = sequences_table(sa.MetaData(), self.table)
        statements: list[Any] = []
        if self.table not in metadata.tables:  # else create_all has just created it
            statements.append(sa.schema.CreateTable(table))
        statements.append(sa.insert(table).values(name=self.name, next_value=self.start))
        return statements

    def _drop_statements(self, dialect: sa.Dialect) -> list[Any]:
        table = sequences_table(sa.MetaData(), self.table)
        return [sa.delete(table).where(table.c.name == self.name)]
