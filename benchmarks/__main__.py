"""``python -m benchmarks NAME ...``: run one benchmark (``--help`` lists them).

Every benchmark module gives ``HELP`` (one line), ``add_arguments(parser)`` and
``main(args) -> int``; this file only wires them to the command line::

    $ python -m benchmarks generate --seconds 0.1 --rounds 3
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
from collections.abc import Sequence

from benchmarks import NAMES

__all__ = ["main", "parser"]


def parser() -> argparse.ArgumentParser:
    """The command line: one subcommand per module of :data:`benchmarks.NAMES`."""
    top = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="The benchmarks of sqlalchemy-seqkeys; every result is a ratio to a "
        "baseline of the same run.",
    )
    commands = top.add_subparsers(dest="benchmark", required=True, metavar="NAME")
    for name in (*NAMES, "scale"):  # scale: private servers, not part of the report
        module = importlib.import_module(f"benchmarks.{name}")
        sub = commands.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(sub)
        sub.set_defaults(run=module.main)
    return top


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: the process's) and run the benchmark it names.

    A SIGTERM (``kill``, a CI timeout) ends the run as an exception, so its
    cleanup still runs: private servers stopped and their data directories
    removed, databases dropped.
    """
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(argv)
    args.argv = argv  # the report writes the command it was run with
    status: int = args.run(args)
    return status


if __name__ == "__main__":
    sys.exit(main())
