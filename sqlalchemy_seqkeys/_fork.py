"""The one fork registry: state a forked child must not reuse is reset here.

An object that keeps per-process state (buffered random bytes, a block of keys, a
lock) calls :func:`register`; in a forked child its ``_after_fork_in_child()`` runs
once, before the child hands out anything: through ``os.register_at_fork`` after
``os.fork()``, and after a libc ``fork()`` (no Python hook runs) at the first
:func:`forked` call, which reads a marker word that is 0 in any child.

Design: docs/architecture.md.
"""

from __future__ import annotations

import mmap
import os
import secrets
import sys
import threading
import weakref
from typing import Protocol

__all__ = ["forked", "process_lock", "process_token", "register"]


class _ForkAware(Protocol):
    """What the registry resets: an object with state a child must not reuse."""

    def _after_fork_in_child(self) -> None: ...


class _Marker(Protocol):
    def __getitem__(self, index: int, /) -> int: ...
    def __setitem__(self, index: int, value: int, /) -> None: ...


#: every token this process and its ancestors drew (plain memory: a child inherits it)
_tokens_drawn: set[int] = set()


def _draw_token() -> int:
    token = 0
    while token == 0 or token in _tokens_drawn:
        token = secrets.randbits(62)
    _tokens_drawn.add(token)
    return token


_token = _draw_token()


class _PidMarker:
    """Reads the token it was set to in that process, 0 in any process forked from it."""

    __slots__ = ("_pid", "_token")

    def __init__(self) -> None:
        self._pid = os.getpid()
        self._token = _token

    def __getitem__(self, index: int, /) -> int:
        return self._token if os.getpid() == self._pid else 0

    def __setitem__(self, index: int, value: int, /) -> None:
        self._pid = os.getpid()
        self._token = value


def _new_marker() -> _Marker:
    """A word that reads this process's token here and 0 in every forked child, however forked.

    On Linux the word lives in a page advised ``MADV_WIPEONFORK``: the kernel
    hands every child a zeroed copy, and reading it costs a tenth of an
    ``os.getpid()`` system call (the method glibc's ``arc4random`` uses).
    Elsewhere it compares ``os.getpid()``.
    """
    if sys.platform.startswith("linux"):
        try:
            page = mmap.mmap(-1, mmap.PAGESIZE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            page.madvise(getattr(mmap, "MADV_WIPEONFORK", 18))  # 18: Linux >= 4.14
        except (OSError, AttributeError, ValueError):
            pass
        else:
            word = memoryview(page).cast("q")  # keeps the page mapped
            word[0] = _token
            return word
    return _PidMarker()


#: this process's token; 0 in a forked child until it has reset every object
#: it inherited (read through the module: tests swap it for a _PidMarker)
marker_word = _new_marker()
_live: weakref.WeakSet[_ForkAware] = weakref.WeakSet()
#: pid -> the lock under which that process resets the objects it inherited
_child_guards: dict[int, threading.Lock] = {}


def marker() -> _Marker:
    """The word that reads :func:`process_token` here and 0 in a forked child.

    A hot path keeps it and compares ``marker()[0]`` with its token, one load
    per call instead of a system call.
    """
    return marker_word


def register(obj: _ForkAware) -> None:
    """Have ``obj._after_fork_in_child()`` run in every child forked from here.

    The registry holds ``obj`` weakly. The reset replaces the object's locks
    rather than taking them (a thread of the parent may have held one at the
    fork), and the object's hot path calls :func:`forked` (cheap), which
    resets everything after a libc ``fork()``::

        class Block:
            def __init__(self) -> None:
                self.values: list[int] = []
                _fork.register(self)  # held weakly

            def _after_fork_in_child(self) -> None:
                self.values = []  # the parent hands these out

            def take(self) -> int:
                _fork.forked()
                return self.values.pop()
    """
    _live.add(obj)


def process_token() -> int:
    """A number naming this process: drawn anew in every forked child.

    Never one an ancestor drew, so state stamped with a parent's token never
    matches a child's. ``marker_word[0]`` reads it too, in one load: what
    snowflake generators compare on each mint.

    Example::

        >>> from sqlalchemy_seqkeys import _fork
        >>> _fork.process_token() == _fork.process_token()
        True
    """
    if not marker_word[0]:
        forked()
    return _token


def process_lock(locks: dict[int, threading.Lock]) -> threading.Lock:
    """This process's lock in ``locks``: a forked child gets a new one.

    A lock a thread of the parent held at the fork stays held in the child,
    where no thread will release it; keyed by :func:`process_token`, the
    child never finds it.

    Example::

        >>> from sqlalchemy_seqkeys import _fork
        >>> locks: dict[int, threading.Lock] = {}
        >>> _fork.process_lock(locks) is _fork.process_lock(locks)
        True
    """
    return locks.setdefault(process_token(), threading.Lock())  # atomic under the GIL


def _reset_inherited() -> None:
    global _token
    _token = _draw_token()  # first: a reset object may stamp itself with it
    for obj in list(_live):
        obj._after_fork_in_child()
    # Last: a thread that sees the token must see every object already reset.
    marker_word[0] = _token


def forked() -> bool:
    """True once in a libc-forked child, after every registered object was reset.

    Call it before touching state a registered object keeps (before its lock,
    which the child may have inherited held). Costs one word read when nothing
    forked. After ``os.fork()`` the at-fork hook has already reset everything,
    and this returns False.

    Example::

        >>> from sqlalchemy_seqkeys import _fork
        >>> _fork.forked()
        False
    """
    if marker_word[0]:
        return False
    # No hook ran (libc fork). Threads the child started may race here: one
    # guard per process lets one of them reset the objects while the others
    # wait (dict.setdefault is atomic under the GIL).
    with _child_guards.setdefault(os.getpid(), threading.Lock()):
        if marker_word[0]:
            return False
        _reset_inherited()
    return True


if hasattr(os, "register_at_fork"):  # not on Windows
    os.register_at_fork(after_in_child=_reset_inherited)
