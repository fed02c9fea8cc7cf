"""The awaitable forms of the sync API: one SQL path, run through SQLAlchemy's greenlet.

SQLAlchemy's own convention: ``AsyncEngine`` and ``AsyncConnection`` are
proxies whose ``async def`` methods run the sync code in a greenlet
(``run_sync``). So each ``*_async`` function here takes an ``AsyncEngine``
(a transaction of its own, committed) or an ``AsyncConnection`` (it joins that
connection's transaction, which the caller commits) and runs the very same
sync function; nothing returns an int or a coroutine depending on its argument.
User guide: docs/asyncio.md.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Coroutine, Iterator
from typing import (
    TYPE_CHECKING,
    Any,
    Concatenate,
    ParamSpec,
    TypeAlias,
    TypeGuard,
    TypeVar,
    cast,
)

import sqlalchemy as sa

from sqlalchemy_seqkeys._compat import greenlet_spawn
from sqlalchemy_seqkeys.errors import InvalidSequenceError

if TYPE_CHECKING:  # importing sqlalchemy.ext.asyncio needs greenlet, an optional package
    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

__all__ = [
    "AsyncBind",
    "awaitable",
    "begin",
    "check_sync_bind",
    "connect",
    "on_connection",
    "on_engine",
]

T = TypeVar("T")
P = ParamSpec("P")

AsyncBind: TypeAlias = "AsyncEngine | AsyncConnection"
"""What the awaitable forms take: an AsyncEngine, or an AsyncConnection (joins its transaction)."""


def _is_async_bind(bind: object) -> TypeGuard[AsyncBind]:
    # An AsyncEngine exists only once its module is imported: no import here.
    module = sys.modules.get("sqlalchemy.ext.asyncio")
    return module is not None and isinstance(bind, (module.AsyncEngine, module.AsyncConnection))


def _is_async_connection(bind: object) -> TypeGuard[AsyncConnection]:
    module = sys.modules.get("sqlalchemy.ext.asyncio")
    return module is not None and isinstance(bind, module.AsyncConnection)


def _check_async_bind(bind: object, what: str) -> None:
    if not _is_async_bind(bind):
        raise InvalidSequenceError(
            f"{what}_async() takes an AsyncEngine or AsyncConnection, not "
            f"{type(bind).__name__}; with a sync Engine or Connection call {what}()"
        )


def check_sync_bind(bind: object, what: str) -> None:
    """Refuse what the sync form cannot take, naming the form that can."""
    if isinstance(bind, (sa.Engine, sa.Connection)):
        return
    if _is_async_bind(bind):
        raise InvalidSequenceError(
            f"{what}() is the sync form; with an {type(bind).__name__} await "
            f"{what}_async(...) instead (or call {what}() inside conn.run_sync)"
        )
    raise InvalidSequenceError(
        f"{what}() takes an Engine or Connection, not {type(bind).__name__} ({bind!r})"
    )


async def on_connection(
    bind: AsyncBind, what: str, fn: Callable[..., T], *args: Any, **kwargs: Any
) -> T:
    """``fn(sync_connection, *args, **kwargs)``: in the caller's transaction, or one of its own.

    With an AsyncEngine the transaction is committed here (rolled back if
    ``fn`` raises), as the sync functions do with an Engine.
    """
    _check_async_bind(bind, what)
    if _is_async_connection(bind):
        return await bind.run_sync(fn, *args, **kwargs)
    async with cast("AsyncEngine", bind).begin() as conn:
        return await conn.run_sync(fn, *args, **kwargs)


async def on_engine(
    bind: AsyncBind, what: str, fn: Callable[..., T], *args: Any, **kwargs: Any
) -> T:
    """``fn(sync_engine_or_connection, ...)``: an AsyncEngine's sync side, with no connection taken.

    For values taken in transactions of their own (or from a block in
    memory), which need no connection of the caller's.
    """
    _check_async_bind(bind, what)
    if _is_async_connection(bind):
        return await bind.run_sync(fn, *args, **kwargs)
    return await greenlet_spawn(fn, cast("AsyncEngine", bind).sync_engine, *args, **kwargs)


def awaitable(
    fn: Callable[Concatenate[sa.Engine | sa.Connection, P], T], example: str
) -> Callable[Concatenate[AsyncBind, P], Coroutine[Any, Any, T]]:
    """The awaitable twin of ``fn``, a function whose first argument is an Engine or Connection.

    ``await twin(async_engine, ...)`` runs ``fn(async_engine.sync_engine, ...)``
    in SQLAlchemy's greenlet (so ``fn`` checks its arguments before any I/O and
    commits its own transaction); ``await twin(async_connection, ...)`` runs
    ``fn`` on the connection's sync side, in the caller's transaction. One
    twin per function, with its arguments and result, instead of a copy of
    each signature (``example`` ends its docstring)::

        resync_table_sequence_async = awaitable(
            resync_table_sequence,
            'await resync_table_sequence_async(async_engine, "invoice_id", "invoices", "id")',
        )
    """
    what = fn.__name__

    async def twin(bind: AsyncBind, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await on_engine(bind, what, fn, *args, **kwargs)

    twin.__name__ = twin.__qualname__ = f"{what}_async"
    twin.__module__ = fn.__module__
    twin.__doc__ = (
        f"Awaitable :func:`{what}`, with the same arguments after an AsyncEngine "
        "(a transaction of its own, committed) or an AsyncConnection (joins its transaction)."
        f"\n\nExample::\n\n    {example}\n"
    )
    return twin


@contextlib.contextmanager
def _on(bind: sa.Engine | sa.Connection, what: str, *, begin: bool) -> Iterator[sa.Connection]:
    check_sync_bind(bind, what)
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
