"""``run(database, body)``: an async test's body on an event loop of its own, with an
AsyncEngine made inside that loop and disposed there at the end (an AsyncEngine belongs
to the loop it first connects on)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

    from tests.conftest import AsyncDatabase

T = TypeVar("T")


def run(database: AsyncDatabase, body: Callable[[AsyncEngine], Awaitable[T]], **kw: Any) -> T:
    """``body(engine)`` on a new event loop, with an AsyncEngine (``database.engine(**kw)``)
    disposed at the end."""

    async def main() -> T:
        engine = database.engine(**kw)
        try:
            return await body(engine)
        finally:
            await engine.dispose()

    return asyncio.run(main())
