"""LoopTicker: proves an event loop was never blocked while code ran on it.

A task wakes every ``period`` seconds and records how late each wake-up was.
A blocking call on the loop's thread (``time.sleep``, a thread's ``join``, a
sync driver's I/O) delays the next wake-up by about the call's length, so the
worst lateness bounds the longest time the loop stood still::

    async with LoopTicker() as ticker:
        await asyncio.gather(*(insert(i) for i in range(50)))
    assert ticker.max_late < BLOCKED_S, ticker   # a gross bound: noise passes, blocking fails

The garbage collector is paused while the ticker runs: a full collection of a
test process's heap can stall the loop for tens of milliseconds, and that is
not what is measured.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from types import TracebackType

#: A gross bound on how late the ticker may wake. The blocking faults the tests
#: stage (a lock or server wait on the loop's thread) last a second or more; a
#: process paused by the OS on a loaded two-core CI machine (two test workers
#: beside five servers) can stand still for a tenth of a second without any
#: blocking call, so the bound sits well above that and well below the faults.
BLOCKED_S = 0.25


class LoopTicker:
    """An asyncio task that wakes every ``period`` s and records its worst lateness."""

    def __init__(self, period: float = 0.005) -> None:
        self.period = period
        self.max_late = 0.0
        self.ticks = 0
        self._task: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        return f"LoopTicker(ticks={self.ticks}, max_late={self.max_late * 1000:.1f} ms)"

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        due = loop.time() + self.period
        while True:
            await asyncio.sleep(max(0.0, due - loop.time()))
            now = loop.time()
            self.max_late = max(self.max_late, now - due)
            self.ticks += 1
            due = now + self.period

    async def __aenter__(self) -> LoopTicker:
        gc.collect()
        gc.disable()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="loop-ticker")
        await asyncio.sleep(0)  # let it take its first deadline
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._task is not None
        self._task.cancel()
        try:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        finally:
            gc.enable()
