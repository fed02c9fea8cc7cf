"""What a snowflake generator needs from a worker lease, and what the lease needs back.

:mod:`~sqlalchemy_seqkeys.snowflake` mints with a worker id; a lease
(:mod:`~sqlalchemy_seqkeys.workers`) holds one for this process. Neither
module imports the other: both speak these two protocols. See
docs/strategies/snowflake.md ("Leased worker ids").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeGuard, TypeVar

from .errors import ClockSkewError

__all__ = ["Lease", "Minter", "floor_error", "is_lease"]

M = TypeVar("M", bound="Minter")


class Minter(Protocol):
    """The minting state of one worker id in one process, as the lease sees it."""

    #: nanoseconds since the Unix epoch: the clock the ids are minted with
    clock: Callable[[], int]

    def halt(self) -> int:
        """Mint no id of a later tick; return the last Unix ms minted (-1: none)."""

    def relinquished(self) -> bool:
        """True once a forked child's implicit lease was found lost (the next call reclaims)."""


class Lease(Protocol):
    """A worker id held by this process, checked by the generators bound to it."""

    ttl: float
    max_worker_id: int
    max_wait: float
    clock: Callable[[], int]

    @property
    def worker_id(self) -> int:
        """The worker id held; raises if the lease has none yet."""

    @property
    def floor_ms(self) -> int:
        """The previous holder's high-water mark (Unix ms): mint only past it."""

    @property
    def mark_ms(self) -> int:
        """This holder's high-water mark (Unix ms): mint nothing past it."""

    @property
    def reclaimable(self) -> bool:
        """True if a lost lease is replaced by a new claim (a forked child's implicit lease)."""

    @property
    def closed(self) -> bool:
        """True once the lease was closed."""

    def check(self) -> int:
        """Return the worker id, or raise if the lease may be gone."""

    def assert_held(self) -> None:
        """Raise WorkerLeaseLostError (or the not-started error) unless the lease is certain."""

    def extend_mark(self, until_ms: int) -> None:
        """Move the mark past ``until_ms`` now (the minting clock jumped forward)."""

    def bind_minter(self, make: Callable[[M | None], M]) -> M:
        """Under the lease's lock: ``make(current)`` returns the minter to share (stored)."""

    def in_this_process(self, clock: Callable[[], int]) -> Lease:
        """The lease of the current process: after a fork, one of its own (or raise)."""


def is_lease(obj: object) -> TypeGuard[Lease]:
    """True if ``obj`` is a lease (looked up on its type: no property of it runs)."""
    return callable(getattr(type(obj), "bind_minter", None))


def floor_error(worker_id: int, ahead_ms: int, max_wait: float, lease_kind: str) -> ClockSkewError:
    """The clock stayed behind the previous holder's ids for all of ``max_wait``.

    :param worker_id: the worker id the lease holds.
    :param ahead_ms: how far the previous holder's ids reach past this clock.
    :param max_wait: the seconds waited.
    :param lease_kind: the lease's class name, for the fix the message gives.
    """
    return ClockSkewError(
        f"worker id {worker_id} was last used by a process whose ids reach {ahead_ms} ms "
        "past this host's clock (its clock ran ahead, or this one is behind); waited "
        f"max_wait={max_wait:g} s for this clock to pass them. Fix the clocks (NTP), or "
        f"raise {lease_kind}(max_wait=...)"
    )
