"""Keys one process holds in memory: the block store of pooled and bit-reversed sequences.

A sequence that hands keys out from memory keeps one state per engine pool
(one database) and per ``schema_translate_map`` (one tenant), shared by the
threads and asyncio tasks of the process. :class:`BlockStore` finds that
state for a connection, in one identity check in the common case, makes it on
first use, and forgets every state in a forked child, also one forked by libc
``fork()``: the parent hands those keys out. Each state carries its own lock;
the store's lock is held only to add a state::

    >>> import sqlalchemy as sa
    >>> store = BlockStore(lambda dialect: BlockState())
    >>> engine = sa.create_engine("sqlite://")
    >>> with engine.connect() as conn:
    ...     store.of(conn) is store.of(conn)
    True

Also here, shared by both: :func:`batch_counter` (their sequences-table row
where the engine has no native sequence), :func:`begin` and :func:`connect`
(what a sync method does with an Engine or a Connection). Their awaitable
``create_async``/``drop_async`` come from ``sequences._aio.AwaitableDDL``.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Generic, TypeVar

import sqlalchemy as sa

from sqlalchemy_seqkeys import _fork
from sqlalchemy_seqkeys.sequences import _aio
from sqlalchemy_seqkeys.sequences.generators import TableSequence
from sqlalchemy_seqkeys.sequences.table import _tenant

if TYPE_CHECKING:
    pass

__all__ = ["BlockState", "BlockStore", "batch_counter", "begin", "connect"]


class BlockState:
    """What one process holds for one database and tenant; subclasses add the keys."""

    __slots__ = ("lock",)

    def __init__(self) -> None:
        self.lock = threading.Lock()


S = TypeVar("S", bound=BlockState)

#: no (pool, options) seen yet: (a dead weak reference, options, state)
_NO_LAST: tuple[Callable[[], object], object, None] = (lambda: None, None, None)


class BlockStore(Generic[S]):
    """One ``S`` per pool and tenant, made by ``new(dialect)``; None where ``new`` gives None.

    ``new`` returning None (an engine where the sequence holds no blocks)
    is remembered for the last (pool, options) seen, never stored.
    """

    def __init__(self, new: Callable[[sa.Dialect], S | None]) -> None:
        self._new = new
        self._last: tuple[Callable[[], object], object, S | None] = _NO_LAST
        self._lock = threading.Lock()
        # pool -> tenant (schema_translate_map, or None) -> state
        self._states: weakref.WeakKeyDictionary[sa.pool.Pool, dict[object, S]] = (
            weakref.WeakKeyDictionary()
        )
        _fork.register(self)

    def of(self, conn: sa.Connection) -> S | None:
        """This process's state for ``conn``'s database (pool) and tenant (schema map)."""
        _fork.forked()  # libc fork(): no hook ran; the states are forgotten now
        pool = conn.engine.pool
        # Connections share their engine's options object until given their
        # own: the common case is one identity check, not a tenant and a lookup.
        options = conn.get_execution_options()
        last_pool, last_options, last_state = self._last
        if last_pool() is pool and last_options is options:
            return last_state
        state = self._state(conn, pool)
        self._last = (weakref.ref(pool), options, state)
        return state

    def _state(self, conn: sa.Connection, pool: sa.pool.Pool) -> S | None:
        tenant = _tenant(conn)
        tenants = self._states.get(pool)
        state = None if tenants is None else tenants.get(tenant)
        if state is None:
            with self._lock:
                state = self._states.get(pool, {}).get(tenant)
                if state is None:
                    state = self._new(conn.dialect)
                    if state is None:
                        return None
                    self._states.setdefault(pool, {})[tenant] = state
        return state

    def forget(self) -> None:
        """Drop every state: a sequence created anew, or a forked child."""
        self._last = _NO_LAST
        self._lock = threading.Lock()
        self._states = weakref.WeakKeyDictionary()

    def _after_fork_in_child(self) -> None:
        # The states are the parent's (it hands their keys out), and their
        # locks may be held by threads this process does not have.
        self.forget()


def batch_counter(name: str, size: int, start: int, table: str) -> TableSequence:
    """The sequences-table row that stands in where the engine has no native sequence.

    ``size`` counters per UPDATE, committed in a transaction of their own
    (``batch`` mode): a block handed out across transactions must not come
    back with a rollback.
    """
    return TableSequence(name, mode="batch", batch_size=size, start=start, table=table)


@contextlib.contextmanager
def _on(bind: sa.Engine | sa.Connection, what: str, *, begin: bool) -> Iterator[sa.Connection]:
    _aio.check_sync_bind(bind, what)
    if not isinstance(bind, sa.Engine):
        yield bind
        return
    with bind.begin() if begin else bind.connect() as conn:
        yield conn


def begin(
    bind: sa.Engine | sa.Connection, what: str
) -> contextlib.AbstractContextManager[sa.Connection]:
    """A transaction of its own with an Engine (committed at the end); a Connection as it is."""
    return _on(bind, what, begin=True)


def connect(
    bind: sa.Engine | sa.Connection, what: str
) -> contextlib.AbstractContextManager[sa.Connection]:
    """A connection of its own with an Engine (no transaction begun); a Connection as it is."""
    return _on(bind, what, begin=False)
