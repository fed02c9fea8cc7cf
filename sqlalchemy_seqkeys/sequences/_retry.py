"""Which database errors are worth retrying, the bounded retry loop, and what the rest become.

:func:`retrying` runs an allocation's own transaction again after a transient error
(a deadlock, a serialization failure, a dropped connection, Spanner's aborted
transaction): at worst a gap, never a value handed out twice. A lock-wait timeout
(:class:`~sqlalchemy_seqkeys.SequenceLockTimeoutError`) and anything in the caller's
transaction are never retried; every other database error becomes a
:class:`~sqlalchemy_seqkeys.SequenceAllocationError`.

Design: docs/architecture.md.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

import sqlalchemy as sa

from sqlalchemy_seqkeys.errors import (
    SeqKeysError,
    SequenceAllocationError,
    SequenceExhaustedError,
    SequenceLockTimeoutError,
)

__all__ = [
    "backoff",
    "describe",
    "error_in_callers_transaction",
    "error_not_retried",
    "is_transient",
    "lock_timeout_setting",
    "retrying",
    "sequence_error",
    "sequence_ran_out",
    "statement_errors",
]

T = TypeVar("T")

#: SQLSTATEs of PostgreSQL (and others) that mean "run the transaction again"
_RETRY_SQLSTATES = frozenset({"40001", "40P01", "08000", "08003", "08006", "57P01"})
#: MySQL/MariaDB error numbers: deadlock, server gone, lost connection, killed
_RETRY_MYSQL_CODES = frozenset({1213, 2003, 2006, 2013, 1927, 4031})
#: exception class names of drivers without codes (Spanner's aborted transactions)
_RETRY_CLASS_NAMES = frozenset({"Aborted", "RetryAborted"})
#: a lock wait ended by the server's timeout -> the setting that bounds it
_LOCK_TIMEOUT_SQLSTATES = {"55P03": "lock_timeout"}  # lock_not_available
_LOCK_TIMEOUT_MYSQL_CODES = {1205: "innodb_lock_wait_timeout"}  # ER_LOCK_WAIT_TIMEOUT
#: more a lock timeout's message says of a setting
_ALSO = {
    "innodb_lock_wait_timeout": " (a table lock, LOCK TABLES or an ALTER TABLE under way, "
    "waits lock_wait_timeout instead, a year by default: bound that too)"
}
#: the drivers whose errors carry MySQL error numbers
_MYSQL_DRIVERS = frozenset({"pymysql", "MySQLdb", "mariadb", "mysql", "asyncmy"})


def _sqlstate(orig: BaseException) -> object:
    # psycopg 3 and asyncpg: .sqlstate; psycopg2: .pgcode; pg8000: args[0]["C"]
    for attribute in ("sqlstate", "pgcode"):
        code = getattr(orig, attribute, None)
        if code:
            return code
    args = getattr(orig, "args", ())
    if args and isinstance(args[0], dict):
        return args[0].get("C")
    return None


def mysql_error_code(orig: BaseException) -> object:
    """A MySQL/MariaDB driver error's code (an int), or None for another driver's error."""
    # PyMySQL, aiomysql (PyMySQL's errors), asyncmy, mysqlclient: args[0];
    # MariaDB Connector/Python: .errno
    if type(orig).__module__.split(".")[0] not in _MYSQL_DRIVERS:
        return None
    code = getattr(orig, "errno", None)
    if isinstance(code, int):
        return code
    args = getattr(orig, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


def _origins(exc: BaseException) -> Iterator[BaseException]:
    """The driver's error and its causes (asyncpg's sits behind SQLAlchemy's adapter)."""
    orig: BaseException | None = exc.orig if isinstance(exc, sa.exc.DBAPIError) else exc
    seen: set[int] = set()
    while orig is not None and id(orig) not in seen:
        seen.add(id(orig))
        yield orig
        orig = orig.__cause__ or orig.__context__


def lock_timeout_setting(exc: BaseException) -> str | None:
    """The server setting whose timeout ended ``exc``'s lock wait; None if it is not one.

    Example::

        >>> lock_timeout_setting(ValueError("no"))
    """
    if not isinstance(exc, sa.exc.DBAPIError):
        return None
    for orig in _origins(exc):
        sqlstate = _sqlstate(orig)
        if isinstance(sqlstate, str) and sqlstate in _LOCK_TIMEOUT_SQLSTATES:
            return _LOCK_TIMEOUT_SQLSTATES[sqlstate]
        code = mysql_error_code(orig)
        if isinstance(code, int) and code in _LOCK_TIMEOUT_MYSQL_CODES:
            return _LOCK_TIMEOUT_MYSQL_CODES[code]
    return None


