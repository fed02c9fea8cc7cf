"""The exceptions of sqlalchemy-seqkeys, one hierarchy rooted at :class:`SeqKeysError`.

Every message says what was wrong and what to do about it. Errors for bad
arguments also derive from the built-in exception a caller would expect
(``ValueError``, ``TypeError``, ...), so existing ``except ValueError`` blocks
keep working. Which error means what, and which an operator meets: the "Errors"
reference page (docs/reference/errors.md).
"""

from __future__ import annotations

__all__ = [
    "ClockMovedBackwardsError",
    "ClockSkewError",
    "ForkedWorkerError",
    "InvalidBitReversalError",
    "InvalidGuidError",
    "InvalidLayoutError",
    "InvalidLeaseError",
    "InvalidOpaqueIdError",
    "InvalidSequenceError",
    "InvalidShardError",
    "InvalidSnowflakeError",
    "InvalidTimeRangeError",
    "InvalidTimestampError",
    "InvalidTypeIDError",
    "LeaseTableOutdatedError",
    "MigrationError",
    "MissingExtraError",
    "NaiveDatetimeError",
    "NoWorkerIdError",
    "PooledSequenceMismatchError",
    "SeqKeysError",
    "SequenceAllocationError",
    "SequenceExhaustedError",
    "SequenceExistsError",
    "SequenceLockTimeoutError",
    "SequenceMovedBackwardsError",
    "SequenceNotFoundError",
    "SequencesTableNotFoundError",
    "ShortLifeWarning",
    "TimestampOutOfRangeError",
    "UnknownDialectError",
    "UnsupportedServerFunctionError",
    "WorkerIdNotBoundError",
    "WorkerIdsExhaustedError",
    "WorkerLeaseDatabaseError",
    "WorkerLeaseLostError",
]


class SeqKeysError(Exception):
    """Base class of every error raised by sqlalchemy-seqkeys.

    Example::

        try:
            ...
        except SeqKeysError as exc:
            log.error("key generation failed: %s", exc)
    """


class InvalidLayoutError(SeqKeysError, ValueError):
    """A COMB layout name or value that is not one of :class:`CombLayout`.

    Example: ``new_comb("as_text")`` raises it; use ``"as_string"``.
    """


class NaiveDatetimeError(SeqKeysError, ValueError):
    """A datetime without a timezone where an absolute instant is needed.

    Example: ``new_comb(CombLayout.AS_STRING, at=datetime(2024, 1, 1))`` raises
    it; pass ``datetime(2024, 1, 1, tzinfo=timezone.utc)`` instead.
    """


class TimestampOutOfRangeError(SeqKeysError, ValueError):
    """A timestamp that does not fit the key's timestamp field.

    Example: COMB GUIDs hold 48 bits of Unix milliseconds, from 1970-01-01 to
    10889-08-02; ``new_comb(layout, at=datetime(1960, 1, 1, tzinfo=utc))``
    raises it.
    """


class InvalidTimestampError(SeqKeysError, TypeError):
    """A timestamp argument that is neither an aware datetime nor Unix milliseconds.

    Example: ``new_comb("as_string", at=1.5)`` raises it; pass
    ``datetime(..., tzinfo=timezone.utc)`` or an int of milliseconds since 1970.
    """


class InvalidGuidError(SeqKeysError, TypeError):
    """A value that is not a GUID where one is expected, or a key column that cannot hold one.

    Example: binding ``12345`` to a :class:`CombGuid` column raises it; pass a
    ``uuid.UUID`` or its 36-character string. Reading a :class:`CombGuid`
    column whose stored value is no GUID (text written past the type, bytes
    of the wrong length) raises it too, naming ``table.column`` where the
    statement selects a table's column; and so does declaring
    ``default=new_comb_guid`` on a column type that cannot store a GUID.
    """


class InvalidTypeIDError(SeqKeysError, ValueError):
    """A TypeID that breaks the TypeID specification, or has another type's prefix.

    Example: ``TypeID.parse("user_00000000000000000000000000", prefix="order")``
    raises it, and so does binding a ``user_...`` id to a
    ``TypeIDType("order")`` column; pass an id of the column's type.
    """


class InvalidOpaqueIdError(SeqKeysError, ValueError):
    """A secret or an id the opaque public-id mapping cannot take.

    Example: ``UuidV47(b"short")`` raises it (the secret is 16 bytes), and so
    does ``UuidV47(key).decode(...)`` of a UUID that is not version 4.
    """


class InvalidSequenceError(SeqKeysError, ValueError):
    """A table or pooled sequence given arguments that cannot work.

    Example: ``TableSequence("invoice_id", mode="batch", batch_size=0)`` raises
    it; a batch must hold at least one value. A resync whose data table or
    column does not exist raises it too (nothing is moved).
    """


