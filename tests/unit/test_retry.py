"""Which errors the sequence allocations retry, and how often."""

from __future__ import annotations

import asyncmy.errors
import google.api_core.exceptions as google_errors
import pymysql
import pytest
import sqlalchemy as sa
from google.cloud.spanner_dbapi.exceptions import RetryAborted

from sqlalchemy_seqkeys import SequenceAllocationError, SequenceLockTimeoutError
from sqlalchemy_seqkeys.sequences._retry import (
    describe,
    error_in_callers_transaction,
    is_transient,
    lock_timeout_setting,
    retrying,
)


def wrap(orig: BaseException, invalidated: bool = False) -> sa.exc.DBAPIError:
    return sa.exc.OperationalError(
        "UPDATE sequences ...", {}, orig, connection_invalidated=invalidated
    )


class Psycopg3Error(Exception):
    sqlstate = "40001"


class Psycopg2Error(Exception):
    pgcode = "40P01"


@pytest.mark.parametrize(
    "orig",
    [
        Psycopg3Error("could not serialize access"),
        Psycopg2Error("deadlock detected"),
        Exception({"C": "40001", "M": "serialization failure"}),  # pg8000's form
        pymysql.err.OperationalError(1213, "Deadlock found when trying to get lock"),
        pymysql.err.OperationalError(2013, "Lost connection to MySQL server"),
        RetryAborted("The transaction was aborted and could not be retried"),
        Exception("database is locked"),
    ],
)
def test_transient_errors(orig: BaseException) -> None:
    assert is_transient(wrap(orig))


@pytest.mark.parametrize(
    "orig",
    [
        Exception("syntax error"),
        pymysql.err.ProgrammingError(1146, "Table 'test.sequences' doesn't exist"),
        Exception(1213, "not a MySQL driver, so 1213 means nothing"),
    ],
)
def test_permanent_errors(orig: BaseException) -> None:
    assert not is_transient(wrap(orig))
    assert not is_transient(ValueError("not a database error"))


def test_dropped_connection_is_transient() -> None:
    assert is_transient(wrap(Exception("server closed the connection"), invalidated=True))


def test_retrying_gives_up_after_a_bounded_number_of_attempts() -> None:
    calls = []

    def always_deadlocks() -> int:
        calls.append(1)
        raise wrap(Psycopg3Error("deadlock"))

    with pytest.raises(SequenceAllocationError, match="failed 3 times with transient errors"):
        retrying(always_deadlocks, what="allocating", attempts=3, base_delay=0.0001)
    assert len(calls) == 3


def test_retrying_returns_after_a_transient_failure_and_never_retries_others() -> None:
    outcomes: list[BaseException | int] = [wrap(Psycopg3Error("x")), 42]

    def flaky() -> int:
        outcome = outcomes.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    assert retrying(flaky, what="allocating", base_delay=0.0001) == 42
    permanent = [wrap(Exception("syntax error")), 1]

    def broken() -> int:
        raise permanent.pop(0)  # type: ignore[misc]

    with pytest.raises(SequenceAllocationError, match="syntax error") as raised:
        retrying(broken, what="allocating")
    assert permanent == [1]
    assert isinstance(raised.value.__cause__, sa.exc.OperationalError), "the cause is kept"


def test_a_bare_google_abort_is_retried_and_other_google_errors_are_worded() -> None:
    # sqlalchemy-spanner lets Google's errors through unwrapped in places (a COMMIT)
    assert is_transient(google_errors.Aborted("Transaction was aborted."))
    outcomes: list[BaseException | int] = [google_errors.Aborted("aborted"), 7]

    def aborted_once() -> int:
        outcome = outcomes.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    assert retrying(aborted_once, what="allocating", base_delay=0.0001) == 7

    def refused() -> int:
        raise google_errors.InvalidArgument("Table not found: sequences")

    with pytest.raises(SequenceAllocationError, match="Table not found: sequences") as raised:
        retrying(refused, what="allocating")
    assert isinstance(raised.value.__cause__, google_errors.InvalidArgument)
    assert not is_transient(google_errors.InvalidArgument("no"))


class LockNotAvailableError(Exception):
    sqlstate = "55P03"  # psycopg 3's, after PostgreSQL's lock_timeout


@pytest.mark.parametrize(
    ("orig", "setting"),
    [
        (
            pymysql.err.OperationalError(1205, "Lock wait timeout exceeded"),
            "innodb_lock_wait_timeout",
        ),
        (
            asyncmy.errors.OperationalError(1205, "Lock wait timeout exceeded"),
            "innodb_lock_wait_timeout",
        ),
        (LockNotAvailableError("canceling statement due to lock timeout"), "lock_timeout"),
    ],
)
def test_a_lock_wait_timeout_is_raised_at_once_naming_the_setting(
    orig: BaseException, setting: str
) -> None:
    """A retry would wait the whole timeout again: one wait, one error."""
    calls = []

    def locked() -> int:
        calls.append(1)
        raise wrap(orig)

    assert lock_timeout_setting(wrap(orig)) == setting
    assert not is_transient(wrap(orig))
    with pytest.raises(SequenceLockTimeoutError, match=f"'seq'.*\\({setting}\\)") as raised:
        retrying(locked, what="allocating from sequence 'seq'", base_delay=0.0001)
    assert calls == [1]
    assert raised.value.__cause__ is not None


def test_asyncmy_deadlocks_are_retried() -> None:
    assert is_transient(wrap(asyncmy.errors.OperationalError(1213, "Deadlock found")))


def test_nothing_is_retried_in_the_callers_transaction() -> None:
    deadlock = error_in_callers_transaction(
        wrap(pymysql.err.OperationalError(1213, "Deadlock found")), "allocating from 'seq'"
    )
    assert type(deadlock) is SequenceAllocationError
    assert "roll it back and run it again" in str(deadlock)
    locked = error_in_callers_transaction(
        wrap(LockNotAvailableError("lock timeout")), "allocating from 'seq'"
    )
    assert isinstance(locked, SequenceLockTimeoutError)
    assert "the caller's to roll back" in str(locked)
    assert "lock_timeout" in str(locked)


def test_describe_completes_an_empty_driver_message_from_the_error_behind_it() -> None:
    """Spanner's dbapi raises ProgrammingError([]) over the server's error: messages
    said "failed (ProgrammingError: [])" and lost the reason."""

    class ProgrammingError(Exception):
        pass

    try:
        try:
            raise RuntimeError("Current transaction type is ReadOnly: get_next_sequence_value")
        except RuntimeError:
            raise ProgrammingError([])  # noqa: B904 - the server's error as its __context__
    except ProgrammingError as orig:
        wrapped = sa.exc.DBAPIError("SELECT 1", None, orig)
    said = describe(wrapped)
    assert said.startswith("ProgrammingError: RuntimeError: Current transaction type is ReadOnly")