def is_transient(exc: BaseException) -> bool:
    """True when ``exc`` says the transaction may succeed if run again at once.

    A lock-wait timeout is not: it would wait as long again. Example::

        >>> is_transient(ValueError("no"))
        False
    """
    if not isinstance(exc, sa.exc.DBAPIError):
        # Spanner's client lets Google's Aborted through bare in places
        return any(type(e).__name__ in _RETRY_CLASS_NAMES for e in _origins(exc))
    if exc.connection_invalidated:
        return True
    for orig in _origins(exc):
        if _sqlstate(orig) in _RETRY_SQLSTATES:
            return True
        if mysql_error_code(orig) in _RETRY_MYSQL_CODES:
            return True
        if type(orig).__name__ in _RETRY_CLASS_NAMES:
            return True
        if "database is locked" in str(orig):  # SQLite's busy timeout
            return True
    return False


def backoff(number: int, base: float, cap: float) -> float:
    """The wait before attempt ``number + 1``: exponential from ``base``, at most ``cap``,
    with full jitter (drawn from 0 up), so that the retries of many clients spread out."""
    return random.uniform(0, min(cap, base * 2**number))


def describe(exc: BaseException) -> str:
    """The driver's error in one short line: its class and the start of its message.

    A message that says nothing (Spanner's dbapi raises ``ProgrammingError([])``
    over the server's error) is completed by the first error behind it that says
    something.
    """
    orig = getattr(exc, "orig", None) or exc
    text = " ".join(str(orig).split())
    behind: BaseException | None = orig
    seen = 0
    while text in ("", "[]", "()") and behind is not None and seen < 5:
        behind = behind.__cause__ or behind.__context__
        seen += 1
        if behind is not None and " ".join(str(behind).split()) not in ("", "[]", "()"):
            text = f"{type(behind).__name__}: {' '.join(str(behind).split())}"
    return f"{type(orig).__name__}: {text[:200]}"


def _lock_timeout_error(
    setting: str, what: str, outcome: str, callers: bool
) -> SequenceLockTimeoutError:
    whose = (
        " This happened in the caller's transaction, which is the caller's to roll back "
        "(MySQL and MariaDB roll back only the statement, and the transaction keeps its "
        "other locks)."
        if callers
        else " It was not retried: a retry would wait as long again."
    )
    return SequenceLockTimeoutError(
        f"{what} waited the server's whole lock timeout ({setting}) for the sequence, "
        "which another transaction holds locked (a long in_transaction transaction, a "
        f"resync, a SELECT ... FOR UPDATE); {outcome}.{whose} End the transaction that "
        f"holds it, or raise {setting} for the session (an engine 'connect' event) "
        f"if such waits are expected{_ALSO.get(setting, '')}"
    )


def error_in_callers_transaction(
    exc: sa.exc.DBAPIError, what: str, outcome: str = "nothing was handed out"
) -> SequenceAllocationError:
    """The SeqKeysError for ``exc``, raised by a statement in a transaction of the caller's.

    Raise it ``from exc``. Never retried here: a deadlock or serialization
    failure has ended that transaction, and only its owner can run it again.
    """
    setting = lock_timeout_setting(exc)
    if setting is not None:
        return _lock_timeout_error(setting, what, outcome, callers=True)
    if is_transient(exc):
        advice = (
            "a deadlock, serialization failure or lost connection ends the transaction "
            "(the server rolled it back or aborted it): roll it back and run it again"
        )
    else:
        advice = "roll the transaction back, and fix what the database error (the cause) names"
    return SequenceAllocationError(
        f"{what} failed in the caller's transaction ({describe(exc)}); {outcome}. "
        f"The library does not retry a transaction it does not own: {advice}"
    )


def error_not_retried(
    exc: BaseException, what: str, outcome: str = "nothing was handed out"
) -> SequenceAllocationError:
    """The SeqKeysError for ``exc``, raised by one statement that is not retried (a ``nextval``).

    Raise it ``from exc``. Example: ``raise error_not_retried(exc, what) from exc``.
    """
    setting = lock_timeout_setting(exc)
    if setting is not None and isinstance(exc, sa.exc.DBAPIError):
        return _lock_timeout_error(setting, what, outcome, callers=False)
    return SequenceAllocationError(
        f"{what} failed ({describe(exc)}); {outcome}. Fix what the database error (the "
        "cause) names, then try again; in a transaction, roll it back first"
    )


