"""How a ``TableSequence`` takes its values: the row's allocations, and its blocks.

:class:`RowAllocations` serves the per-value modes (``in_transaction``, ``separate``);
:class:`BlockModes` adds ``batch`` and ``async_batch``, blocks held in memory
(``_allocator``). Each way of taking gets the engine and the connection of the
statement that needs the value (None: no transaction of the caller's).

Design: docs/architecture.md.
"""

from __future__ import annotations

import weakref
from typing import Any

import sqlalchemy as sa

from sqlalchemy_seqkeys._aio import pause
from sqlalchemy_seqkeys._dialect import facts
from sqlalchemy_seqkeys.errors import SequenceAllocationError, SequenceMovedBackwardsError

from . import _lane
from ._allocator import Block, Blocks, BlockStore, Waits, range_block, values_block
from ._retry import error_in_callers_transaction, retrying
from .table import allocate, block_holders, received, row_key, tenant_of, wrote_row_here

__all__ = ["BlockModes", "RowAllocations", "allocation_engine", "must_stay_on"]


# -- does the caller's transaction hold a lock a second connection would wait for? --


def _sqlite_holds_write_lock(conn: sa.Connection) -> bool:
    # pysqlite opens its transaction right before the first write, so an open
    # transaction on the driver's connection means the write lock is (or is
    # about to be) held by this connection. The driver's connection, not the
    # DB-API one: aiosqlite's adapter has no in_transaction of its own.
    return bool(getattr(conn.connection.driver_connection, "in_transaction", False))


def must_stay_on(conn: sa.Connection, name: str) -> bool:
    """Whether a value of sequence row ``name`` must be taken on ``conn``, in its transaction.

    Where that transaction may hold the one write lock (SQLite), or has
    written the row through this library (a create, drop, resync or
    allocation joined to it: ``table.wrote_row``): an allocation on a second
    connection would wait for a lock the caller's own transaction holds, for
    good on PostgreSQL, or not see a row created in it. Such a value is taken
    alone, never as a block: it returns to the sequence with a rollback of the
    transaction, as the rows that used it go.
    """
    if facts(conn.dialect).single_writer_lock and _sqlite_holds_write_lock(conn):
        return True
    return wrote_row_here(conn, name)


def allocation_engine(engine: sa.Engine, conn: sa.Connection | None) -> sa.Engine:
    """The engine for allocations of their own, with the caller's schema_translate_map.

    The map on the caller's connection or engine must reach the allocation's
    connection too, or it would take values from another tenant's sequences table.
    A copy of it: a block's refills use this engine later, when the caller's map
    may have changed in place (another tenant).
    """
    bind = conn if conn is not None else engine
    translate = bind.get_execution_options().get("schema_translate_map")
    if not translate:
        return engine
    return engine.execution_options(schema_translate_map=dict(translate))


