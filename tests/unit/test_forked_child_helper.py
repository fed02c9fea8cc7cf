"""The test helper in_forked_child forks once more when a child is killed by a signal, once."""

import os
import signal
from pathlib import Path

import pytest

from tests._helpers import ForkedChildHung, in_forked_child


def test_a_child_killed_once_is_forked_again(tmp_path: Path) -> None:
    marker = tmp_path / "once"

    def child() -> str:
        if not marker.exists():
            marker.write_text("x")
            os.kill(os.getpid(), signal.SIGSEGV)
        return "ok"

    with pytest.warns(ForkedChildHung, match="SIGSEGV"):
        assert in_forked_child(child) == "ok"


def test_a_child_killed_twice_fails() -> None:
    def child() -> str:
        os.kill(os.getpid(), signal.SIGSEGV)
        return "never"

    with pytest.raises(pytest.fail.Exception, match="killed twice, by signal SIGSEGV"):
        in_forked_child(child)