#: what each engine says when a sequence has no value left (PostgreSQL's
#: SQLSTATE; MariaDB ER_SEQUENCE_RUN_OUT; Oracle ORA-08004; SQL Server 11728;
#: Spanner's FAILED_PRECONDITION behind the dbapi's bare IntegrityError)
_RAN_OUT_SQLSTATES = frozenset({"2200H"})
_RAN_OUT_MYSQL_CODES = frozenset({4084})
_RAN_OUT_HINTS = ("ora-08004", "11728", "is exhausted")


def sequence_ran_out(exc: BaseException) -> bool:
    """True when ``exc`` says a native sequence has no value left."""
    for orig in _origins(exc):
        if _sqlstate(orig) in _RAN_OUT_SQLSTATES or mysql_error_code(orig) in _RAN_OUT_MYSQL_CODES:
            return True
        if any(hint in str(orig).lower() for hint in _RAN_OUT_HINTS):
            return True
    return False


def statement_errors() -> tuple[type[BaseException], ...]:
    """What one statement on a sequence fails with: SQLAlchemy's wrapped driver errors, and
    Google's API errors, which some sqlalchemy-spanner releases let through unwrapped."""
    google = sys.modules.get("google.api_core.exceptions")
    if google is None:
        return (sa.exc.DBAPIError,)
    return (sa.exc.DBAPIError, google.GoogleAPIError)


def sequence_error(exc: BaseException, name: str, what: str) -> SeqKeysError:
    """The SeqKeysError for a native sequence's ``nextval`` that failed (not retried).

    Raise it ``from exc``: :class:`~sqlalchemy_seqkeys.SequenceExhaustedError`
    where the sequence has no value left, else what :func:`error_not_retried`
    says (a lock timeout, any other database error).
    """
    if sequence_ran_out(exc):
        return SequenceExhaustedError(
            f"sequence {name!r} has no value left (its MAXVALUE, or a skip range that covers "
            "the rest); nothing was handed out. Use a new sequence"
        )
    return error_not_retried(exc, what)


def retrying(
    attempt: Callable[[], T],
    *,
    what: str,
    outcome: str = "nothing was handed out",
    attempts: int = 6,
    base_delay: float = 0.005,
    max_delay: float = 0.5,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Call ``attempt`` (a transaction of its own) until it returns, retrying transient errors.

    Backoff is exponential with full jitter, waited out with ``sleep``: inside
    an asyncio engine's greenlet that must be one that lets the event loop
    run (``asyncio.sleep`` awaited through the greenlet), never ``time.sleep``.
    A lock-wait timeout raises
    :class:`~sqlalchemy_seqkeys.SequenceLockTimeoutError` at once; after
    ``attempts`` transient failures, or at the first other database error,
    :class:`~sqlalchemy_seqkeys.SequenceAllocationError`; each keeps the
    database error as its cause. Other exceptions pass through.
    """
    errors = statement_errors()
    for number in range(1, attempts + 1):
        try:
            return attempt()
        except sa.exc.TimeoutError as exc:  # the pool's, not the server's: never retried
            raise SequenceAllocationError(
                f"{what} needs a connection of its own from the engine's pool, and none came "
                f"free within its pool_timeout ({exc}); {outcome}. Size the pool (pool_size + "
                "max_overflow) above the number of threads that insert at once (twice that "
                "for mode='separate'), or use mode='in_transaction'"
            ) from exc
        except errors as exc:
            setting = lock_timeout_setting(exc)
            if setting is not None:
                raise _lock_timeout_error(setting, what, outcome, callers=False) from exc
            if not is_transient(exc):
                raise SequenceAllocationError(
                    f"{what} failed ({describe(exc)}); {outcome}. Fix what the database "
                    "error (the cause) names"
                ) from exc
            if number == attempts:
                raise SequenceAllocationError(
                    f"{what} failed {attempts} times with transient errors (deadlocks, "
                    f"serialization failures, lost connections; last: {describe(exc)}); "
                    f"{outcome}. Check the database's health and load, then try again"
                ) from exc
            sleep(backoff(number, base_delay, max_delay))
    raise AssertionError("unreachable")  # pragma: no cover
