"""``python -m benchmarks snowflake``: ids/s of :class:`Snowflake` beside its reference code.

The baseline is a plain transcription of the reference ``nextId`` (the Java
code the TiDB snowflake-id article quotes): a lock, a clock read, the same-millisecond
branch and the shifts. Beside it, ``uuid.uuid4`` and ``new_comb`` for scale,
each from one thread and from four threads sharing one generator::

    $ python -m benchmarks snowflake --seconds 0.5 --rounds 5
"""

from __future__ import annotations

import argparse
import threading
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from itertools import repeat

from benchmarks._table import Table, format_table
from sqlalchemy_seqkeys import CombLayout, Snowflake, SnowflakeLayout, new_comb

__all__ = [
    "HELP",
    "ReferenceSnowflake",
    "add_arguments",
    "breakdown",
    "main",
    "measure",
    "run",
]

#: calls in each loop of :func:`breakdown`
BREAKDOWN_CALLS = 300_000

HELP = "ids/s of Snowflake beside the reference nextId, uuid4 and COMB, from 1 and 4 threads"


class ReferenceSnowflake:
    """The reference ``nextId``, transcribed line by line (the benchmark's baseline)."""

    def __init__(self, datacenter_id: int, worker_id: int) -> None:
        self.twepoch = 1288834974657
        self.worker_id_bits = 5
        self.datacenter_id_bits = 5
        self.sequence_bits = 12
        self.worker_id_shift = self.sequence_bits
        self.datacenter_id_shift = self.sequence_bits + self.worker_id_bits
        self.timestamp_left_shift = (
            self.sequence_bits + self.worker_id_bits + self.datacenter_id_bits
        )
        self.sequence_mask = -1 ^ (-1 << self.sequence_bits)
        self.worker_id = worker_id
        self.datacenter_id = datacenter_id
        self.sequence = 0
        self.last_timestamp = -1
        self.lock = threading.Lock()

    def next_id(self) -> int:
        """The reference algorithm."""
        with self.lock:
            timestamp = self.time_gen()
            if timestamp < self.last_timestamp:
                raise RuntimeError("Clock moved backwards. Refusing to generate id")
            if self.last_timestamp == timestamp:
                self.sequence = (self.sequence + 1) & self.sequence_mask
                if self.sequence == 0:
                    timestamp = self.til_next_millis(self.last_timestamp)
            else:
                self.sequence = 0
            self.last_timestamp = timestamp
            return (
                ((timestamp - self.twepoch) << self.timestamp_left_shift)
                | (self.datacenter_id << self.datacenter_id_shift)
                | (self.worker_id << self.worker_id_shift)
                | self.sequence
            )

    def til_next_millis(self, last_timestamp: int) -> int:
        """Spin to the next millisecond."""
        timestamp = self.time_gen()
        while timestamp <= last_timestamp:
            timestamp = self.time_gen()
        return timestamp

    def time_gen(self) -> int:
        """Milliseconds since the Unix epoch."""
        return int(time.time() * 1000)


def _rate(fn: Callable[[], object], seconds: float, threads: int) -> float:
    counts = [0] * threads
    barrier = threading.Barrier(threads + 1)
    stop = threading.Event()

    def work(index: int) -> None:
        barrier.wait()
        calls = 0
        while not stop.is_set():
            for _ in range(1000):
                fn()
            calls += 1000
        counts[index] = calls

    pool = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for t in pool:
        t.join()
    return sum(counts) / (time.perf_counter() - start)


def measure(seconds: float = 0.3, rounds: int = 5) -> dict[tuple[str, int], float]:
    """Best ids/s of each generator over interleaved rounds, from 1 and 4 threads."""
    candidates: dict[str, Callable[[], object]] = {
        "reference nextId (transcribed)": ReferenceSnowflake(1, 1).next_id,
        "Snowflake": Snowflake(worker_id=33),
        "uuid.uuid4": uuid.uuid4,
        "new_comb(AS_STRING)": partial(new_comb, CombLayout.AS_STRING),
    }
    best: dict[tuple[str, int], float] = {}
    for _ in range(rounds):
        for threads in (1, 4):
            for name, fn in candidates.items():
                rate = _rate(fn, seconds, threads)
                best[name, threads] = max(best.get((name, threads), 0.0), rate)
    return best


def _nothing() -> int:
    return 0


