"""Failures made where the real ones come from: a dialect method that raises on the calls picked,
and Spanner's ``RetryAborted`` (the error its dbapi raises when a replay of an aborted
transaction fails), which SQLAlchemy wraps as it wraps the real one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy.engine import Engine

ABORTED = "The transaction was aborted and could not be retried due to a concurrent modification."


def retry_aborted() -> Exception:
    """The dbapi's ``RetryAborted``, with the message Spanner's client gives it."""
    from google.cloud.spanner_dbapi.exceptions import RetryAborted

    return RetryAborted(ABORTED)


def failing(
    monkeypatch: pytest.MonkeyPatch,
    engine: Engine,
    method: str,
    fails: Callable[[int], bool],
    error: Callable[[], Exception],
    *,
    roll_back: bool = False,
    after: bool = False,
) -> list[int]:
    """Make ``engine.dialect.<method>`` raise ``error()`` on the calls ``fails(number)`` picks.

    Returns the numbers of the calls made. ``roll_back``: end the DBAPI transaction
    first, as a COMMIT that failed has. ``after``: run the real call first (the server
    did the work; its answer was lost).
    """
    real = getattr(engine.dialect, method)
    calls: list[int] = []

    def wrapper(dbapi_connection: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(len(calls) + 1)
        if fails(len(calls)):
            if after:
                real(dbapi_connection, *args, **kwargs)
            elif roll_back:
                dbapi_connection.rollback()
            raise error()
        return real(dbapi_connection, *args, **kwargs)

    monkeypatch.setattr(engine.dialect, method, wrapper)
    return calls
