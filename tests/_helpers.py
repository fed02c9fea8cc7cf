"""Small helpers the tests share: run code in threads, or in a forked child."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import sqlalchemy as sa

T = TypeVar("T")


def in_threads(mint: Callable[[], T], threads: int, per_thread: int) -> list[list[T]]:
    """Call ``mint`` ``per_thread`` times on each of ``threads`` threads started together."""
    results: list[list[T]] = [[] for _ in range(threads)]
    start = threading.Barrier(threads)

    def work(out: list[T]) -> None:
        start.wait()
        out.extend(mint() for _ in range(per_thread))

    pool = [threading.Thread(target=work, args=(out,)) for out in results]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return results


def in_forked_child(child: Callable[[], str], parent: Callable[[], None] | None = None) -> str:
    """Run ``child`` in a forked process (``parent`` meanwhile here); return what it returned.

    An exception in the child comes back as ``"<ExceptionName>: <message>"``.
    """
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            try:
                text = child()
            except Exception as exc:  # reported to the parent as text
                text = f"{type(exc).__name__}: {exc}"
            os.write(write_fd, text.encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    if parent is not None:
        parent()
    chunks = []
    while chunk := os.read(read_fd, 1 << 16):
        chunks.append(chunk)
    os.close(read_fd)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode()


@contextmanager
def fresh_table(
    engine: sa.Engine, declare: Callable[[sa.MetaData], sa.Table]
) -> Iterator[sa.Engine]:
    """``engine`` with the table ``declare`` puts on a MetaData created anew, dropped after."""
    metadata = sa.MetaData()
    declare(metadata)
    metadata.drop_all(engine)
    metadata.create_all(engine)
    try:
        yield engine
    finally:
        metadata.drop_all(engine)