def _ns_per_call(fn: Callable[[], object] | None, calls: int) -> float:
    # ``fn`` None: the loop alone. The loop is the same for every candidate.
    if fn is None:
        start = time.perf_counter_ns()
        for _ in repeat(None, calls):
            pass
        return (time.perf_counter_ns() - start) / calls
    start = time.perf_counter_ns()
    for _ in repeat(None, calls):
        fn()
    return (time.perf_counter_ns() - start) / calls


def breakdown(rounds: int = 5, calls: int = BREAKDOWN_CALLS) -> dict[str, float]:
    """Where one thread's id goes, in nanoseconds (best of interleaved rounds).

    Five loops of ``calls`` calls each, the same loop around each: nothing, a
    Python function that returns 0, ``time.time_ns`` (the generator's clock),
    a ``Snowflake`` of a layout with 65,536 ids a tick (its code alone, never
    at the cap) and one of the default layout (4,096 ids a millisecond, which
    one thread reaches). Their differences give the parts of an id::

        >>> list(breakdown(rounds=1, calls=1_000))
        ['Python call', 'clock read', 'tick check and counter', 'waiting at the cap', 'id']
    """
    uncapped = SnowflakeLayout(worker_bits=6, sequence_bits=16)
    candidates: dict[str, Callable[[], object] | None] = {
        "loop": None,
        "call": _nothing,
        "clock": time.time_ns,
        "uncapped": Snowflake(worker_id=34, layout=uncapped),
        "id": Snowflake(worker_id=34),
    }
    best = dict.fromkeys(candidates, float("inf"))
    for _ in range(rounds):
        for name, fn in candidates.items():
            best[name] = min(best[name], _ns_per_call(fn, calls))
    loop = best["loop"]
    return {
        "Python call": best["call"] - loop,
        "clock read": best["clock"] - loop,
        "tick check and counter": best["uncapped"] - best["call"] - best["clock"] + loop,
        "waiting at the cap": max(best["id"] - best["uncapped"], 0.0),
        "id": best["id"] - loop,
    }


def run(seconds: float = 0.3, rounds: int = 5) -> str:
    """Measure and render the report ``python -m benchmarks snowflake`` prints."""
    rates = measure(seconds, rounds)
    layout = SnowflakeLayout()  # what Snowflake(worker_id=...) mints with
    limit = (1 << layout.sequence_bits) * (timedelta(seconds=1) // layout.time_unit)
    table = Table(["generator", "threads", "ids/s", "vs reference nextId"])
    for (name, threads), rate in rates.items():
        base = rates["reference nextId (transcribed)", threads]
        table.add(name, threads, f"{rate:,.0f}", f"{rate / base:.2f}x")
    lines = [format_table(table), ""]
    for threads in (1, 4):
        ratio = rates["Snowflake", threads] / rates["reference nextId (transcribed)", threads]
        verdict = "met" if ratio >= 1.5 else "MISSED"
        lines.append(
            f"Snowflake from {threads} thread(s): {ratio:.2f}x the reference "
            f"(target >= 1.50x: {verdict}); the layout's limit is {limit:,} ids/s per worker"
        )
    lines.append(f"best of {rounds} interleaved rounds of {seconds}s each")
    rate = rates["Snowflake", 1]
    verdict = "met" if rate >= 2_500_000 else "MISSED"
    lines.append(
        f"Snowflake from 1 thread: {rate:,.0f} ids/s (target >= 2,500,000: {verdict}), "
        f"{rate / limit:.0%} of the layout's limit"
    )
    parts = breakdown(rounds)
    whole = parts["id"]
    lines += [
        "",
        f"Where one thread's id goes (best of {rounds} rounds of {BREAKDOWN_CALLS:,} calls):",
        "",
    ]
    parts_table = Table(["part", "ns", "share"])
    for name, ns in parts.items():
        if name != "id":
            parts_table.add(name, f"{ns:.0f}", f"{ns / whole:.0%}")
    parts_table.add("an id (default layout), without the loop", f"{whole:.0f}", "100%")
    lines.append(format_table(parts_table))
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``python -m benchmarks snowflake``."""
    parser.add_argument("--seconds", type=float, default=0.3, help="length of one timed round")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds; best counts")


def main(args: argparse.Namespace) -> int:
    """Measure and print the table."""
    print(run(seconds=args.seconds, rounds=args.rounds))
    return 0
