"""The named presets of :class:`~sqlalchemy_seqkeys.SnowflakeLayout`, and their epochs.

:class:`SnowflakeLayout` inherits the presets (``SnowflakeLayout.discord()`` and the
others) from :class:`LayoutPresets`; ``sqlalchemy_seqkeys.layout`` re-exports the
epochs. See the "Layouts" section of ``docs/strategies/snowflake.md``.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, cast

from ._validate import check_int
from .errors import InvalidSnowflakeError

if TYPE_CHECKING:
    from .layout import SnowflakeLayout

UTC = timezone.utc
UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: Twitter's snowflake epoch, 1288834974657 ms after the Unix epoch.
DEFAULT_EPOCH = datetime(2010, 11, 4, 1, 42, 54, 657000, tzinfo=UTC)
#: Sonyflake's default start time (2014-09-01 UTC; sonyflake v2 defaults to 2025-01-01).
SONYFLAKE_EPOCH = datetime(2014, 9, 1, tzinfo=UTC)
#: Discord's epoch, the first millisecond of 2015 (1420070400000 ms after the Unix epoch).
DISCORD_EPOCH = datetime(2015, 1, 1, tzinfo=UTC)
#: Instagram's custom epoch, ``our_epoch bigint := 1314220021721`` in their ``next_id()``.
INSTAGRAM_EPOCH = UNIX_EPOCH + timedelta(milliseconds=1314220021721)
#: The epoch of :meth:`SnowflakeLayout.js_safe`: 2025-01-01 UTC.
JS_SAFE_EPOCH = datetime(2025, 1, 1, tzinfo=UTC)


class LayoutPresets:
    """The base of :class:`SnowflakeLayout`: the layouts in production, as its classmethods."""

    if TYPE_CHECKING:  # the dataclass SnowflakeLayout writes the real one

        def __init__(
            self,
            timestamp_bits: int = ...,
            worker_bits: int = ...,
            sequence_bits: int = ...,
            epoch: datetime = ...,
            time_unit: timedelta = ...,
            allow_short_life: bool = ...,
            order: tuple[str, ...] = ...,
            worker_parts: tuple[tuple[str, int], ...] = ...,
            unsigned: bool = ...,
        ) -> None: ...

    @classmethod
    def twitter(cls, *, epoch: datetime = DEFAULT_EPOCH) -> SnowflakeLayout:
        """Twitter's snowflake (the default layout): 41 bits of ms, 5 + 5 bits of datacenter
        and worker, 12 of sequence; until 2080-07-10 from Twitter's epoch.

        :param epoch: tick 0 (Twitter's: 2010-11-04T01:42:54.657Z).

        Example::

            >>> from sqlalchemy_seqkeys import SnowflakeLayout
            >>> SnowflakeLayout.twitter() == SnowflakeLayout()
            True
        """
        return cast(
            "SnowflakeLayout", cls(epoch=epoch, worker_parts=(("datacenter", 5), ("worker", 5)))
        )

    @classmethod
    def sonyflake(
        cls,
        *,
        epoch: datetime = SONYFLAKE_EPOCH,
        sequence_bits: int = 8,
        machine_bits: int = 16,
        time_unit: timedelta = timedelta(milliseconds=10),
    ) -> SnowflakeLayout:
        """Sony's Sonyflake: ``63 - sequence_bits - machine_bits`` bits of 10 ms (39 by
        default), then the sequence (8), then the machine id (16), as its ``toID`` packs them.

        The worker id is the machine id. 174 years from ``epoch`` by default;
        25,600 ids per second per machine.

        :param epoch: Sonyflake's ``StartTime`` (v1's default, 2014-09-01 UTC;
            v2's default is 2025-01-01 UTC).
        :param sequence_bits: ``BitsSequence``.
        :param machine_bits: ``BitsMachineID``.
        :param time_unit: ``TimeUnit``.

        Example::

            >>> from sqlalchemy_seqkeys import SnowflakeLayout
            >>> layout = SnowflakeLayout.sonyflake()
            >>> layout.order, layout.ids_per_second
            (('timestamp', 'sequence', 'worker'), 25600.0)
        """
        check_int(sequence_bits, "sequence_bits", InvalidSnowflakeError, min=0, max=30)
        check_int(machine_bits, "machine_bits", InvalidSnowflakeError, min=0, max=30)
        return cast(
            "SnowflakeLayout",
            cls(
                timestamp_bits=63 - sequence_bits - machine_bits,
                worker_bits=machine_bits,
                sequence_bits=sequence_bits,
                epoch=epoch,
                time_unit=time_unit,
                order=("timestamp", "sequence", "worker"),
                worker_parts=(("machine", machine_bits),) if machine_bits else (),
            ),
        )

    @classmethod
    def discord(cls, *, unsigned: bool = False) -> SnowflakeLayout:
        """Discord's snowflake: 42 bits of ms since 2015-01-01, a 5-bit worker and a 5-bit
        process (the worker field), a 12-bit increment (the sequence).

        64 bits: in a signed ``BIGINT`` its ids stay below 2**63 until
        2084-09-06; ``unsigned=True`` (a column that holds 64-bit unsigned
        values) lasts until 2154-05-15, as Discord's own ids do.

        :param unsigned: use the 42nd timestamp bit (ids above 2**63 - 1).

        Example::

            >>> from sqlalchemy_seqkeys import SnowflakeLayout
            >>> SnowflakeLayout.discord().exhausts_at.date()
            datetime.date(2084, 9, 6)
        """
        return cast(
            "SnowflakeLayout",
            cls(
                timestamp_bits=42,
                worker_bits=10,
                sequence_bits=12,
                epoch=DISCORD_EPOCH,
                worker_parts=(("worker", 5), ("process", 5)),
                unsigned=unsigned,
            ),
        )

    @classmethod
    def instagram(
        cls, *, epoch: datetime = INSTAGRAM_EPOCH, unsigned: bool = False
    ) -> SnowflakeLayout:
        """Instagram's ids: 41 bits of ms since their epoch, a 13-bit shard id (the worker
        field), a 10-bit sequence, as their PL/pgSQL ``next_id()`` packs them.

        64 bits: in a signed ``BIGINT`` (Instagram's column) ids stay below
        2**63 for 2**40 ms, until 2046-06 from Instagram's epoch; ``unsigned=True``
        doubles that.

        :param epoch: tick 0 (Instagram's ``our_epoch``, 1314220021721 ms, 2011-08-24).
        :param unsigned: use the 41st timestamp bit (ids above 2**63 - 1).

        Example::

            >>> from sqlalchemy_seqkeys import SnowflakeLayout
            >>> SnowflakeLayout.instagram().parts(2384288897814875714)["ticks"]
            284229385592
        """
        return cast(
            "SnowflakeLayout",
            cls(
                timestamp_bits=41,
                worker_bits=13,
                sequence_bits=10,
                epoch=epoch,
                worker_parts=(("shard", 13),),
                unsigned=unsigned,
            ),
        )

    @classmethod
    def mastodon(cls) -> SnowflakeLayout:
        """Mastodon's ids: 48 bits of ms since the Unix epoch, 16 bits of sequence, no worker.

        Mastodon's ``timestamp_id()`` makes the low 16 bits the first two bytes
        of an MD5 of the table name, a secret salt and the time, plus the
        table's ``nextval``, modulo 2**16; a generator with this layout counts
        them from 0 in each millisecond instead. Both are ids Mastodon decodes
        (``id >> 16`` is the millisecond). With no worker field, one generator
        mints at a time: worker id 0, and never beside ``timestamp_id()`` on
        the same table. Ids stay below 2**63 until the year 6429.

        Example::

            >>> from sqlalchemy_seqkeys import SnowflakeLayout
            >>> SnowflakeLayout.mastodon().decode(110_000_000_000 << 16).timestamp.year
            1973
        """
        return cast(
            "SnowflakeLayout",
            cls(timestamp_bits=48, worker_bits=0, sequence_bits=16, epoch=UNIX_EPOCH),
        )

    @classmethod
    def js_safe(cls, *, epoch: datetime = JS_SAFE_EPOCH) -> SnowflakeLayout:
        """53 bits, so every id is exact as a JavaScript number (at most 2**53 - 1).

        38 bits of 10 ms (87 years: 2025-01-01 to 2112-02-09 by default),
        8 bits of worker (256 workers: ``WorkerLease(max_worker_id=255)``),
        7 bits of sequence (12,800 ids per second per worker).

        :param epoch: tick 0 (2025-01-01 UTC by default).

        Example::

            >>> from sqlalchemy_seqkeys import SnowflakeLayout
            >>> layout = SnowflakeLayout.js_safe()
            >>> layout.max_id == 2**53 - 1, layout.exhausts_at.year, layout.ids_per_second
            (True, 2112, 12800.0)
        """
        return cast(
            "SnowflakeLayout",
            cls(
                timestamp_bits=38,
                worker_bits=8,
                sequence_bits=7,
                epoch=epoch,
                time_unit=timedelta(milliseconds=10),
            ),
        )
