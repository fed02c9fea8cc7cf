"""``python -m benchmarks generate``: how fast each key is minted, beside ``uuid.uuid4``.

The COMB GUID article measured its .NET COMB generator at 20x slower than a
random GUID (2,800 ms against 140 ms per million), most of it the crypto
generator. Here every candidate is timed in rounds that interleave with the
others, and the best round of each is compared with the best round of
``uuid.uuid4``::

    $ python -m benchmarks generate --seconds 0.5 --rounds 5
"""

from __future__ import annotations

import argparse
import itertools
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from benchmarks._table import Table, format_markdown, format_table, write_plot
from sqlalchemy_seqkeys import (
    CombLayout,
    Snowflake,
    new_comb,
    new_uuid7,
    reverse_bits,
    shard_of,
)
from sqlalchemy_seqkeys.comb import comb_minter

__all__ = [
    "HEADING",
    "HELP",
    "PUBLISHED",
    "GenerateReport",
    "add_arguments",
    "all_candidates",
    "candidates",
    "main",
    "measure",
    "rates_table",
]

HELP = "ids/s of every key strategy's minting step beside uuid.uuid4 (and uuid_utils)"
HEADING = "## 3. Key generation speed"
BASELINE = "uuid.uuid4"
#: The COMB GUID article's .NET numbers, relative to its random GUID.
PUBLISHED = {
    "uuid.uuid4": "1.00x (.NET `Guid.NewGuid`, 140 ms per million)",
    "new_comb(AS_STRING)": "0.05x (.NET COMB, 2,800 ms per million)",
}


def candidates() -> dict[str, Callable[[], object]]:
    """The 128-bit generators to time, by display name (``uuid_utils`` ones when installed).

    ``new_comb`` in each layout, ``comb_minter(AS_STRING)`` (the function the
    ``new_comb_guid`` column default calls for each row on most engines),
    ``new_uuid7``, beside ``uuid.uuid4``.
    """
    found: dict[str, Callable[[], object]] = {
        "uuid.uuid4": uuid.uuid4,
        "new_comb(AS_STRING)": partial(new_comb, CombLayout.AS_STRING),
        "new_comb(AS_BINARY)": partial(new_comb, CombLayout.AS_BINARY),
        "new_comb(AT_END)": partial(new_comb, CombLayout.AT_END),
        # what the new_comb_guid column default calls for each row on most engines
        "comb_minter(AS_STRING)": comb_minter(CombLayout.AS_STRING),
        "new_uuid7": new_uuid7,
    }
    try:
        import uuid_utils
    except ImportError:
        pass
    else:
        found["uuid_utils.uuid4"] = uuid_utils.uuid4
        found["uuid_utils.uuid7"] = uuid_utils.uuid7
    return found


def all_candidates() -> dict[str, Callable[[], object]]:
    """Every strategy's minting step that runs without a database, beside the same baselines.

    :func:`candidates`, then :class:`~sqlalchemy_seqkeys.Snowflake`, a
    bit-reversed value (``reverse_bits`` over an in-process counter, what
    ``BitReversed`` does once its source gave the counter) and a shard id
    (``shard_of(str(n), 2048)`` over a counter: FarmHash Fingerprint64 of the
    text, as ``ShardId`` computes it from a column's value). ``TableSequence``
    is bound by its database round trips, not by minting: the ``sequences``
    benchmark measures it.

    Example::

        >>> found = all_candidates()
        >>> "Snowflake" in found and "uuid.uuid4" in found
        True
    """
    found = candidates()
    counter = itertools.count(1).__next__
    found["Snowflake"] = Snowflake(worker_id=1)
    found["bit-reversed (reverse_bits(counter))"] = lambda: reverse_bits(counter())
    shard_counter = itertools.count(1).__next__
    found["shard_of(str(counter), 2048)"] = lambda: shard_of(str(shard_counter()), 2048)
    return found


def _rate(fn: Callable[[], object], seconds: float) -> float:
    """Calls per second of ``fn`` over about ``seconds``, in blocks of 1,000 calls."""
    calls = 0
    start = time.perf_counter()
    deadline = start + seconds
    now = start
    while now < deadline:
        for _ in range(1000):
            fn()
        calls += 1000
        now = time.perf_counter()
    return calls / (now - start)


def measure(
    seconds: float = 0.3,
    rounds: int = 5,
    found: dict[str, Callable[[], object]] | None = None,
) -> dict[str, float]:
    """The best rate (calls/s) of each candidate (default: :func:`all_candidates`) in ``rounds``.

    The rounds interleave the candidates, so a burst of load from elsewhere
    slows all of them, not one.

    Example::

        rates = measure(0.05, 2)
        rates["new_comb(AS_STRING)"] / rates["uuid.uuid4"]
    """
    if found is None:
        found = all_candidates()
    best = dict.fromkeys(found, 0.0)
    for _ in range(rounds):
        for name, fn in found.items():
            best[name] = max(best[name], _rate(fn, seconds))
    return best


