"""Snowflake layouts: where each field of a snowflake id sits, and how long it lasts.

A :class:`SnowflakeLayout` says how many bits the timestamp, the worker id and
the sequence take, in which order, from which epoch and in which time unit; it
composes and splits ids, and says when it runs out (``exhausts_at``) and how fast
a worker mints (``ids_per_second``). Presets give the layouts in production
(``twitter``, ``sonyflake``, ``discord``, ``instagram``, ``mastodon``) and one
whose ids stay exact in JavaScript (``js_safe``).

User guide: docs/strategies/snowflake.md (Layouts) and docs/ids-in-apis.md.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import NamedTuple

from ._layout_presets import (
    DEFAULT_EPOCH,
    DISCORD_EPOCH,
    INSTAGRAM_EPOCH,
    JS_SAFE_EPOCH,
    SONYFLAKE_EPOCH,
    UNIX_EPOCH,
    UTC,
    LayoutPresets,
)
from ._validate import check_aware, check_flag, check_int
from .errors import InvalidSnowflakeError, ShortLifeWarning, TimestampOutOfRangeError

__all__ = [
    "DEFAULT_EPOCH",
    "DISCORD_EPOCH",
    "INSTAGRAM_EPOCH",
    "JS_SAFE_EPOCH",
    "SONYFLAKE_EPOCH",
    "DecodedSnowflake",
    "SnowflakeLayout",
]

_FIELDS = ("timestamp", "worker", "sequence")
_TEN_YEARS = timedelta(days=3652)
_NAIVE_UNIX_EPOCH = UNIX_EPOCH.replace(tzinfo=None)


def since_unix_epoch(instant: datetime) -> timedelta:
    """How long after 1970-01-01T00:00Z the aware ``instant`` is: its wall clock less its offset.

    Measure instants with it before comparing or subtracting them: Python
    compares and subtracts two aware datetimes that share a tzinfo object (two
    ``ZoneInfo("Europe/Berlin")`` instants, cached as one) by their wall clocks,
    ignoring their UTC offsets and ``fold``, which is off by the daylight-saving
    shift across seasons and in the autumn overlap. The offset reads ``fold``. It
    is ``instant.astimezone(timezone.utc) - UNIX_EPOCH``, without the overflow of
    ``astimezone`` for an instant whose UTC time is before the year 1 or after 9999.
    """
    offset = instant.utcoffset()
    if offset is None:
        raise ValueError(f"{instant!r} has no timezone")
    return instant.replace(tzinfo=None) - _NAIVE_UNIX_EPOCH - offset


def _outside_stacklevel() -> int:
    # The stacklevel for warnings.warn that points at the first caller outside
    # this package (a preset and the dataclass __init__ sit in between).
    frame = sys._getframe(2)  # the caller of the function that warns
    level = 2
    while frame.f_back is not None and str(frame.f_globals.get("__name__", "")).startswith(
        "sqlalchemy_seqkeys"
    ):
        frame = frame.f_back
        level += 1
    return level


# SnowflakeLayout.__post_init__'s checks, in the order it runs them: sizes, order,
# worker parts, time, life.


def _check_sizes(layout: SnowflakeLayout) -> None:
    for name in ("timestamp_bits", "worker_bits", "sequence_bits"):
        check_int(getattr(layout, name), name, InvalidSnowflakeError, min=0)
    if layout.timestamp_bits < 1:
        raise InvalidSnowflakeError("timestamp_bits must be at least 1")
    check_flag(layout.unsigned, "unsigned", InvalidSnowflakeError)
    total = layout.timestamp_bits + layout.worker_bits + layout.sequence_bits
    if total > 64:
        raise InvalidSnowflakeError(
            f"the layout needs {total} bits, but a snowflake id has 64 at most (63 for "
            "a signed BIGINT); take bits from one of the fields"
        )


def _utc_epoch(epoch: object) -> datetime:
    # The epoch as its UTC instant, so that layouts compare and hash by instant:
    # Python compares two datetimes sharing a tzinfo object by wall clock, ignoring
    # fold, which made epochs an hour apart in an autumn overlap equal.
    aware = check_aware(epoch, "epoch", InvalidSnowflakeError)
    try:
        return UNIX_EPOCH + since_unix_epoch(aware)
    except OverflowError:
        raise InvalidSnowflakeError(
            f"epoch {aware.isoformat()} is outside the years 1 to 9999 in UTC, which a "
            "datetime cannot hold; use a later (or earlier) epoch"
        ) from None


def _check_time(layout: SnowflakeLayout) -> None:
    check_flag(layout.allow_short_life, "allow_short_life", InvalidSnowflakeError)
    if not isinstance(layout.time_unit, timedelta) or layout.time_unit <= timedelta(0):
        raise InvalidSnowflakeError(
            f"time_unit must be a positive timedelta, not {layout.time_unit!r}"
        )
    if layout.time_unit % timedelta(microseconds=1):
        raise InvalidSnowflakeError("time_unit must be a whole number of microseconds")
    try:
        layout.exhausts_at  # noqa: B018 - a datetime must hold it
    except OverflowError:
        raise InvalidSnowflakeError(
            f"this layout's timestamp field ({layout.timestamp_bits} bits of "
            f"{layout.time_unit}) runs past the year 9999, which a datetime cannot hold; "
            "use fewer timestamp bits (give them to the worker or sequence fields)"
        ) from None


def _checked_order(order: object) -> tuple[str, ...]:
    wanted = "a permutation of ('timestamp', 'worker', 'sequence') starting with 'timestamp'"
    if isinstance(order, str) or not isinstance(order, Sequence):
        raise InvalidSnowflakeError(f"order must be {wanted}, not {order!r}")
    checked = tuple(order)
    if sorted(map(str, checked)) != sorted(_FIELDS) or len(checked) != 3:
        raise InvalidSnowflakeError(f"order must be {wanted}, not {order!r}")
    if checked[0] != "timestamp":
        raise InvalidSnowflakeError(
            f"order must start with 'timestamp', not {checked[0]!r}: ids must sort by "
            "time, and a 64-bit layout in a signed BIGINT gives up a timestamp bit"
        )
    return checked


def _checked_parts(parts: object, worker_bits: int) -> tuple[tuple[str, int], ...]:
    hint = "pairs of (name, bits), e.g. (('worker', 5), ('process', 5))"
    if isinstance(parts, str) or not isinstance(parts, Sequence):
        raise InvalidSnowflakeError(f"worker_parts must be {hint}, not {parts!r}")
    checked: list[tuple[str, int]] = []
    for part in parts:
        if isinstance(part, str) or not isinstance(part, Sequence) or len(part) != 2:
            raise InvalidSnowflakeError(f"worker_parts must be {hint}, not {parts!r}")
        name, bits = part
        if not isinstance(name, str) or not name.isidentifier():
            raise InvalidSnowflakeError(f"a worker part's name must be an identifier, not {name!r}")
        if name in ("ticks", "sequence", "worker_id") or name in dict(checked):
            raise InvalidSnowflakeError(
                f"worker part {name!r} is used twice or names another field; rename it"
            )
        checked.append((name, check_int(bits, f"bits of {name!r}", InvalidSnowflakeError, min=1)))
    total = sum(bits for _, bits in checked)
    if checked and total != worker_bits:
        raise InvalidSnowflakeError(
            f"worker_parts take {total} bits, but the worker field has {worker_bits}; "
            "they must fill it"
        )
    return tuple(checked)


def _check_life(layout: SnowflakeLayout) -> None:
    now = datetime.now(UTC)
    if layout.exhausts_at <= now:
        raise InvalidSnowflakeError(
            f"this layout's timestamp field ran out at {layout.exhausts_at.isoformat()}: "
            "it has no tick left to mint with. Add timestamp bits, use a later epoch "
            "or a longer time_unit"
        )
    left = layout.exhausts_at - now
    if left < _TEN_YEARS and not layout.allow_short_life:
        warnings.warn(
            f"this layout's timestamp field runs out at {layout.exhausts_at.isoformat()}, "
            f"{left.days} days from now; add timestamp bits, use a later epoch or a "
            "longer time_unit, or pass allow_short_life=True",
            ShortLifeWarning,
            stacklevel=_outside_stacklevel(),
        )


def _worker_of(worker_parts: tuple[tuple[str, int], ...], parts: dict[str, int]) -> int:
    # SnowflakeLayout.worker_of: the named parts, each in its bits, from the top.
    names = [name for name, _ in worker_parts]
    if not names:
        raise InvalidSnowflakeError(
            "this layout names no worker_parts; pass its worker id as an int"
        )
    if sorted(parts) != sorted(names):
        raise InvalidSnowflakeError(f"worker_of() takes the parts {names}, not {sorted(parts)}")
    worker_id = 0
    for name, bits in worker_parts:
        value = check_int(parts[name], name, InvalidSnowflakeError, min=0, max=(1 << bits) - 1)
        worker_id = (worker_id << bits) | value
    return worker_id


@dataclass(frozen=True)
class SnowflakeLayout(LayoutPresets):
    """Where the fields of a snowflake id sit; validated on construction.

    The timestamp is the top field (ids sort by time); ``order`` says whether
    the worker or the sequence comes next. The fields take at most 63 bits, so
    that every id is a non-negative signed ``BIGINT``, or 64: such a layout
    (Discord's, Instagram's, Mastodon's) keeps its ids below 2**63 by using one
    timestamp bit less, which shortens its life (see :attr:`exhausts_at`),
    unless ``unsigned=True`` says that its key column holds 64-bit unsigned
    values: a :class:`~sqlalchemy_seqkeys.UnsignedBigInteger` column
    (``NUMERIC(20, 0)``, MySQL's ``BIGINT UNSIGNED``, SQLite's ``BIGINT``), which
    reads ``int`` and compares as itself; a key column with a plain
    ``BigInteger`` is then refused.

    A layout whose timestamp runs out less than ten years from now warns
    (:class:`~sqlalchemy_seqkeys.ShortLifeWarning`) unless
    ``allow_short_life=True``; one that has already run out raises
    :class:`~sqlalchemy_seqkeys.InvalidSnowflakeError`.

    :param timestamp_bits: bits of the timestamp, in ``time_unit`` ticks since ``epoch``.
    :param worker_bits: bits of the worker id (0: one generator at a time).
    :param sequence_bits: bits of the per-tick sequence.
    :param epoch: the instant of tick 0 (timezone-aware, in any zone); the
        layout keeps it in UTC, so that two layouts are equal when their epochs
        are the same instant, whatever the zone or ``fold`` they were given in.
    :param time_unit: the length of one tick (whole microseconds).
    :param allow_short_life: do not warn about a timestamp that runs out within ten years.
    :param order: the fields from the top: ``("timestamp", "worker", "sequence")``
        (Twitter, Discord, Instagram) or ``("timestamp", "sequence", "worker")``
        (Sonyflake).
    :param worker_parts: names and widths of the parts of the worker field,
        from the top (Discord's ``(("worker", 5), ("process", 5))``); they must
        fill it. Used by :meth:`parts`, :meth:`worker_of` and :meth:`split_worker`.
    :param unsigned: ids may use all 64 bits (needs a column that holds them:
        :class:`~sqlalchemy_seqkeys.UnsignedBigInteger`).

    Example::

        >>> layout = SnowflakeLayout()
        >>> layout.exhausts_at.year, layout.ids_per_second
        (2080, 4096000.0)
        >>> SnowflakeLayout.sonyflake().exhausts_at.year
        2188
    """

    timestamp_bits: int = 41
    worker_bits: int = 10
    sequence_bits: int = 12
    epoch: datetime = DEFAULT_EPOCH
    time_unit: timedelta = timedelta(milliseconds=1)
    allow_short_life: bool = field(default=False, compare=False)
    order: tuple[str, ...] = _FIELDS
    worker_parts: tuple[tuple[str, int], ...] = field(default=(), compare=False)
    unsigned: bool = False

    def __post_init__(self) -> None:
        _check_sizes(self)
        object.__setattr__(self, "order", _checked_order(self.order))
        object.__setattr__(
            self, "worker_parts", _checked_parts(self.worker_parts, self.worker_bits)
        )
        object.__setattr__(self, "epoch", _utc_epoch(self.epoch))
        _check_time(self)
        _check_life(self)

    def check_life(self) -> None:
        """Check the layout's life now: raise if it ran out, warn if it runs out within ten years.

        Run when the layout is created; a generator runs it again when it is
        created with the layout (a layout made long ago may have aged).

        Example::

            >>> SnowflakeLayout().check_life()  # lasts until 2080: nothing to say
        """
        _check_life(self)

    # -- sizes ------------------------------------------------------------------------

    @property
    def total_bits(self) -> int:
        """The bits the three fields take (at most 64)."""
        return self.timestamp_bits + self.worker_bits + self.sequence_bits

    @property
    def tick_limit(self) -> int:
        """The first tick the layout cannot mint: ``2**timestamp_bits``, or half that when a
        64-bit layout keeps its ids below 2**63."""
        if self.unsigned or self.total_bits < 64:
            return 1 << self.timestamp_bits
        return 1 << (self.timestamp_bits - 1)

    @property
    def max_id(self) -> int:
        """The largest id the layout can hold (2**63 - 1 at most unless ``unsigned``)."""
        return (self.tick_limit << self.timestamp_shift) - 1

    @property
    def exhausts_at(self) -> datetime:
        """The first instant the timestamp field cannot hold: no id is minted from then on (UTC)."""
        # epoch + lifetime in UTC: in the epoch's own zone, adding to it would add to its
        # wall clock, off by a daylight-saving shift between the two seasons
        return UNIX_EPOCH + (since_unix_epoch(self.epoch) + self.lifetime)

    @property
    def exhausted_at(self) -> datetime:
        """The same as :attr:`exhausts_at` (its former name)."""
        return self.exhausts_at

    @property
    def lifetime(self) -> timedelta:
        """How long the timestamp lasts from the epoch (``exhausts_at - epoch``)."""
        return self.time_unit * self.tick_limit

    @property
    def ids_per_second(self) -> float:
        """The most ids one worker can mint per second (``2**sequence_bits`` per tick)."""
        return (1 << self.sequence_bits) / self.time_unit.total_seconds()

    @property
    def max_worker_id(self) -> int:
        """The largest worker id the layout holds."""
        return (1 << self.worker_bits) - 1

    @property
    def max_sequence(self) -> int:
        """The largest sequence value of one tick."""
        return (1 << self.sequence_bits) - 1

    @property
    def timestamp_shift(self) -> int:
        """Where the timestamp field starts: an id holds ``ticks << timestamp_shift``."""
        return self.worker_bits + self.sequence_bits

    @property
    def worker_shift(self) -> int:
        """Where the worker field starts: an id holds ``worker_id << worker_shift``."""
        return self.sequence_bits if self.order[1] == "worker" else 0

    @property
    def sequence_shift(self) -> int:
        """Where the sequence field starts: an id holds ``sequence << sequence_shift``."""
        return self.worker_bits if self.order[1] == "sequence" else 0

    # -- ids ----------------------------------------------------------------------------

    def compose(self, ticks: int, worker_id: int, sequence: int) -> int:
        """Pack the three fields into an id (no transform).

        :param ticks: ticks since the epoch, below :attr:`tick_limit`.
        :param worker_id: from 0 to :attr:`max_worker_id`.
        :param sequence: from 0 to :attr:`max_sequence`.

        Example::

            >>> SnowflakeLayout().compose(1, 1, 1)
            4198401
        """
        check_int(ticks, "ticks", InvalidSnowflakeError, min=0, max=self.tick_limit - 1)
        check_int(worker_id, "worker_id", InvalidSnowflakeError, min=0, max=self.max_worker_id)
        check_int(sequence, "sequence", InvalidSnowflakeError, min=0, max=self.max_sequence)
        return (
            (ticks << self.timestamp_shift)
            | (worker_id << self.worker_shift)
            | (sequence << self.sequence_shift)
        )

    def decompose(self, value: int) -> tuple[int, int, int]:
        """Split an id (no transform) into ``(ticks, worker_id, sequence)``.

        :param value: an id of this layout, from 0 to :attr:`max_id`.

        Example::

            >>> SnowflakeLayout().decompose(4198401)
            (1, 1, 1)
        """
        check_int(value, "value", InvalidSnowflakeError, min=0, max=self.max_id)
        return (
            value >> self.timestamp_shift,
            (value >> self.worker_shift) & self.max_worker_id,
            (value >> self.sequence_shift) & self.max_sequence,
        )

    def decode(self, value: int) -> DecodedSnowflake:
        """Split an id (no transform) into its instant, worker id and sequence.

        :param value: an id of this layout, from 0 to :attr:`max_id`.

        Example (the id of Discord's developer documentation)::

            >>> SnowflakeLayout.discord().decode(175928847299117063)
            DecodedSnowflake(timestamp=datetime.datetime(2016, 4, 30, 11, 18, 25, 796000, tzinfo=datetime.timezone.utc), worker_id=32, sequence=7)
        """  # noqa: E501
        ticks, worker_id, sequence = self.decompose(value)
        return DecodedSnowflake(self.instant_of(ticks), worker_id, sequence)

    def parts(self, value: int) -> dict[str, int]:
        """The fields of an id as integers, named as the layout's reference names them.

        ``ticks`` (since the epoch), the :attr:`worker_parts` (or ``worker_id``
        when it has none and the worker field is not empty), and ``sequence``.

        :param value: an id of this layout, from 0 to :attr:`max_id`.

        Example::

            >>> SnowflakeLayout.discord().parts(175928847299117063)
            {'ticks': 41944705796, 'worker': 1, 'process': 0, 'sequence': 7}
        """
        ticks, worker_id, sequence = self.decompose(value)
        found: dict[str, int] = {"ticks": ticks}
        if self.worker_parts:
            found.update(self.split_worker(worker_id))
        elif self.worker_bits:
            found["worker_id"] = worker_id
        found["sequence"] = sequence
        return found

    def split_worker(self, worker_id: int) -> dict[str, int]:
        """The :attr:`worker_parts` of a worker id, from the top.

        :param worker_id: from 0 to :attr:`max_worker_id`.

        Example::

            >>> SnowflakeLayout.discord().split_worker(33)
            {'worker': 1, 'process': 1}
        """
        check_int(worker_id, "worker_id", InvalidSnowflakeError, min=0, max=self.max_worker_id)
        found: dict[str, int] = {}
        shift = self.worker_bits
        for name, bits in self.worker_parts:
            shift -= bits
            found[name] = (worker_id >> shift) & ((1 << bits) - 1)
        return found

    def worker_of(self, **parts: int) -> int:
        """Compose a worker id from its named :attr:`worker_parts` (every part, by name).

        :param parts: each part's value, e.g. ``worker=1, process=0`` for Discord.

        Example::

            >>> SnowflakeLayout.discord().worker_of(worker=1, process=1)
            33
        """
        return _worker_of(self.worker_parts, parts)

    def worker_from(self, datacenter: int, machine: int, *, datacenter_bits: int = 5) -> int:
        """Compose a worker id from a datacenter id and a machine id (5 + 5 bits by default).

        :param datacenter: the datacenter id, in the top ``datacenter_bits``.
        :param machine: the machine id, in the rest of the worker field.
        :param datacenter_bits: the width of the datacenter id.

        Example::

            >>> SnowflakeLayout().worker_from(datacenter=3, machine=17)
            113
        """
        check_int(
            datacenter_bits, "datacenter_bits", InvalidSnowflakeError, min=0, max=self.worker_bits
        )
        machine_bits = self.worker_bits - datacenter_bits
        check_int(
            datacenter, "datacenter", InvalidSnowflakeError, min=0, max=(1 << datacenter_bits) - 1
        )
        check_int(machine, "machine", InvalidSnowflakeError, min=0, max=(1 << machine_bits) - 1)
        return (datacenter << machine_bits) | machine

    def ticks_at(self, instant: datetime) -> int:
        """Ticks since the epoch at ``instant`` (aware), rounded down.

        An instant before the epoch or from :attr:`exhausts_at` on has no tick:
        it raises :class:`~sqlalchemy_seqkeys.TimestampOutOfRangeError`.

        :param instant: a timezone-aware datetime, in any zone (the instant counts, not
          its wall clock).
        """
        check_aware(instant, "instant", InvalidSnowflakeError)
        since_epoch = since_unix_epoch(instant) - since_unix_epoch(self.epoch)
        if not timedelta(0) <= since_epoch < self.lifetime:
            raise TimestampOutOfRangeError(
                f"{instant.isoformat()} is outside this layout's time range, from its epoch "
                f"{self.epoch.isoformat()} to {self.exhausts_at.isoformat()}; no snowflake "
                "id of this layout has it"
            )
        return since_epoch // self.time_unit

    def instant_of(self, ticks: int) -> datetime:
        """The UTC instant at which tick ``ticks`` begins.

        :param ticks: ticks since the epoch, below :attr:`tick_limit`.
        """
        check_int(ticks, "ticks", InvalidSnowflakeError, min=0, max=self.tick_limit - 1)
        return UNIX_EPOCH + (since_unix_epoch(self.epoch) + self.time_unit * ticks)


class DecodedSnowflake(NamedTuple):
    """The fields of a snowflake id: :meth:`Snowflake.decode` and
    :meth:`SnowflakeLayout.decode` return one (:meth:`SnowflakeLayout.parts` names
    the parts of the worker id as the layout's reference does).

    Example::

        >>> from sqlalchemy_seqkeys import Snowflake
        >>> s = Snowflake(worker_id=3)
        >>> decoded = s.decode(s())
        >>> decoded.worker_id, decoded.sequence
        (3, 0)
    """

    timestamp: datetime
    worker_id: int
    sequence: int
