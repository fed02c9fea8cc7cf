"""Failures and races made where the real ones come from: a dialect method that raises on the
calls picked; Spanner's ``RetryAborted`` (the error its dbapi raises when a replay of an
aborted transaction fails), which SQLAlchemy wraps as it wraps the real one; a sequence
dropped and created anew while a thread, paused after a statement, takes values."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa
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


def created_anew_while_taking(
    engine: Engine, sequence: Any, take: Callable[[], list[int]], paused_after: str
) -> list[int]:
    """What ``take()`` returns when ``sequence`` is dropped and created anew on ``engine``
    while ``take()``, on a thread of its own, is paused right after a statement of it that
    holds ``paused_after`` (case aside) ran: a value of the former sequence, received after."""
    ran, go_on = threading.Event(), threading.Event()

    def pause(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if threading.current_thread().name == "former" and paused_after.lower() in (
            statement.lower()
        ):
            ran.set()
            go_on.wait(10)

    sa.event.listen(engine, "after_cursor_execute", pause)
    got: list[int] = []
    thread = threading.Thread(target=lambda: got.extend(take()), name="former")
    try:
        thread.start()
        assert ran.wait(10)
        sequence.drop(engine)
        sequence.create(engine)  # anew, at 1: this process forgets what it received
        go_on.set()
        thread.join()
    finally:
        go_on.set()
        sa.event.remove(engine, "after_cursor_execute", pause)
    return got