class RowAllocations:
    """Allocations from one sequence's row; the per-value modes take their values here.

    :param name: the sequence's row name
    :param table: the sequences table's name
    """

    __slots__ = ("name", "table")

    def __init__(self, name: str, table: str) -> None:
        self.name = name
        self.table = table

    # -- the per-value modes: the first of ``n`` values -----------------------------

    def in_transaction(self, engine: sa.Engine, conn: sa.Connection | None, n: int = 1) -> int:
        """``in_transaction``: in the caller's transaction; without one, in one of its own."""
        if conn is None:
            return self.allocate_separately(engine, n)
        return self.allocate_in(conn, n)

    def separate(self, engine: sa.Engine, conn: sa.Connection | None, n: int = 1) -> int:
        """``separate``: in a transaction of its own (one holding the row's lock: the caller's)."""
        if conn is not None and must_stay_on(conn, self.name):
            return self.allocate_in(conn, n)
        return self.allocate_separately(allocation_engine(engine, conn), n)

    # -- allocations ----------------------------------------------------------------

    def allocate_separately(self, engine: sa.Engine, n: int) -> int:
        """Allocate ``n`` values in a committed transaction of their own; return the first.

        On an asyncio engine the round trip runs in the engine's lane (a task
        of its own on a twin pool, see ``_lane``), waited for inside the
        greenlet; in-memory SQLite has one connection, so it runs here.
        """
        if engine.dialect.is_async:
            if not _lane.shares_one_connection(engine):
                row = (tenant_of(engine), self.table, self.name)
                return _lane.allocate(engine, row, self.name, self.allocate_now, n)
            _lane.check_in_greenlet()
        return self.allocate_now(engine, n)

    def _what(self, n: int) -> str:
        return f"allocating {n} value(s) from sequence {self.name!r} (table {self.table!r})"

    def allocate_in(self, conn: sa.Connection, n: int) -> int:
        """Take ``n`` values in ``conn``'s transaction, the caller's: never retried here."""
        try:
            return allocate(conn, self.name, n, table=self.table)
        except sa.exc.DBAPIError as exc:
            raise error_in_callers_transaction(exc, self._what(n)) from exc

    def allocate_now(self, engine: sa.Engine, n: int) -> int:
        """Allocate ``n`` values on ``engine``, in this thread (or greenlet); return the first.

        A block at or below a value this process already received from the same
        row means the row moved backwards (a restore, a recreation): refused.
        """

        def attempt() -> int:
            # one round trip instead of BEGIN, UPDATE, COMMIT: that matters most
            # when a refill competes for the GIL with many busy threads
            if facts(engine.dialect).autocommit_allocation:
                with engine.connect() as conn:
                    conn = conn.execution_options(isolation_level="AUTOCOMMIT")
                    return allocate(conn, self.name, n, table=self.table)
            with engine.begin() as conn:
                return allocate(conn, self.name, n, table=self.table)

        # Read before allocating: any allocation recorded by then committed
        # before this one began, so this one must come back above it.
        key = (tenant_of(engine), self.table, self.name)
        since = received.epoch
        floor = received.highest(engine, key)
        first = retrying(
            attempt,
            what=self._what(n),
            sleep=pause,
        )
        if floor is not None and first <= floor and received.still(since):
            raise SequenceMovedBackwardsError(
                f"sequence {self.name!r} (table {self.table!r}) gave values {first} to "
                f"{first + n - 1}, but this process already received values up to {floor} from "
                "it: its row moved backwards (restored from a backup, recreated or edited). "
                "None of these values was handed out. Move the row past the keys in use: "
                f"resync_table_sequence(engine, {self.name!r}, TABLE, COLUMN), "
                f"`seqkeys resync --sequence {self.name} --table TABLE --column COLUMN`, "
                "or op.resync_table_sequence(...) in a migration"
            )
        received.record(engine, key, first + n - 1, since)
        return first