class SequenceNotFoundError(SeqKeysError, LookupError):
    """The sequences table has no row for the sequence being used.

    Example: allocating from ``TableSequence("invoice_id", ...)`` before
    ``create_table_sequence(engine, "invoice_id")`` raises it.
    """


class SequencesTableNotFoundError(SeqKeysError, LookupError):
    """The ``sequences`` table itself does not exist in the database.

    Example: declare it with ``sequences_table(metadata)`` and create it with
    ``metadata.create_all(engine)``.
    """


class SequenceExistsError(SeqKeysError, ValueError):
    """``create_table_sequence`` (or ``create()`` of a sequence class) for one that exists.

    A sequences-table row or a native sequence; nothing is changed.

    Example: call it with ``checkfirst=True`` to make it a no-op instead.
    """


class SequenceExhaustedError(SeqKeysError, OverflowError):
    """A sequence whose next block would pass 2**63 - 1, the BIGINT maximum.

    Nothing is allocated when it is raised. Example: a sequence at
    ``2**63 - 100`` cannot hand out a block of 200 values.
    """


class SequenceAllocationError(SeqKeysError):
    """Allocating from a table sequence failed, after retries where retrying was safe.

    The original database error is the ``__cause__``. Example: the server
    went away and did not come back within the retry budget.
    """


class SequenceLockTimeoutError(SequenceAllocationError):
    """A sequence's row stayed locked by another transaction for the server's whole lock timeout.

    Raised after one wait, never retried (a retry would wait the whole timeout
    again); the message names the sequence and the setting that bounds the
    wait: ``innodb_lock_wait_timeout`` on MySQL and MariaDB, ``lock_timeout``
    on PostgreSQL. Nothing was handed out and a resync changed nothing. In the
    caller's transaction (``in_transaction``, a Connection passed in) that
    transaction is the caller's to roll back. Example: a long
    ``in_transaction`` transaction or a ``SELECT ... FOR UPDATE`` holds the
    row; end it, or raise the setting for the session.
    """


class SequenceMovedBackwardsError(SequenceAllocationError):
    """A table or pooled sequence gave a block at or below keys this process already received.

    It moved backwards: restored from a backup, recreated, restarted or
    edited. Nothing from that block is handed out. Example: move it past the
    keys in use with :func:`~sqlalchemy_seqkeys.resync_table_sequence`
    (``seqkeys resync``, ``op.resync_table_sequence``) or
    :func:`~sqlalchemy_seqkeys.resync_pooled_sequence`.
    """


class InvalidSnowflakeError(SeqKeysError, ValueError):
    """A snowflake layout, worker id or value that cannot work.

    Example: ``SnowflakeLayout(timestamp_bits=41, worker_bits=12, sequence_bits=12)``
    raises it: that is 65 bits, and an id has 64 at most (63 in a signed ``BIGINT``).
    """


class InvalidLeaseError(InvalidSnowflakeError):
    """A worker-lease argument that cannot work (an :class:`InvalidSnowflakeError`).

    Example: ``WorkerLease(engine, ttl=0)`` raises it; the ttl must be a
    positive number of seconds. Also raised for a lease started twice.
    """


class ShortLifeWarning(UserWarning):
    """A snowflake layout whose timestamp field runs out less than ten years from now.

    Emitted when such a layout (or a generator with it) is created; a layout
    that has already run out raises :class:`InvalidSnowflakeError` instead.
    Example: ``SnowflakeLayout(timestamp_bits=39)`` (39 bits of milliseconds
    from 2010 last until 2028) warns; add timestamp bits, use a later epoch or
    a longer ``time_unit``, or pass ``allow_short_life=True`` to silence it.
    """


class ClockMovedBackwardsError(SeqKeysError):
    """The clock stepped back further than a snowflake generator may wait out.

    Minting on would repeat ids already handed out. Example:
    ``Snowflake(1, max_backwards_ms=5)`` raises it when the clock jumps back by
    2 seconds.

    :param step_ms: how far the clock stepped back, in milliseconds (a float:
      the clock is read in nanoseconds); the message states it, and it stays
      on the error as its ``step_ms`` attribute.
    """

    def __init__(self, step_ms: float) -> None:
        self.step_ms = step_ms
        super().__init__(
            f"the clock moved backwards by {step_ms:.3f} ms; refusing to mint ids that may "
            "already exist. Fix the clock (NTP slewing, not stepping), or raise "
            "max_backwards_ms so that such steps are waited out"
        )


class ForkedWorkerError(SeqKeysError):
    """A forked child tried to mint with its parent's snowflake worker id.

    Example: create the ``Snowflake`` after the fork, or pass
    ``after_fork=`` a function that returns the child's own worker id.
    """


class NoWorkerIdError(SeqKeysError):
    """No worker id to mint with: the base of :class:`WorkerIdsExhaustedError`
    and :class:`WorkerIdNotBoundError`.

    Raised as one of the two; ``except NoWorkerIdError`` catches both (it was
    raised for both before they were split). Example: catch the subclass you
    mean.
    """


