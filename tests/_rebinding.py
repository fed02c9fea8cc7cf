"""Threads that mint while a Snowflake is rebound under them: the stress loop the unit
tests of rebinding share (fixed worker ids in tests/unit/test_snowflake.py, a fixed id and
the lease holding it in tests/unit/test_snowflake_rebind.py)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterable

from sqlalchemy_seqkeys import Snowflake, WorkerLease


def mint_while_rebinding(
    ids: Snowflake, bindings: Iterable[int | WorkerLease], *, threads: int, pause_s: float
) -> tuple[list[int], list[BaseException]]:
    """``threads`` threads call ``ids()`` without pause while ``ids`` is bound to each of
    ``bindings`` in turn, ``pause_s`` apart: every id they minted, and what any of them
    raised (a thread stops at its first exception)."""
    stop = threading.Event()
    errors: list[BaseException] = []
    results: list[list[int]] = [[] for _ in range(threads)]

    def mint(out: list[int]) -> None:
        try:
            while not stop.is_set():
                out.append(ids())
        except BaseException as exc:  # the caller reports it
            errors.append(exc)

    minters = [threading.Thread(target=mint, args=(out,)) for out in results]
    for t in minters:
        t.start()
    # the GIL passes every 0.5 ms (not 5): the rebinding thread gets its turns among the minters
    switch = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    try:
        for target in bindings:
            ids.bind(target)
            time.sleep(pause_s)  # let the threads mint under each binding, even on a busy machine
    finally:
        sys.setswitchinterval(switch)
        stop.set()
        for t in minters:
            t.join()
    return [v for out in results for v in out], errors