class BlockModes(RowAllocations):
    """``batch`` and ``async_batch``: values of blocks of the row, held in memory.

    :param name: the sequence's row name
    :param table: the sequences table's name
    :param batch_size: values per block
    :param low_watermark: ``async_batch``: the refill starts once this many
        values remain; None: ``batch``, no refill ahead
    :param refill_timeout: seconds a caller waits for a block another fetches
    """

    __slots__ = ("__weakref__", "batch_size", "blocks", "lane_blocks", "low_watermark", "waits")

    def __init__(
        self,
        name: str,
        table: str,
        *,
        batch_size: int,
        low_watermark: int | None,
        refill_timeout: float,
    ) -> None:
        super().__init__(name, table)
        self.batch_size = batch_size
        self.low_watermark = low_watermark
        #: threads: per pool and tenant; asyncio: per lane (engine and loop) and tenant
        self.blocks: BlockStore[Blocks] = BlockStore(self._new_blocks)
        self.lane_blocks: BlockStore[Blocks] = BlockStore(self._new_lane_blocks)
        self.waits = Waits(name, refill_timeout)
        block_holders.add(self, row_key(table, name))  # created anew: forget_blocks()

    def forget_blocks(self) -> None:
        """Drop every block held: the row was created or dropped anew through this library."""
        self.blocks.forget()
        self.lane_blocks.forget()

    def take(self, engine: sa.Engine, conn: sa.Connection | None) -> int:
        """A value of this process's block (lock-free: ``_allocator``); the hot path."""
        if engine.dialect.is_async:
            return self._take_async(engine, conn)
        state = self.blocks.of(engine if conn is None else conn)
        value = state.take(conn)
        if value is not None:
            return value
        # the block is used up: a spare, a fetch (here or in a refill thread), or a wait
        value = state.take_waiting(
            self.waits,
            background=state.refill is not None,
            may_stay=lambda: conn is not None and must_stay_on(conn, self.name),
        )
        if value is None:  # never wait on a fetch that waits for our lock
            return self.allocate_in(conn, 1)  # type: ignore[arg-type]
        return value

    def _new_blocks(self, bind: sa.Engine | sa.Connection, owner: object) -> Blocks:
        """The blocks of one pool and tenant, fetched in the caller's thread or a refill thread."""
        engine = bind if isinstance(bind, sa.Engine) else bind.engine
        alloc_engine = allocation_engine(engine, None if bind is engine else bind)  # type: ignore[arg-type]
        size, low_watermark, name = self.batch_size, self.low_watermark, self.name
        state = Blocks()

        def fetch() -> Block:
            first = self.allocate_separately(alloc_engine, size)
            return range_block(first, first + size, low_watermark)

        def refill(holder: sa.Connection | None) -> None:  # at the low watermark
            if holder is None or not must_stay_on(holder, name):
                state.start_refill()  # else it would wait for the holder's lock, and fail

        state.fetch = fetch
        # A pool that hands every checkout one connection (in-memory SQLite: a
        # database per thread, or one shared connection) is not the same
        # database in another thread: async_batch fetches in the caller's thread there.
        if low_watermark is not None and not _lane.shares_one_connection(engine):
            state.refill = refill
        return state

    # -- asyncio: blocks per lane, fetched by the lane's tasks --------------------

    def _take_async(self, engine: sa.Engine, conn: sa.Connection | None) -> int:
        """On an asyncio engine: inside the greenlet, on the loop's thread.

        The steps of the threaded path, with a task of the lane for the fetch:
        callers that need its block wait for that task, the loop running on.
        """
        if _lane.shares_one_connection(engine):
            return self._take_on_one_connection(engine, conn)
        lane = _lane.lane_for(engine)
        state = self.lane_blocks.of(engine if conn is None else conn, lane)
        value = state.take(conn)
        if value is not None:
            return value
        value = state.take_on_lane(
            self.waits, _lane.wait, lambda: conn is not None and must_stay_on(conn, self.name)
        )
        if value is None:
            return self.allocate_in(conn, 1)  # type: ignore[arg-type]
        return value

    def _new_lane_blocks(self, bind: sa.Engine | sa.Connection, lane: Any) -> Blocks:
        """The blocks of one lane and tenant: fetched by a task of the lane.

        They hold the lane weakly: ``lane_blocks`` is keyed weakly by the lane, and
        a lane released (its loop ended, the engine disposed) takes its blocks with
        it; their values left are a gap, never handed out again.
        """
        engine = bind if isinstance(bind, sa.Engine) else bind.engine
        alloc_engine = allocation_engine(engine, None if bind is engine else bind)  # type: ignore[arg-type]
        row = (tenant_of(alloc_engine), self.table, self.name)
        size, low_watermark = self.batch_size, self.low_watermark
        state = Blocks()
        lane_ref: weakref.ref[_lane.Lane] = weakref.ref(lane)
        name = self.name

        def live_lane() -> _lane.Lane:
            current = lane_ref()
            if current is None:  # never while a caller holds it (lane_for)
                raise SequenceAllocationError(_lane.DISPOSED.format(name=name))
            return current

        async def fetch() -> Block:
            current = live_lane()
            lane_engine = current.engine_like(alloc_engine)
            first = await current.run(row, self.allocate_now, lane_engine, size)
            return range_block(first, first + size, low_watermark)

        def spawn() -> None:
            state.task = live_lane().spawn(state.fetch_on_lane(fetch), name)

        def refill(holder: sa.Connection | None) -> None:  # at the low watermark
            if holder is not None and must_stay_on(holder, name):
                return  # it would wait for the holder's lock, and fail
            current = lane_ref()
            idle = state.lane_task() is None and current is not None and not current.closed
            if idle and not state.spares and state.error is None:
                spawn()

        state.spawn = spawn
        state.refill = refill if low_watermark is not None else None
        return state

    def _take_on_one_connection(self, engine: sa.Engine, conn: sa.Connection | None) -> int:
        """In-memory SQLite under asyncio: one shared connection, so fetch here, as batch does."""
        _lane.check_in_greenlet()
        alloc_engine = allocation_engine(engine, conn)
        size = self.batch_size

        def fetch() -> Block:
            if conn is not None and must_stay_on(conn, self.name):
                return values_block([self.allocate_in(conn, 1)])  # in the caller's transaction
            first = self.allocate_now(alloc_engine, size)
            return range_block(first, first + size)

        state = self.blocks.of(engine if conn is None else conn)
        return state.take_or_fetch(fetch)
