"""The suite's forked-child helper: a libc-forked child that hangs after it started is
forked again, and the hang is shown (its threads' stacks), never silently passed."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests import _helpers
from tests._forking import libc_fork


def test_a_child_that_hangs_once_is_forked_again_and_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_helpers, "CHILD_DEADLINE_S", 4.0)
    first = tmp_path / "first"

    def child() -> str:
        if not first.exists():
            first.touch()
            time.sleep(3600)  # hangs where the stacks will show it
        return "done"

    with pytest.warns(_helpers.ForkedChildHung, match="test_a_child_that_hangs_once") as seen:
        assert _helpers.in_forked_child(child, fork=libc_fork) == "done"
    assert "in child" in str(seen[0].message)  # the stack shows where it stood


def test_a_child_that_always_hangs_fails_with_its_stacks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_helpers, "CHILD_DEADLINE_S", 4.0)

    def child() -> str:
        time.sleep(3600)
        return "never"

    # every fork fails; one under load may also never start (CPython's raw-fork GIL
    # hazard), so the count is whichever of the three forks started
    with pytest.raises(pytest.fail.Exception, match=r"hung after starting [123] times") as failed:
        _helpers.in_forked_child(child, fork=libc_fork)
    assert "in child" in str(failed.value)
