"""Which errors the sequence allocations retry, and how often."""

from __future__ import annotations

import pymysql
import pytest
import sqlalchemy as sa
from google.cloud.spanner_dbapi.exceptions import RetryAborted

from sqlalchemy_seqkeys import SequenceAllocationError
from sqlalchemy_seqkeys.sequences._retry import is_transient, retrying


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

    with pytest.raises(sa.exc.OperationalError):
        retrying(broken, what="allocating")
    assert permanent == [1]
