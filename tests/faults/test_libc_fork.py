"""A process forked by libc ``fork()`` shares no COMB or UUIDv7 value with its parent.

uWSGI without ``lazy-apps``, C extensions and ``ctypes`` fork through libc,
which runs none of Python's ``os.register_at_fork`` hooks: the child starts
with its parent's generator state (the millisecond, the counter and the block
of buffered random bytes). Before the fix parent and child then minted the
same values whenever they minted in the same millisecond (246 of 20,000 COMB,
16 UUIDv7). Here parent and child mint at once after the fork, the child sends
its values back through a pipe, and no value may appear on both sides.
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import time
import uuid
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest

from sqlalchemy_seqkeys import CombGuidDefault, CombLayout, comb_guid, new_comb, new_uuid7
from sqlalchemy_seqkeys import _fork as fork_module
from sqlalchemy_seqkeys.comb import comb_minter
from tests._forking import libc_fork as _libc_fork
from tests._helpers import in_threads

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX-only"),
    pytest.mark.slow,
]

PER_PROCESS = 20_000
CHILD_DEADLINE_S = 60.0


class _Context:
    """What SQLAlchemy hands a column default: the execution context's dialect."""

    def __init__(self, dialect_name: str) -> None:
        self.dialect = type("Dialect", (), {"name": dialect_name})()


def _default_on(default: CombGuidDefault, dialect_name: str) -> Callable[[], uuid.UUID]:
    context = _Context(dialect_name)
    return lambda: default(context)


GENERATORS: dict[str, Callable[[], uuid.UUID]] = {
    **{f"new_comb({layout.name})": partial(new_comb, layout) for layout in CombLayout},
    **{f"comb_minter({layout.name})": comb_minter(layout) for layout in CombLayout},
    "new_uuid7": new_uuid7,
    "comb_guid on postgresql": _default_on(comb_guid, "postgresql"),
    "comb_guid on mssql": _default_on(comb_guid, "mssql"),
    "comb_guid.with_layout('as_binary')": _default_on(comb_guid.with_layout("as_binary"), "mysql"),
}


def _read_all(fd: int, pid: int) -> bytes:
    chunks: list[bytes] = []
    deadline = time.monotonic() + CHILD_DEADLINE_S
    while True:
        left = deadline - time.monotonic()
        ready, _, _ = select.select([fd], [], [], max(left, 0))
        if not ready:
            os.kill(pid, signal.SIGKILL)
            pytest.fail(f"the libc-forked child sent nothing for {CHILD_DEADLINE_S} s")
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _wait_until(ns: int) -> None:
    while time.time_ns() < ns:
        pass


def _one_thread(mint: Callable[[], uuid.UUID]) -> Callable[[int], list[uuid.UUID]]:
    return lambda n: [mint() for _ in range(n)]


def _mint_in_parent_and_libc_child(
    mint: Callable[[], uuid.UUID], n: int, mint_n: Callable[[int], list[uuid.UUID]] | None = None
) -> tuple[list[uuid.UUID], list[uuid.UUID]]:
    """``n`` values minted by this process and by a libc-forked child, both at once.

    ``mint_n(n)`` mints the values on each side (default: ``mint`` in a loop).
    """
    mint_n = mint_n or _one_thread(mint)
    mint()  # the generator has state to inherit: a millisecond, a counter, random bytes
    # Both sides start minting at the same millisecond boundary, the moment a
    # pre-fork generator state repeats itself in both processes.
    start_ns = (time.time_ns() // 1_000_000 + 30) * 1_000_000
    read_fd, write_fd = os.pipe()
    pid = _libc_fork()
    if pid == 0:  # pragma: no cover - runs in the child
        status = 1
        try:
            os.close(read_fd)
            _wait_until(start_ns)
            data = b"".join(v.bytes for v in mint_n(n))
            view = memoryview(data)
            while view:
                view = view[os.write(write_fd, view) :]
            status = 0
        finally:
            os._exit(status)
    assert pid > 0, f"fork() failed: {ctypes.get_errno()}"
    os.close(write_fd)
    try:
        _wait_until(start_ns)
        parent = mint_n(n)
        data = _read_all(read_fd, pid)
    finally:
        os.close(read_fd)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the child failed to mint"
    child = [uuid.UUID(bytes=data[i : i + 16]) for i in range(0, len(data), 16)]
    return parent, child


@pytest.mark.parametrize("marker", [fork_module._new_marker, fork_module._PidMarker])
def test_a_fork_marker_reads_0_in_a_libc_forked_child(marker: Callable[[], Any]) -> None:
    # it reads the process token where it was made (what snowflake generators compare)
    mark = marker()
    read_fd, write_fd = os.pipe()
    pid = _libc_fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            os.write(write_fd, str(mark[0]).encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    try:
        seen = _read_all(read_fd, pid)
    finally:
        os.close(read_fd)
        os.waitpid(pid, 0)
    assert (mark[0], seen) == (fork_module.process_token(), b"0")


@pytest.mark.usefixtures("fork_marker")
@pytest.mark.parametrize("name", list(GENERATORS))
def test_libc_forked_child_shares_no_value_with_its_parent(name: str) -> None:
    parent, child = _mint_in_parent_and_libc_child(GENERATORS[name], PER_PROCESS)
    assert len(child) == PER_PROCESS
    assert len(set(parent)) == PER_PROCESS
    assert len(set(child)) == PER_PROCESS
    shared = set(parent) & set(child)
    assert not shared, f"{len(shared)} of {PER_PROCESS} values minted by both parent and child"


@pytest.mark.usefixtures("fork_marker")
def test_libc_forked_child_keeps_minting_order() -> None:
    # the child's values still sort after everything it inherited
    before = [new_uuid7() for _ in range(100)]
    _, child = _mint_in_parent_and_libc_child(new_uuid7, 2_000)
    assert sorted(before + child) == before + child


@pytest.mark.usefixtures("fork_marker")
def test_threads_started_first_in_a_libc_forked_child_share_nothing() -> None:
    # The child's first values come from four threads at once: one of them
    # resets the inherited state, and none mints from it.
    def four_threads(n: int) -> list[uuid.UUID]:
        return [v for out in in_threads(new_comb_as_string, 4, n // 4) for v in out]

    new_comb_as_string = partial(new_comb, CombLayout.AS_STRING)
    parent, child = _mint_in_parent_and_libc_child(new_comb_as_string, PER_PROCESS, four_threads)
    assert len(set(child)) == PER_PROCESS
    assert not set(parent) & set(child)


@pytest.mark.usefixtures("fork_marker")
@pytest.mark.parametrize("how", ["os.fork", "libc fork"])
def test_a_forked_child_draws_a_process_token_of_its_own(how: str) -> None:
    # what snowflake generators can compare on each mint (the one fork registry)
    parent = fork_module.process_token()
    read_fd, write_fd = os.pipe()
    pid = os.fork() if how == "os.fork" else _libc_fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            first = fork_module.process_token()
            again = fork_module.process_token()
            os.write(write_fd, f"{first},{again}".encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    try:
        data = _read_all(read_fd, pid)
    finally:
        os.close(read_fd)
        os.waitpid(pid, 0)
    first, again = (int(x) for x in data.decode().split(","))
    assert first == again != parent
    assert fork_module.process_token() == parent
