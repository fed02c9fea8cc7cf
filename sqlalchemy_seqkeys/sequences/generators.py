"""``TableSequence``: numeric keys from the sequences table, in four modes.

A table sequence is a row of the ``sequences`` table. Each mode trades order,
gaps and speed differently (the modes of Spanner's sequence-generation guide):

================  =========  =======  =========================  =========================
mode              ordered    gapless  round trips                where the value is taken
================  =========  =======  =========================  =========================
in_transaction    yes        yes      one per value              the flush's own transaction
separate          yes        no       one per value              a short transaction of its own
batch             no         no       one per ``batch_size``     a short transaction, per block
async_batch       no         no       none on the insert's path  a thread or task, per block
================  =========  =======  =========================  =========================

Declare it as a column default and create its row once::

    from sqlalchemy import BigInteger
    from sqlalchemy.orm import Mapped, mapped_column
    from sqlalchemy_seqkeys import TableSequence

    invoice_id = TableSequence("invoice_id", mode="async_batch")

    class Invoice(Base):
        __tablename__ = "invoices"
        id: Mapped[int] = mapped_column(BigInteger, primary_key=True, default=invoice_id)

    invoice_id.create(engine, checkfirst=True)   # once: the sequence's row

- ``in_transaction``: the value is taken on the flush's connection, inside the
  application's transaction. Committed rows get consecutive values in commit
  order; a rollback gives the values back. The row stays locked until the
  application's transaction ends, which caps the whole database at one such
  transaction at a time per sequence. A value is taken for every row an
  INSERT is given, before the database decides: a row that ends up not
  inserted while the transaction commits keeps its value, and the committed
  values skip it. That is ``INSERT ... ON CONFLICT DO NOTHING`` (PostgreSQL,
  SQLite), ``INSERT IGNORE`` (MySQL, MariaDB) and ``INSERT OR IGNORE``
  (Spanner) that meet an existing row, and, on MySQL and MariaDB, whose
  failed statements do not end the transaction, an ``IntegrityError`` caught
  and committed past. The library cannot give such a value back: SQLAlchemy
  has already handed it to the statement (``inserted_primary_key`` shows it).
  To stay gapless, insert inside a savepoint and catch the error:
  ``with session.begin_nested(): session.add(row)`` (or
  ``conn.begin_nested()``); rolling back the savepoint gives its value back,
  because the value was taken inside it.
- ``separate``: each value is taken in a short transaction of its own on
  another connection from the same engine's pool, and committed at once. A
  value taken for a row that is then rolled back leaves a gap. Size the pool
  for it: each flush holds one connection and borrows a second.
- ``batch``: ``batch_size`` values are reserved in one short transaction and
  handed out from memory, thread-safe, with the state kept per engine (pool)
  and sequence. Each process has its own block, so values are unique but not
  globally ordered; a process that stops leaves the rest of its block unused.
  Taking a value from the block takes no lock (one ``next()`` on the block's
  iterator, atomic under the GIL; on a free-threaded interpreter without the
  GIL, a lock): only a caller that finds the block used up waits.
- ``async_batch``: as ``batch``, and once fewer than ``low_watermark`` values
  remain, one of the process's long-lived refill threads reserves the next
  block, so no insert waits for
  the database when ``batch_size`` and ``low_watermark`` suit the insert rate.
  At most one refill per sequence runs at a time. A refill that fails is
  raised to the caller that needs the block (a library error as it is, a
  database error as :class:`~sqlalchemy_seqkeys.SequenceAllocationError` with
  the database error as its cause), and the next call tries again. Where no
  thread can be started (a thread limit, interpreter shutdown), the caller
  that needs the block fetches it itself; no block is ever dropped or
  installed over another one.

In the batch modes, a caller that needs a block another thread is fetching
waits at most ``refill_timeout`` seconds (default 30), then gets a
:class:`~sqlalchemy_seqkeys.SequenceAllocationError` saying so; nothing is
handed out, the fetch goes on, its block is used by later calls. A fetch
waits as long as the database makes it (a row locked by a long
``in_transaction`` transaction, say): bound that with the server's own lock
timeout (``innodb_lock_wait_timeout``, ``lock_timeout``, per session). Once
it runs out, the fetch raises
:class:`~sqlalchemy_seqkeys.SequenceLockTimeoutError` after that one wait,
and so does every caller that waited for that fetch's block: none fetches
again behind it.

A process remembers, per database and sequence, the highest value it
received from allocations committed on their own (``separate``, ``batch``,
``async_batch``, and ``next_value(engine)``). An allocation that comes back at
or below it means the row moved backwards (restored from a backup, recreated
or edited by hand): it raises
:class:`~sqlalchemy_seqkeys.SequenceMovedBackwardsError` and hands out none of
those values. Move the row past the keys in use with
:func:`~sqlalchemy_seqkeys.resync_table_sequence` (``seqkeys resync``,
``op.resync_table_sequence``). A process started after the row moved back has
nothing to compare with: resync after every restore. Values taken inside the
caller's transaction (``in_transaction``) are not compared, since a rollback
legitimately gives them back; there the table's primary key refuses a repeated
key. A sequence created anew through this library
(:func:`~sqlalchemy_seqkeys.create_table_sequence`, ``TableSequence.create``,
``op.create_table_sequence``) starts afresh.

Allocations in their own transaction are retried on serialization failures,
deadlocks, dropped connections and Spanner's aborted transactions, a bounded
number of times with backoff; a retry never hands out a value twice. A lock
wait that runs out the server's lock timeout is not retried (it would wait as
long again); other database errors raise
:class:`~sqlalchemy_seqkeys.SequenceAllocationError` with the driver's error
as the cause. Nothing is retried in the caller's transaction
(``in_transaction``): its errors come as ``SequenceAllocationError`` (or
``SequenceLockTimeoutError``), the transaction the caller's to roll back. A forked
child process never hands out a value from its parent's block, also when it
was forked by libc ``fork()`` (uWSGI without ``lazy-apps``), which runs no
at-fork hook: the fork registry (``_fork``) notices it on each call.

A ``schema_translate_map`` on the engine or connection is carried to the
allocation's own connection, and blocks are kept per map, so tenants never
share values. After a rollback, objects that were flushed keep their key: with
``in_transaction`` that value is back in the sequence, so clear it before
adding the object again.

**asyncio.** The same declarations work unchanged under ``AsyncEngine`` and
``AsyncSession`` (asyncpg, psycopg, asyncmy, aiomysql, aiosqlite), in every
mode, with every guarantee above. A default runs inside SQLAlchemy's greenlet
on the event loop's thread and never blocks the loop: ``in_transaction``
takes its value on the flush's own connection, as in sync code; a value that
needs a transaction of its own (``separate``, a block of ``batch`` or
``async_batch``, ``next_value(engine)``) is taken by a task on the running
loop, which the flush awaits through the greenlet. Those tasks run on the
engine's *allocation lane*: a twin of the engine's pool
(``Pool.recreate()``: the same URL, settings and pool events), one per engine
and event loop. The lane holds one connection (one per sequence being
allocated at that moment), outside the engine's ``pool_size``: count it
when sizing ``max_connections``. It cannot come from the engine's own pool:
under asyncio as many flushes as the pool has connections routinely run at
once (50 requests, ``pool_size=5``), each holding a connection, and a second
connection taken from that pool for their values would never come, every
request waiting until ``pool_timeout``. Round trips for one sequence run one
at a time; different sequences never wait on each other, so a flush holding
one sequence's row in its transaction always gets another's value.

``async_batch`` refills are tasks on the running loop, at most one per
sequence (and schema map) at a time; blocks are kept per engine and event
loop, and touched by the loop's thread only. Callers that need a block being
fetched await that task, at most ``refill_timeout`` seconds. A request
cancelled mid-flush never interrupts a round trip: the values it took are a
gap, never handed out again. ``await engine.dispose()`` cancels the lane's
tasks, waits for them and closes its connections (a caller waiting for a
block then gets :class:`~sqlalchemy_seqkeys.SequenceAllocationError`); a loop
that ends cancels them itself. The engine works again after dispose, with a
new lane. Retries wait with ``asyncio.sleep``.

The awaitable forms follow SQLAlchemy's own split between ``Engine`` and
``AsyncEngine``: :meth:`TableSequence.create_async`,
:meth:`~TableSequence.drop_async`, :meth:`~TableSequence.next_value_async`,
:meth:`~TableSequence.next_values_async`,
:func:`~sqlalchemy_seqkeys.sequences.create_table_sequence_async`,
:func:`~sqlalchemy_seqkeys.sequences.drop_table_sequence_async` and
:func:`~sqlalchemy_seqkeys.sequences.resync_table_sequence_async` take an
``AsyncEngine`` (a transaction of their own, committed) or an
``AsyncConnection`` (they join its transaction). Sync code run through
``conn.run_sync(...)`` may call the sync forms. Example::

    engine = create_async_engine("sqlite+aiosqlite:///app.db")
    await invoice_id.create_async(engine, checkfirst=True)
    async with AsyncSession(engine) as session:
        session.add(Invoice())
        await session.commit()
    await invoice_id.next_value_async(engine)
    await engine.dispose()   # closes the allocation lane too

**SQLite** has a single writer. When the flush's own transaction already holds
the write lock (it has written), a second connection could not take a value
until that transaction ends, so ``separate``, ``batch`` and ``async_batch``
then take the value on the flush's connection, inside its transaction, one at
a time (values already reserved in memory are used first). Such values return
to the sequence if the transaction rolls back, like ``in_transaction`` ones.
An in-memory SQLite database exists per thread (or behind one shared
connection), so there ``async_batch`` fetches its blocks in the caller's
thread, as ``batch`` does.
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

    def _create_attached(self, conn: sa.Connection, *, checkfirst: bool) -> None:
        sequences_table(sa.MetaData(), self.table).create(conn, checkfirst=True)
        self.create(conn, checkfirst=checkfirst)

    def _drop_attached(self, conn: sa.Connection, *, checkfirst: bool) -> None:
        if not checkfirst or sa.inspect(conn).has_table(self.table):
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
