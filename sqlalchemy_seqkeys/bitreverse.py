"""Bit reversal: Spanner's ``bit_reversed_positive`` sequence values, on every engine.

:func:`reverse_bits` reverses a counter's 63 low bits (sign bit 0) exactly as Spanner does, and
is its own inverse. :class:`BitReversedSequence` is a column default that hands out
``reverse_bits(start)``, ``reverse_bits(start + 1)``, ..., skipping values in ``skip_range``;
its counter is a native sequence, or a sequences-table row on SQLite and MySQL, and
``batch_size=N`` reads ``N`` counters per statement. :class:`BitReversed` reverses a counter you
already have.

User guide: docs/strategies/bit-reversed.md.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise
from typing import Any, TypeGuard, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine.default import DefaultExecutionContext
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.schema import CreateSequence
from sqlalchemy.sql.compiler import DDLCompiler

from sqlalchemy_seqkeys._aio import pause
from sqlalchemy_seqkeys._dialect import (
    facts,
    has_sequences,
    identifier_text,
    keyed_by_schema,
    natively_bit_reversed,
)
from sqlalchemy_seqkeys._positional import PositionalDefault
from sqlalchemy_seqkeys._validate import check_int
from sqlalchemy_seqkeys.dialects import BlockStatement
from sqlalchemy_seqkeys.errors import (
    InvalidBitReversalError,
    SeqKeysError,
    SequenceExhaustedError,
)
from sqlalchemy_seqkeys.sequences._aio import begin
from sqlalchemy_seqkeys.sequences._allocator import Block, Blocks, BlockStore, values_block
from sqlalchemy_seqkeys.sequences._contract import (
    NOT_GIVEN,
    NativeOrRowSequence,
    OwnSequence,
    Unset,
    deprecated_factory,
    resolve_alias,
)
from sqlalchemy_seqkeys.sequences._retry import (
    error_in_callers_transaction,
    retrying,
    sequence_error,
    sequence_ran_out,
    statement_errors,
)
from sqlalchemy_seqkeys.sequences.generators import TableSequence
from sqlalchemy_seqkeys.sequences.table import (
    DEFAULT_TABLE,
    allocate,
    check_name,
    statement_map,
    with_schema_map,
)

__all__ = [
    "MAX_BIT_REVERSED_BATCH",
    "BitReversed",
    "BitReversedSequence",
    "bit_reversed_sequence",
    "reverse_bits",
]

_BITS = 63
_LIMIT = 1 << _BITS

T = TypeVar("T")


def reverse_bits(n: int) -> int:
    """Reverse the 63 low bits of ``n`` (0 <= n < 2**63); the result's sign bit is 0.

    Equal to Spanner's ``bit_reversed_positive`` sequence value for counter
    ``n`` (checked on the emulator: counter 1 gives 2**62, counter 2 gives
    2**61), and its own inverse.

    :param n: the counter, 0 to 2**63 - 1.

    Example::

        >>> reverse_bits(2)
        2305843009213693952
        >>> reverse_bits(1000)
        855683929200394240
    """
    hint = "reverse_bits() takes a positive BIGINT"
    check_int(n, "n", InvalidBitReversalError, min=0, max=_LIMIT - 1, hint=hint)
    return _reversed(n)


def _reversed(n: int) -> int:
    """:func:`reverse_bits` of an ``n`` known to be in range (a value this module made)."""
    return int(f"{n:063b}"[::-1], 2)


SkipRange = tuple[int, int]
"""An inclusive ``(skip_range_min, skip_range_max)`` of output values never handed out."""

#: How many skipped values in a row make a skip range look like a mistake:
#: a skip range covering all but 1 in 10,000 values is almost surely one.
MAX_CONSECUTIVE_SKIPS = 10_000


def check_skip_range(skip_range: object) -> SkipRange | None:
    """``skip_range`` as a tuple, or None; anything else is refused with InvalidBitReversalError.

    The rule of every ``skip_range=`` (the column defaults' and the Alembic operations'):
    ``(low, high)`` ints, ``0 <= low <= high < 2**63``.

    :param skip_range: ``(low, high)`` (a list is taken too), or None: no skip range.
    """
    if skip_range is None:
        return None
    if (
        not isinstance(skip_range, (tuple, list))
        or len(skip_range) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in skip_range)
    ):
        raise InvalidBitReversalError(
            f"skip_range is a pair of ints (skip_range_min, skip_range_max), not {skip_range!r}"
        )
    low, high = skip_range
    if not 0 <= low <= high < _LIMIT:
        raise InvalidBitReversalError(
            f"skip_range must satisfy 0 <= skip_range_min <= skip_range_max < 2**63, "
            f"not ({low}, {high})"
        )
    return (low, high)


class BitReversed:
    """A column default: the values of ``source``, bit-reversed (Spanner-identical).

    ``source`` is a :class:`~sqlalchemy_seqkeys.TableSequence` (any mode) or an
    ``sqlalchemy.Sequence``. A Sequence on Spanner is created bit-reversed by
    sqlalchemy-spanner, so its values are used as they are there; on
    PostgreSQL and MariaDB the counter comes from the native sequence and is
    reversed here. SQLite has no sequences: use a TableSequence there.

    ``skip_range=(low, high)`` never hands out a value in ``low .. high``
    (inclusive): like Spanner, the counter that would give one is consumed
    and the next one is taken. Use it for keys that already exist.

    :param source: a :class:`~sqlalchemy_seqkeys.TableSequence` (or another
        callable taking the execution context) or an ``sqlalchemy.Sequence``.
    :param skip_range: ``(low, high)``: values never handed out (inclusive).

    Example::

        counter = TableSequence("orders_counter", mode="async_batch")
        id: Mapped[int] = mapped_column(BigInteger, primary_key=True,
                                        default=BitReversed(counter))
    """

    def __init__(self, source: Any, *, skip_range: SkipRange | None = None) -> None:
        if not isinstance(source, sa.Sequence) and not callable(source):
            raise InvalidBitReversalError(
                f"BitReversed wraps a TableSequence or an sqlalchemy.Sequence, not {source!r}"
            )
        self.source = source
        self.skip_range = check_skip_range(skip_range)
        #: per pool and tenant where there are native sequences: whether the catalog was
        #: checked, and (BitReversedSequence, batch_size > 1) the block held
        self._blocks: BlockStore[_Block | None] = BlockStore(_new_block)

    def __repr__(self) -> str:
        skip = f", skip_range={self.skip_range}" if self.skip_range else ""
        return f"BitReversed({self.source!r}{skip})"

    def __call__(self, context: DefaultExecutionContext) -> int:
        """The column default: one value for the row being inserted."""
        translate = statement_map(context)
        if translate is not False:  # a map given to this statement only
            return with_schema_map(
                context.connection, translate, lambda: self._skipping(lambda: self._draw(context))
            )
        return self._skipping(lambda: self._draw(context))

    def _skipping(self, draw: Callable[[], int]) -> int:
        """``draw()`` until its value lies outside the skip range."""
        skip_range = self.skip_range
        if skip_range is None:
            return draw()
        low, high = skip_range
        for _ in range(MAX_CONSECUTIVE_SKIPS):
            value = draw()
            if not low <= value <= high:
                return value
        raise self._skipped_too_many(MAX_CONSECUTIVE_SKIPS)

    def _skipped_too_many(self, skipped: int) -> SequenceExhaustedError:
        return SequenceExhaustedError(
            f"{self!r} skipped {skipped} values in a row: skip_range {self.skip_range} "
            "covers nearly all of the key space. Narrow it to the keys already in use"
        )

    def _draw(self, context: DefaultExecutionContext) -> int:
        source = self.source
        if isinstance(source, sa.Sequence):
            conn = context.connection
            if not has_sequences(conn.dialect):
                raise InvalidBitReversalError(
                    f"{conn.dialect.name} has no sequences; wrap a TableSequence instead: "
                    "BitReversed(TableSequence(name, mode=...)), or declare "
                    "BitReversedSequence(name), which uses one there"
                )
            state = self._blocks.of(conn)
            if state is not None and not state.checked:
                state.checked = _check_catalog(conn, source, repr(self), increment=None)
            return _next_from_sequence(conn, source)
        return reverse_bits(int(source(context)))


def _check_catalog(
    conn: sa.Connection,
    sequence: sa.Sequence,
    declared: str,
    *,
    increment: int | None,
    own: bool = False,
) -> bool:
    """Refuse native ``sequence`` if it cycles, or (``increment``) counts by another step.

    A cycling sequence hands its counters, so its keys, out again after its
    MAXVALUE. True: checked (or this library does not know the engine's catalog);
    False: there is no such sequence, and taking a value from it says so.
    ``own``: in :func:`_own_transaction`, where a database error is raised as it is.
    """
    read = facts(conn.dialect).read_sequence_catalog
    if read is None or natively_bit_reversed(conn.dialect):  # Spanner's own kind of sequence
        return True
    try:
        found = read(conn, sequence)
    except statement_errors() as exc:
        if own and _runs_again(exc):
            raise
        what = f"reading sequence {sequence.name!r} in the catalog"
        raise _statement_error(exc, sequence.name, what) from exc
    if found is None:
        return False
    step, cycles = found
    sql_name = identifier_text(conn.dialect, sequence.name, sequence.schema)
    if cycles:
        raise InvalidBitReversalError(
            f"sequence {sequence.name!r} of {declared} cycles: after its MAXVALUE it would "
            "hand out its counters again, so the same keys. Nothing was handed out. Alter it: "
            f"ALTER SEQUENCE {sql_name} NO CYCLE"
        )
    if increment is not None and step != increment:
        raise InvalidBitReversalError(
            f"sequence {sequence.name!r} has INCREMENT BY {step} in the database, but "
            f"{declared} counts its counters one by one (INCREMENT BY {increment}), as "
            "Spanner's bit_reversed_positive sequence does: its values would not be "
            f"Spanner's. Nothing was handed out. Alter it: ALTER SEQUENCE {sql_name} "
            f"INCREMENT BY {increment}"
        )
    return True


def _statement_error(exc: BaseException, name: str, what: str) -> SeqKeysError:
    """The SeqKeysError for a sequence's statement that failed in the caller's transaction.

    Raise it ``from exc``: :class:`~sqlalchemy_seqkeys.SequenceExhaustedError` where the
    sequence has no value left; a database error says the transaction is the caller's
    to roll back (and, aborted, to run again): it is never run again here.
    """
    if _runs_again(exc):
        return error_in_callers_transaction(exc, what)
    return sequence_error(exc, name, what)


def _runs_again(exc: BaseException) -> TypeGuard[sa.exc.DBAPIError]:
    """A database error that ``retrying`` judges (runs the transaction again or words it);
    a sequence that ran out is a SequenceExhaustedError wherever it happens."""
    return isinstance(exc, sa.exc.DBAPIError) and not sequence_ran_out(exc)


def _next_from_sequence(conn: sa.Connection, sequence: sa.Sequence, own: bool = False) -> int:
    """The next value of native ``sequence``; ``own``: in a transaction that
    :func:`_own_transaction` runs again, where a database error is raised
    as it is."""
    try:
        value = conn.scalar(keyed_by_schema(sa.select(sequence.next_value()), sequence))
    except statement_errors() as exc:
        if own and _runs_again(exc):
            raise
        what = f"taking a value from sequence {sequence.name!r}"
        raise _statement_error(exc, sequence.name, what) from exc
    if value is None:  # pragma: no cover - a sequence always answers
        raise InvalidBitReversalError(f"sequence {sequence.name!r} returned no value")
    if natively_bit_reversed(conn.dialect):
        return int(value)
    return reverse_bits(int(value))


def _own_transaction(
    bind: sa.Engine | sa.Connection,
    what: str,
    name: str,
    take: Callable[[sa.Connection, bool], T],
) -> T:
    """``take(conn, own)`` in a transaction of its own with an Engine, run again after an abort.

    Spanner aborts a read-write transaction at a statement or at its COMMIT (the
    dbapi's replay gets other values from the sequence: ``RetryAborted``); a deadlock
    or a busy SQLite does the same. The values of a transaction that did not commit
    were never handed out, and a sequence never gives one back (the sequences table
    takes them back with the rollback): the whole transaction runs again, and what
    still fails is a SequenceAllocationError with the database error as its cause.
    A Connection's transaction is the caller's: ``take`` runs once, in it.
    """
    if not isinstance(bind, sa.Engine):
        with begin(bind, what) as conn:
            return take(conn, False)
    engine = bind

    def attempt() -> T:
        with engine.begin() as conn:
            return take(conn, True)

    doing = f"taking values from sequence {name!r} ({what}(engine), a transaction of its own)"
    return retrying(attempt, what=doing, sleep=pause)


class _NativeBitReversedSequence(OwnSequence):
    """The native sequence behind a BitReversedSequence; Spanner's DDL carries its options
    (MariaDB's is NOCACHE, as every :class:`OwnSequence`)."""

    def __init__(
        self,
        name: str,
        *,
        start_with_counter: int,
        skip_range: SkipRange | None,
        schema: str | None,
    ) -> None:
        super().__init__(name, start=start_with_counter, minvalue=1, schema=schema)
        self.start_with_counter = start_with_counter
        self.skip_range = skip_range


@compiles(CreateSequence, "spanner+spanner")
def _spanner_create_sequence(create: CreateSequence, compiler: DDLCompiler, **kw: Any) -> str:
    sequence = create.element
    if not isinstance(sequence, _NativeBitReversedSequence):
        text: str = compiler.visit_create_sequence(create, **kw)  # type: ignore[no-untyped-call]
        return text
    options = [
        "sequence_kind = 'bit_reversed_positive'",
        f"start_with_counter = {sequence.start_with_counter}",
    ]
    if sequence.skip_range is not None:
        low, high = sequence.skip_range
        options += [f"skip_range_min = {low}", f"skip_range_max = {high}"]
    if_not_exists = " IF NOT EXISTS" if create.if_not_exists else ""
    name = compiler.preparer.format_sequence(sequence)
    return f"CREATE SEQUENCE{if_not_exists} {name} OPTIONS ({', '.join(options)})"


# -- blocks: many counters in one statement ---------------------------------------

#: The largest ``batch_size``: a block is fetched by one statement and held in
#: memory, and what a stopped process held is lost.
MAX_BIT_REVERSED_BATCH = 2**20


def _no_sequence_engine(exc: sa.exc.DBAPIError) -> bool:
    """MariaDB said a ``seq_1_to_N`` table does not exist: its SEQUENCE engine is off."""
    text = str(exc.orig)
    return "seq_1_to_" in text and ("1146" in text or "doesn't exist" in text)


def _check_distinct(counters: list[int], name: str, batch_size: int) -> None:
    """Refuse a block whose ``counters`` (sorted) are not distinct: none of them is handed out."""
    if any(low >= high for low, high in pairwise(counters)):
        raise InvalidBitReversalError(
            f"sequence {name!r} returned counters that are not distinct for one block of "
            f"{batch_size}: it would hand out the same keys twice (a sequence that cycles, or "
            "was altered meanwhile). Nothing of the block was handed out. Check it: NO CYCLE, "
            "INCREMENT BY 1"
        )


class _Block(Blocks):
    """The values of one bit-reversed sequence this process holds for one database and tenant."""

    __slots__ = ("build", "checked")

    def __init__(self, build: BlockStatement | None) -> None:
        super().__init__()
        #: the statement that fetches a block here; None: one value per statement
        self.build = build
        #: the native sequence's catalog agreed: no CYCLE (a BitReversedSequence's: INCREMENT
        #: BY 1 too); asked once per pool and tenant, a refusal is not remembered
        self.checked = False


def _new_block(bind: sa.Engine | sa.Connection, owner: object) -> _Block | None:
    # None: no native sequence; the counter is a batch TableSequence, whose
    # blocks are in memory there
    if not has_sequences(bind.dialect):
        return None
    return _Block(facts(bind.dialect).sequence_block)


class BitReversedSequence(BitReversed, NativeOrRowSequence, PositionalDefault):
    """A bit-reversed sequence with the same values on every engine; a column default.

    The ``n``-th value is ``reverse_bits(start + n)``, except that values
    inside ``skip_range=(low, high)`` (inclusive) are never handed out: as on
    Spanner, the counter that would give one is consumed and the next counter
    is used. It has the methods every sequence class has
    (docs/reference/sequences.md). Where its counter lives depends on the
    engine it runs on, and with ``batch_size`` > 1 how a block of counters is
    fetched in one statement:

    ==========================  ==========================  =====================================
    engine                      counter                     a block of ``N`` counters
    ==========================  ==========================  =====================================
    Spanner                     a native                    ``SELECT GET_NEXT_SEQUENCE_VALUE(
                                ``bit_reversed_positive``   SEQUENCE s) FROM UNNEST(
                                sequence                    GENERATE_ARRAY(1, N))``
    PostgreSQL                  a native sequence,          ``SELECT nextval('s') FROM
                                reversed here               generate_series(1, N)``
    MariaDB                     a native sequence,          ``SELECT NEXTVAL(s) FROM seq_1_to_N``
                                reversed here               (a recursive CTE without the
                                                            SEQUENCE engine)
    SQLite, MySQL               a row of the sequences      one ``UPDATE`` of ``next_value``
                                table                       by ``N``, committed on its own
    ==========================  ==========================  =====================================

    **Blocks.** ``batch_size=N`` (1 to 2**20; default 1, one statement per
    value) fetches ``N`` counters in one statement and hands their values out
    from memory: a 2,000-row flush reads the sequence about 2,000 / N times,
    and keys stay client-side, so the INSERTs stay batched. The values are
    Spanner's, skip range included (a skipped counter is consumed, also
    inside a block). Each fetch runs on the INSERT's own connection, under
    asyncio too (SQLite and MySQL: a ``batch`` TableSequence, committed on its
    own; under asyncio on the engine's allocation lane). Engines without a
    block statement (Oracle, SQL Server) take one value per statement. Blocks
    are kept per engine (pool) and ``schema_translate_map``, shared by threads
    and by asyncio tasks; a forked child, also one forked by libc ``fork()``,
    never hands out its parent's block.

    With blocks, values are unique but no longer ordered across threads and
    processes nor gapless: a rolled-back transaction does not give its values
    back (with ``batch_size=1`` the sequences table does), and a process that
    stops loses the rest of its block. Spanner, PostgreSQL and MariaDB never
    give a value back, with or without blocks.

    :param name: the sequence's name.
    :param start: the counter of the first value (Spanner's ``start_with_counter``),
        1 to 2**63 - 1.
    :param skip_range: ``(low, high)``: values never handed out (inclusive).
    :param batch_size: counters per statement, held in memory: 1 to 2**20.
    :param schema: the native sequence's schema.
    :param table: the sequences table where the engine has no sequences.
    :param metadata: create and drop it with this ``MetaData`` (:meth:`attach`).
    :param start_with_counter: Spanner's name of ``start``, accepted as an
        alias (pass one of the two).

    Example (a skip range; on SQLite the counter is a row of the sequences table)::

        >>> import sqlalchemy as sa
        >>> from sqlalchemy_seqkeys import BitReversedSequence, reverse_bits, sequences_table
        >>> metadata = sa.MetaData()
        >>> _ = sequences_table(metadata)
        >>> low_half = BitReversedSequence(   # no value with bit 62 set: all below 2**62
        ...     "low_half", skip_range=(2**62, 2**63 - 1), metadata=metadata)
        >>> engine = sa.create_engine("sqlite://")
        >>> metadata.create_all(engine)
        >>> values = low_half.next_values(engine, 3)
        >>> values
        [2305843009213693952, 1152921504606846976, 3458764513820540928]
        >>> [reverse_bits(v) for v in values]   # odd counters reverse into bit 62: consumed
        [2, 4, 6]

    As a column default, ``mapped_column(BigInteger, primary_key=True, default=low_half)``
    (docs/strategies/bit-reversed.md).
    """

    _info_key = "seqkeys_bit_reversed"
    _error = InvalidBitReversalError

    def __init__(
        self,
        name: str,
        *,
        start: int = Unset(1),
        skip_range: SkipRange | None = None,
        batch_size: int = 1,
        schema: str | None = None,
        table: str = DEFAULT_TABLE,
        metadata: sa.MetaData | None = None,
        start_with_counter: int | None = NOT_GIVEN,
    ) -> None:
        check_name(name)
        first = resolve_alias(
            start, "start", start_with_counter, "start_with_counter", InvalidBitReversalError
        )
        start = check_int(
            first,
            "start" if start_with_counter is NOT_GIVEN else "start_with_counter",
            InvalidBitReversalError,
            min=1,
            max=_LIMIT - 1,
            hint="it is the counter of the first value, 1 to 2**63 - 1",
        )
        self.batch_size = check_int(
            batch_size,
            "batch_size",
            InvalidBitReversalError,
            min=1,
            max=MAX_BIT_REVERSED_BATCH,
            hint="it is how many counters one statement fetches and this process holds",
        )
        self._place(schema, table, metadata)
        self.name = name
        self.start = start
        self.sequence = _NativeBitReversedSequence(
            name,
            start_with_counter=start,
            skip_range=check_skip_range(skip_range),
            schema=schema,
        )
        self.counter = self._new_counter()
        super().__init__(self.sequence, skip_range=skip_range)  # its _blocks too
        self._hold_blocks()
        if metadata is not None:
            self.attach(metadata)

    def __repr__(self) -> str:
        skip = f", skip_range={self.skip_range}" if self.skip_range else ""
        batch = f", batch_size={self.batch_size}" if self.batch_size != 1 else ""
        return f"BitReversedSequence({self.name!r}, start={self.start}{skip}{batch})"

    @property
    def start_with_counter(self) -> int:
        """Spanner's name of :attr:`start` (read only)."""
        return self.start

    def _native(self, dialect: sa.Dialect) -> bool:
        return has_sequences(dialect)

    def _row(self) -> TableSequence:
        return self.counter

    def __call__(self, context: DefaultExecutionContext) -> int:
        """The column default: one value for the row being inserted."""
        conn = context.connection
        translate = statement_map(context)
        if translate is not False:  # a map given to this statement only
            return with_schema_map(conn, translate, lambda: self._value(conn))
        return self._value(conn)

    def _value(self, conn: sa.Connection, own: bool = False) -> int:
        """One value, on ``conn``; ``own``: in :func:`_own_transaction` (database errors raw)."""
        state = self._blocks.of(conn)
        if state is not None:  # a native sequence
            if not state.checked:
                self._check_identifiers(conn.dialect)
                state.checked = _check_catalog(
                    conn, self.sequence, repr(self), increment=1, own=own
                )
            if self.batch_size > 1:
                return self._take(conn, state, own)
        return self._skipping(lambda: self._draw_on(conn, own))

    def _draw_on(self, conn: sa.Connection, own: bool = False) -> int:
        if self._native(conn.dialect):
            self._check_identifiers(conn.dialect)
            return _next_from_sequence(conn, self.sequence, own)
        counter = self.counter
        if own and self.batch_size == 1:  # its in_transaction row, raw errors: run again
            return reverse_bits(allocate(conn, counter.name, table=counter.table))
        return reverse_bits(counter.next_value(conn))

    # -- blocks of a native sequence ----------------------------------------------

    def _take(self, conn: sa.Connection, state: _Block, own: bool = False) -> int:
        """One value from this process's block for ``conn``'s database; fetch one if empty.

        The fetch runs on ``conn``, the INSERT's own connection, with no lock
        held: threads never wait for each other's round trips, and under
        asyncio the loop runs on. Two threads that run out at once each fetch
        a block; both are handed out, every value once.
        """
        value = state.take()
        if value is not None:
            return value
        skipped = 0

        def fetch() -> Block | None:
            nonlocal skipped
            fetched, values = self._fetch(conn, state, own)
            if values:
                return values_block(values)
            skipped += fetched  # every counter of the block fell in the skip range
            if skipped >= MAX_CONSECUTIVE_SKIPS:
                raise self._skipped_too_many(skipped)
            return None

        return state.take_or_fetch(fetch)

    def _fetch(self, conn: sa.Connection, state: _Block, own: bool) -> tuple[int, list[int]]:
        """Fetch a block on ``conn``: (counters consumed, values to hand out, in counter order).

        ``own``: in :func:`_own_transaction`, which runs again after a database error (raw).
        """
        self._check_identifiers(conn.dialect)
        try:
            raw = self._fetch_raw(conn, state)
        except statement_errors() as exc:
            if own and _runs_again(exc):
                raise
            what = f"taking a block of {self.batch_size} from sequence {self.name!r}"
            raise _statement_error(exc, self.name, what) from exc
        if natively_bit_reversed(conn.dialect):
            counters = sorted(reverse_bits(int(v)) for v in raw)  # its own inverse
        else:
            counters = sorted(int(v) for v in raw)
        _check_distinct(counters, self.name, self.batch_size)
        values = [reverse_bits(c) for c in counters]
        if self.skip_range is not None:  # as Spanner: a skipped counter is consumed
            low, high = self.skip_range
            values = [v for v in values if not low <= v <= high]
        return len(counters), values

    def _fetch_raw(self, conn: sa.Connection, state: _Block) -> list[Any]:
        build = state.build
        sequence = self.sequence
        if build is None:
            return [conn.scalar(keyed_by_schema(sa.select(sequence.next_value()), sequence))]
        try:
            return list(conn.scalars(keyed_by_schema(build(sequence, self.batch_size), sequence)))
        except sa.exc.DBAPIError as exc:
            if not _no_sequence_engine(exc):
                raise
            from sqlalchemy_seqkeys.dialects import mysql  # MariaDB's: loaded already

            if build is not mysql.sequence_block:
                raise
            # A failed statement leaves a MariaDB transaction as it was.
            state.build = build = mysql.sequence_block_without_sequence_engine
            return list(conn.scalars(keyed_by_schema(build(sequence, self.batch_size), sequence)))

    def _new_counter(self) -> TableSequence:
        # batch_size 1: in the inserting transaction, gapless, as before. A
        # block handed out across transactions must be committed on its own,
        # or a rollback would give back counters still held in memory.
        mode = "in_transaction" if self.batch_size == 1 else "batch"
        return TableSequence(
            self.name, mode=mode, batch_size=self.batch_size, start=self.start, table=self.table
        )

    def _forget_all(self) -> None:
        self._blocks.forget()
        self.counter = self._new_counter()  # its blocks too

    # -- public API -----------------------------------------------------------------

    def next_value(self, bind: sa.Engine | sa.Connection) -> int:
        """Take one value outside the ORM; with an Engine, in a transaction of its own.

        That transaction runs again after an abort (Spanner's, a deadlock): its values
        were never handed out. What still fails raises
        :class:`~sqlalchemy_seqkeys.SequenceAllocationError`, the database error its cause.

        :param bind: an Engine or a Connection (joins its transaction, never run again here).

        Example::

            order_id.next_value(engine)    # e.g. 855683929200394240
        """
        return _own_transaction(bind, "next_value", self.name, self._value)

    def next_values(self, bind: sa.Engine | sa.Connection, n: int) -> list[int]:
        """Take ``n`` distinct values outside the ORM, in ascending order of their counters.

        Bit-reversed values are not ordered; their counters are, within one
        call. With blocks, threads that run out of a block at the same moment
        each fetch one, and the block whose statement answered late is handed
        out after the other: one call's counters are sorted, but a call may
        return counters below those of an earlier call.

        :param bind: an Engine (a transaction of its own, run again after an abort, as
            for :meth:`next_value`) or a Connection (joins its transaction).
        :param n: how many, 0 to 2**20.

        Example::

            order_id.next_values(engine, 3)
        """
        check_int(n, "n", InvalidBitReversalError, min=0, max=MAX_BIT_REVERSED_BATCH)
        values = _own_transaction(
            bind,
            "next_values",
            self.name,
            lambda conn, own: [self._value(conn, own) for _ in range(n)],
        )
        if self.batch_size > 1:  # in order already but where a late, lower block came between
            values.sort(key=_reversed)  # by counter: reversal is its own inverse
        return values


bit_reversed_sequence = deprecated_factory(
    BitReversedSequence,
    "bit_reversed_sequence",
    ("name",),
    {"start_with_counter": "start"},
    """Deprecated since 0.3 (goes in 0.4): use :class:`BitReversedSequence`, which takes the same.

    ``bit_reversed_sequence(name, start_with_counter=5, ...)`` is
    ``BitReversedSequence(name, start=5, ...)``; the class takes
    ``start_with_counter=`` as an alias of ``start=``.

    Example::

        order_id = BitReversedSequence("order_id", start=1000)   # not bit_reversed_sequence(...)
    """,
)