def rates_table(rates: dict[str, float], *, code: bool = False) -> Table:
    """One row a generator, fastest first: ids/s, the ratio to ``uuid.uuid4``, the article's.

    ``code=True`` sets the generator names in Markdown code spans.

    Example::

        >>> print(format_table(rates_table({"uuid.uuid4": 500_000.0, "x": 1_000_000.0})))
        generator   ids/s      vs uuid.uuid4  ns/id  COMB GUID article
        ----------  ---------  -------------  -----  -----------------------------------------------
        x           1,000,000  2.00x          1,000  -
        uuid.uuid4  500,000    1.00x          2,000  1.00x (.NET `Guid.NewGuid`, 140 ms per million)
    """
    base = rates[BASELINE]
    table = Table(["generator", "ids/s", f"vs {BASELINE}", "ns/id", "COMB GUID article"])
    for name, rate in sorted(rates.items(), key=lambda item: -item[1]):
        table.add(
            f"`{name}`" if code else name,
            f"{rate:,.0f}",
            f"{rate / base:.2f}x",
            f"{1e9 / rate:,.0f}",
            PUBLISHED.get(name, "-"),
        )
    return table


@dataclass
class GenerateReport:
    """The report's part: the rates of one :func:`measure` run, its table, plot and findings.

    Example::

        part = GenerateReport(seconds=0.3, rounds=5)
        part.measure()
        print("\\n".join(part.markdown(plot=None)))
    """

    seconds: float
    rounds: int
    rates: dict[str, float] = field(default_factory=dict)
    plot_name = "generate"

    @property
    def measured(self) -> bool:
        """Whether there is anything to show."""
        return bool(self.rates)

    def measure(self) -> None:
        """Time every candidate of :func:`all_candidates`."""
        self.rates.update(measure(self.seconds, self.rounds))

    def markdown(self, plot: str | None) -> list[str]:
        """The section: what was timed, the table, the plot's link."""
        lines = [
            HEADING,
            "",
            f"Ids per second from one thread, the best of {self.rounds} interleaved rounds "
            f"of {self.seconds:g} s, relative to `uuid.uuid4` of the same run. "
            "`TableSequence` is not here: its cost is its database round trips (section 1), "
            "not minting. The COMB GUID article timed its COMB at 20x slower than a random "
            "GUID in .NET, most of it the crypto generator.\n",
        ]
        if not self.rates:
            return [*lines, "Not measured: see the notes.\n"]
        lines += [format_markdown(rates_table(self.rates, code=True)), ""]
        if not any(name.startswith("uuid_utils") for name in self.rates):
            lines.append(
                "`uuid_utils` (Rust) is not installed here, so it is not measured: "
                "`pip install uuid_utils` adds `uuid_utils.uuid4` and `uuid_utils.uuid7`.\n"
            )
        if plot:
            lines.append(f"![ids/s relative to uuid.uuid4]({plot})\n")
        return lines

    def findings(self) -> list[str]:
        """What this run says about the COMB GUID article's generation numbers."""
        rates = self.rates
        if "new_comb(AS_STRING)" not in rates or BASELINE not in rates:
            return []
        ratio = rates["new_comb(AS_STRING)"] / rates[BASELINE]
        return [
            f"Minting a COMB ran at {ratio:.2f}x the rate of `uuid.uuid4` here against 0.05x "
            "(20 times slower) in the COMB GUID article. Not reproduced, on purpose: in Python "
            "both take their random bytes from `os.urandom`, and the timestamp costs little; "
            "the .NET COMB paid for a crypto generator that `Guid.NewGuid` did not."
        ]

    def plot(self, path: Path) -> None:
        """Bars of ids/s relative to ``uuid.uuid4`` (log scale) to ``path`` (PNG)."""
        from matplotlib.figure import Figure

        rates = sorted(self.rates.items(), key=lambda item: item[1])
        base = self.rates[BASELINE]
        fig = Figure(figsize=(8, 0.35 * len(rates) + 1.2), layout="constrained")
        ax = fig.subplots()
        names = [name for name, _ in rates]
        ratios = [rate / base for _, rate in rates]
        colors = ["tab:gray" if name == BASELINE else "tab:blue" for name in names]
        ax.barh(names, ratios, color=colors)
        for y, times in enumerate(ratios):
            ax.annotate(f" {times:.2f}x", (times, y), va="center", fontsize=7)
        ax.set_xscale("log")
        ax.set_xlim(min(ratios) * 0.8, max(ratios) * 1.6)
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.set_xlabel("ids/s relative to uuid.uuid4 (log)", fontsize=8)
        ax.tick_params(axis="y", labelsize=8)
        ax.set_title("Key generation speed, one thread", fontsize=10)
        fig.savefig(path, dpi=80)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``python -m benchmarks generate``."""
    parser.add_argument("--seconds", type=float, default=0.3, help="length of one timed round")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds; best counts")
    parser.add_argument("--plot", metavar="FILE", help="also draw the ratios to FILE (PNG)")


def main(args: argparse.Namespace) -> int:
    """Measure and print the table, then how COMB compares with its target."""
    rates = measure(args.seconds, args.rounds)
    target = rates["new_comb(AS_STRING)"] / rates[BASELINE]
    verdict = "met" if target >= 0.8 else "MISSED"
    print(format_table(rates_table(rates)))
    print(
        f"\nnew_comb(AS_STRING) runs at {target:.2f}x uuid.uuid4 (target >= 0.80x: {verdict}); "
        f"best of {args.rounds} interleaved rounds of {args.seconds}s each"
    )
    if args.plot:
        return write_plot(GenerateReport(args.seconds, args.rounds, rates).plot, args.plot)
    return 0