class WorkerIdsExhaustedError(NoWorkerIdError):
    """Every worker id is leased by a live process.

    Example: with 10 worker bits, starting the 1,025th concurrent
    ``WorkerLease`` raises it; close leases you no longer need, or use more
    worker bits.
    """


class WorkerIdNotBoundError(NoWorkerIdError):
    """A ``Snowflake`` not bound to a worker id yet, or a lease not started yet.

    Example: ``Snowflake()()`` raises it; bind the generator at startup with
    ``ids.bind(lease)`` after ``lease.start()`` (or ``with``/``async with``).
    """


class WorkerLeaseLostError(SeqKeysError):
    """A worker-id lease expired unrenewed, was closed, or was taken over.

    Another process may now hold the id, so the snowflake generator that uses
    it stops minting. Example: take a new ``WorkerLease`` and a new
    ``Snowflake``.
    """


class WorkerLeaseDatabaseError(SeqKeysError):
    """The database failed while a worker-id lease was claimed, renewed or released.

    The driver's error is the ``__cause__``. Nothing was minted with a lease
    that was not held. Example: a forked child's first id claims a lease of its
    own, and the server refuses the connection ("too many clients"): the call
    raises this, and a later call claims again (after a backoff of up to 30 s).
    """


class ClockSkewError(SeqKeysError):
    """Clocks disagree too much to mint safely with a leased worker id.

    Raised when the previous holder of a worker id minted timestamps that this
    process's clock has not reached within ``WorkerLease(max_wait=...)``, or
    when this host's clock and the database server's differ by more than
    ``WorkerLease(max_skew=...)``. Example: fix the clocks (NTP), or raise the
    bound.
    """


class LeaseTableOutdatedError(SeqKeysError):
    """The worker-lease table predates the ``high_water_ms`` column.

    Example: add it in an Alembic migration with
    ``op.upgrade_worker_lease_table()`` (an operation of the seqkeys Alembic plugin;
    ``alembic revision --autogenerate`` proposes it for a lease table the models
    declare), or drop the table while no process holds a lease (``WorkerLease``
    creates it anew).
    """


class InvalidBitReversalError(SeqKeysError, ValueError):
    """A value that has no 63-bit reversal: negative, 2**63 or more, or not an int.

    Example: ``reverse_bits(-1)`` raises it.
    """


class InvalidShardError(SeqKeysError, ValueError):
    """A shard count or a value to hash that cannot work.

    Example: ``shard_of("a", 0)`` raises it; there must be at least one shard.
    """


class MissingExtraError(SeqKeysError, ImportError):
    """An optional dependency is not installed; the message names the extra.

    Example: ``farm_fingerprint`` without pyfarmhash says to
    ``pip install 'sqlalchemy-seqkeys[farmhash]'``.
    """


class MigrationError(SeqKeysError, ValueError):
    """An Alembic operation that cannot apply: checked before anything is changed.

    Example: ``op.create_sequences_table()`` where a table ``sequences``
    already exists, or ``op.drop_bit_reversed_sequence("x")`` where there is
    no sequence ``x``.
    """


class InvalidTimeRangeError(SeqKeysError, ValueError):
    """A time window that is not one: not datetimes, or ``end`` before ``start``.

    Example: ``uuid7_bounds(end, start)`` with the two swapped raises it.
    """


class UnsupportedServerFunctionError(SeqKeysError):
    """The database has no function for what the statement asks the server to do.

    Raised while compiling (a query, or the DDL of ``create_all``), before
    anything is sent. Example: ``server_default=server_uuid7()`` in a table created
    on SQLite raises it; use ``default=new_uuid7`` there.
    """

    # Not a sqlalchemy CompileError on purpose: the DDL compiler replaces
    # those with a plain CompileError, and users catch SeqKeysError.


class PooledSequenceMismatchError(SeqKeysError):
    """The native sequence behind a ``PooledSequence`` is not the one declared.

    Its ``INCREMENT BY`` differs from ``batch_size`` (altered by hand,
    created by another tool), or it cycles: handing out blocks from it would
    repeat keys another writer takes. Raised before the first block; nothing
    is handed out. Example: a sequence altered to ``INCREMENT BY 7`` under
    ``PooledSequence("order_id", batch_size=50)`` raises it; alter it back (``ALTER
    SEQUENCE order_id INCREMENT BY 50``) or declare ``batch_size=7``.
    """


class UnknownDialectError(SeqKeysError, ValueError):
    """A dialect name that no installed SQLAlchemy dialect answers to.

    Raised where a dialect may be given by name. Example:
    ``new_comb_guid.layout_for("postgress")`` raises it; pass a name such as
    ``"postgresql"`` (or ``engine.dialect``).
    """
