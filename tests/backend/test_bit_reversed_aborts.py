"""BitReversedSequence.next_value(s) with an Engine: its own transaction runs again after an abort.

On Spanner a read-write transaction may be aborted at any statement or at its COMMIT (the
emulator aborts all but one of the transactions running at once); the dbapi replays it, and
as a sequence gives new values on the replay, raises ``RetryAborted``. The values of an
aborted transaction were never handed out, so with an Engine (a transaction of the
library's own) the whole transaction runs again; what still fails is a
SequenceAllocationError with the database error as its cause. A Connection's transaction is
the caller's: never run again here.

The aborts are made where the real ones come from: the dialect's ``do_commit`` and
``do_execute`` raise the dbapi's ``RetryAborted`` (a commit that fails this way has ended
the transaction: it is rolled back first), which SQLAlchemy wraps as it wraps the real one.
The threaded test makes the emulator abort transactions of its own accord.
"""

from __future__ import annotations

import collections
import sqlite3
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import (
    BitReversedSequence,
    SeqKeysError,
    SequenceAllocationError,
    reverse_bits,
    sequences_table,
)
from tests._faults_inject import failing, retry_aborted

pytestmark = pytest.mark.backend

START = 100


@pytest.fixture(params=[1, 5], ids=["one_by_one", "blocks"])
def sequence(request: pytest.FixtureRequest, spanner_engine: Engine) -> Iterator[Any]:
    made = BitReversedSequence(
        f"seqkeys_br_abort_{request.param}", start=START, batch_size=request.param
    )
    made.drop(spanner_engine, checkfirst=True)
    made.create(spanner_engine)
    try:
        yield made
    finally:
        made.drop(spanner_engine, checkfirst=True)


def check_values(values: list[int]) -> None:
    assert len(set(values)) == len(values)
    assert all(reverse_bits(v) >= START for v in values)


def test_an_aborted_commit_runs_its_own_transaction_again(
    spanner_engine: Engine, sequence: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    commits = failing(
        monkeypatch,
        spanner_engine,
        "do_commit",
        lambda n: n in (1, 3),
        retry_aborted,
        roll_back=True,
    )
    values = sequence.next_values(spanner_engine, 3)
    values.append(sequence.next_value(spanner_engine))
    assert commits == [1, 2, 3, 4]  # each call: aborted once, then committed
    check_values(values)
    monkeypatch.undo()
    check_values(values + sequence.next_values(spanner_engine, 20))


def test_an_aborted_statement_runs_the_whole_transaction_again(
    spanner_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    sequence = BitReversedSequence("seqkeys_br_abort_statement", start=START)
    sequence.drop(spanner_engine, checkfirst=True)
    sequence.create(spanner_engine)
    try:
        # the second value's statement is aborted: the dbapi's replay of the first one
        # got another value; the values of the whole transaction are taken again
        statements = failing(
            monkeypatch, spanner_engine, "do_execute", lambda n: n == 2, retry_aborted
        )
        values = sequence.next_values(spanner_engine, 3)
        assert len(statements) == 5
        check_values(values)
        monkeypatch.undo()
        check_values(values + sequence.next_values(spanner_engine, 5))
    finally:
        sequence.drop(spanner_engine, checkfirst=True)


def test_aborts_that_go_on_are_a_sequence_allocation_error(
    spanner_engine: Engine, sequence: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    commits = failing(
        monkeypatch, spanner_engine, "do_commit", lambda n: True, retry_aborted, roll_back=True
    )
    with pytest.raises(SequenceAllocationError, match="6 times with transient errors") as info:
        sequence.next_values(spanner_engine, 2)
    assert len(commits) == 6
    cause = info.value.__cause__
    assert isinstance(cause, sa.exc.OperationalError)
    assert type(cause.orig).__name__ == "RetryAborted"
    assert sequence.name in str(info.value)


def test_the_callers_transaction_is_never_run_again(
    spanner_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    sequence = BitReversedSequence("seqkeys_br_abort_callers", start=START, batch_size=3)
    sequence.drop(spanner_engine, checkfirst=True)
    sequence.create(spanner_engine)
    try:
        with spanner_engine.connect() as conn:
            statements = failing(
                monkeypatch, spanner_engine, "do_execute", lambda n: True, retry_aborted
            )
            with pytest.raises(SequenceAllocationError, match="caller's transaction") as info:
                sequence.next_value(conn)
        assert statements == [1]
        assert isinstance(info.value.__cause__, sa.exc.OperationalError)
        assert "roll it back and run it again" in str(info.value)
    finally:
        monkeypatch.undo()
        sequence.drop(spanner_engine, checkfirst=True)


def test_threads_on_the_emulator_get_unique_values_and_no_raw_error(
    spanner_engine: Engine, sequence: Any
) -> None:
    """The emulator aborts all but one of the transactions running at once."""
    got: list[int] = []
    errors: collections.Counter[str] = collections.Counter()

    def work() -> None:
        for _ in range(8):
            try:
                got.extend(sequence.next_values(spanner_engine, 2))
                got.append(sequence.next_value(spanner_engine))
            except Exception as exc:  # counted, then asserted on
                raw = "" if isinstance(exc, SeqKeysError) else "raw "
                errors[f"{raw}{type(exc).__name__}: {str(exc)[:200]}"] += 1

    threads = [threading.Thread(target=work) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(240)
    assert not any(t.is_alive() for t in threads)
    assert not errors
    assert len(got) == 6 * 8 * 3
    check_values(got)


def test_sqlite_runs_its_own_transaction_again_after_a_busy_commit(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the counter is a row of the sequences table, in the transaction itself."""
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'aborts.db'}")
    try:
        metadata = sa.MetaData()
        sequences_table(metadata)
        metadata.create_all(engine)
        sequence = BitReversedSequence("seqkeys_br_busy", start=START)
        sequence.create(engine)
        commits = failing(
            monkeypatch,
            engine,
            "do_commit",
            lambda n: n == 1,
            lambda: sqlite3.OperationalError("database is locked"),
            roll_back=True,
        )
        values = sequence.next_values(engine, 3)
        assert commits == [1, 2]
        # the aborted transaction's values went back with it: no gap here
        assert values == [reverse_bits(c) for c in range(START, START + 3)]
    finally:
        engine.dispose()
