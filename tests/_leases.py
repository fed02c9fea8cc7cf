"""What the sync and async worker-lease tests share: a Snowflake id's millisecond, a mint
that a lost lease may refuse, the ids minted before and after a lease's high-water mark,
and processes racing for the last free worker ids."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from sqlalchemy_seqkeys import Snowflake, WorkerLeaseLostError

ROOT = Path(__file__).resolve().parents[1]


def ms_of(ids: Snowflake, value: int) -> int:
    """The Unix millisecond ``ids`` minted ``value`` in."""
    return int(ids.decode(value).timestamp.timestamp() * 1000)


def split_at_mark(ids: Snowflake, every: list[int], mark_ms: int) -> tuple[list[int], list[int]]:
    """``every`` id minted up to ``mark_ms`` (a first lease's high-water mark), and every one
    minted after it."""
    return (
        [v for v in every if ms_of(ids, v) <= mark_ms],
        [v for v in every if ms_of(ids, v) > mark_ms],
    )


def race_for_free_ids(
    argv: Callable[..., list[str]], url: str, tmp_path: Path, *, settle_s: float
) -> list[str]:
    """Six processes ``argv("race", url, 7, out, go, done)`` (worker ids 0 to 7) claim at one
    moment and hold until all six have tried: what each wrote, a worker id or ``none``.

    ``settle_s``: how long every racer may take to start and connect before the go.
    """
    go, done = tmp_path / "go", tmp_path / "done"
    done.mkdir()
    outs = [tmp_path / f"racer{i}.txt" for i in range(6)]
    racers = [subprocess.Popen(argv("race", url, 7, out, go, done), cwd=ROOT) for out in outs]
    try:
        time.sleep(settle_s)  # every racer has started and connected
        go.write_text(str(len(racers)))
        for racer in racers:
            assert racer.wait(timeout=60) == 0
    finally:
        for racer in racers:
            if racer.poll() is None:
                racer.kill()
                racer.wait()
    return [out.read_text().strip() for out in outs]


def mint_or_refuse(ids: Snowflake, out: list[int], refused: list[int]) -> bool:
    """Append the next id of ``ids`` to ``out`` or, when its lease is lost
    (``WorkerLeaseLostError``), a 1 to ``refused``; whether it minted."""
    try:
        out.append(ids())
    except WorkerLeaseLostError:
        refused.append(1)
        return False
    return True
