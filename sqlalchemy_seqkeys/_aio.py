"""Waiting without blocking an event loop, from code that SQLAlchemy runs in its greenlet.

(``await_`` and ``in_greenlet`` come from :mod:`sqlalchemy_seqkeys._compat`:
SQLAlchemy's names for them differ between 2.0 and 2.1.)

Under ``AsyncSession`` a column default (a :class:`~sqlalchemy_seqkeys.Snowflake`)
runs in SQLAlchemy's greenlet on the loop's thread: a ``time.sleep`` there
stops every task of the loop, while ``await_(asyncio.sleep(...))`` hands the
loop back for as long as the wait lasts. Imported lazily by the pure modules
(on their rare waiting paths only), so they stay free of SQLAlchemy. Design: docs/architecture.md.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, TypeVar

from ._compat import await_, in_greenlet

if TYPE_CHECKING:  # asyncio itself only where a loop is asked about
    import asyncio

__all__ = ["await_", "in_greenlet", "on_loop", "pause"]

T = TypeVar("T")


def on_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop running in this thread, if any."""
    import asyncio

    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def pause(seconds: float) -> None:
    """Sleep; inside SQLAlchemy's greenlet on a running loop, by awaiting (the loop runs on).

    Called straight from a coroutine (no greenlet), nothing can be awaited:
    it sleeps, and the loop waits with it.
    """
    if in_greenlet() and on_loop() is not None:
        import asyncio

        await_(asyncio.sleep(seconds))
    else:
        time.sleep(seconds)
