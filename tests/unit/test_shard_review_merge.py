"""An INSERT with ``.values()`` executed with parameters: the shard is hashed from the value
SQLAlchemy stores, which the library reads without evaluating anything. A callable bindparam
of a hashed column is refused unless the parameters give its value (the library never calls
it: SQLAlchemy would call it again and store another value, under a wrong shard); one of a
column that is not hashed is called once per row, by SQLAlchemy alone; and a statement whose
``.values()`` has no hashed or shard column is not compiled by the library at all.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import mysql, postgresql, sqlite

from sqlalchemy_seqkeys import InvalidShardError, shard, shard_of
from sqlalchemy_seqkeys._compat import insert_bind_name, insert_values
from tests.unit.test_shard_review_values import review_logs, stored

pytest.importorskip("farmhash")

__all__ = ["review_logs"]  # the ``logs`` fixture, taken by importing it

Logs = tuple[sa.Engine, sa.Table]


def counter(start: int = 100) -> tuple[Callable[[], int], list[int]]:
    """A callable that gives 100, 101, ... and the list of the values it gave."""
    given: list[int] = []
    numbers = itertools.count(start)

    def call() -> int:
        given.append(next(numbers))
        return given[-1]

    return call, given


def test_a_callable_of_a_hashed_column_without_its_value_in_the_parameters_is_refused(
    logs: Logs,
) -> None:
    engine, table = logs
    call, given = counter()
    statement = table.insert().values(user_id=sa.bindparam("uid", callable_=call))
    for parameters in ({"note": "a"}, [{"note": "b"}, {"note": "c"}], None):
        with engine.begin() as conn, pytest.raises(InvalidShardError, match=r"'uid'.*parameters"):
            conn.execute(statement, parameters)
    assert given == []  # never called: SQLAlchemy would call it again, for another value
    assert stored(engine, table) == []


def test_a_callable_of_a_hashed_column_whose_value_the_parameters_give_is_that_value(
    logs: Logs,
) -> None:
    engine, table = logs
    call, given = counter()
    statement = table.insert().values(user_id=sa.bindparam("uid", callable_=call))
    with engine.begin() as conn:
        conn.execute(statement, {"note": "a", "uid": 7})
        conn.execute(statement, [{"note": "b", "uid": 8}, {"note": "c", "uid": 9}])
    assert given == []
    assert stored(engine, table) == [
        (7, "a", shard_of("7", 16)),
        (8, "b", shard_of("8", 16)),
        (9, "c", shard_of("9", 16)),
    ]


def test_a_callable_of_a_column_not_hashed_is_called_once_per_row(logs: Logs) -> None:
    engine, table = logs
    call, given = counter()
    note = sa.bindparam("n", callable_=lambda: f"call {call()}")
    with engine.begin() as conn:
        conn.execute(table.insert().values(note=note), {"user_id": 5})
        conn.execute(table.insert().values(note=note), [{"user_id": 6}, {"user_id": 7}])
        conn.execute(table.insert().values(note=note, user_id=8))
    assert given == [100, 101, 102, 103]  # once per row, by SQLAlchemy
    assert stored(engine, table) == [
        (5, "call 100", shard_of("5", 16)),
        (6, "call 101", shard_of("6", 16)),
        (7, "call 102", shard_of("7", 16)),
        (8, "call 103", shard_of("8", 16)),
    ]


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Each INSERT the library compiles (SQLAlchemy's execution does not call .compile())."""
    compiled: list[Any] = []
    compile_ = sa.Insert.compile

    def counted(self: sa.Insert, *args: Any, **kw: Any) -> Any:
        compiled.append(self)
        return compile_(self, *args, **kw)

    monkeypatch.setattr(sa.Insert, "compile", counted)
    return compiled


def test_an_insert_is_not_compiled_to_merge_its_values_with_the_parameters(
    logs: Logs, compiles: list[Any]
) -> None:
    engine, table = logs
    with engine.begin() as conn:
        expression = table.insert().values(note=sa.func.lower("X"))  # as an ORM flush has it
        conn.execute(expression, {"user_id": 5})
        conn.execute(table.insert().values(note="y"), [{"user_id": 6}, {"user_id": 7}])
        conn.execute(table.insert().values(user_id=8), {"note": "z"})  # merged, not compiled
        named = table.insert().values(user_id=sa.bindparam("uid", 9))
        conn.execute(named, [{"note": "v"}, {"note": "w", "uid": 10}])
    assert compiles == []
    assert stored(engine, table) == [
        (5, "x", shard_of("5", 16)),
        (6, "y", shard_of("6", 16)),
        (7, "y", shard_of("7", 16)),
        (8, "z", shard_of("8", 16)),
        (9, "v", shard_of("9", 16)),
        (10, "w", shard_of("10", 16)),
    ]


def test_an_sql_expression_of_a_column_not_hashed_is_not_refused(logs: Logs) -> None:
    engine, table = logs
    with engine.begin() as conn:
        conn.execute(table.insert().values(user_id=5, note=sa.func.lower("X")))
    assert stored(engine, table) == [(5, "x", shard_of("5", 16))]


def test_an_sql_expression_of_a_hashed_column_is_still_refused(logs: Logs) -> None:
    engine, table = logs
    statement = table.insert().values(user_id=sa.func.abs(-5))
    for parameters in ({"note": "a"}, None):
        with engine.begin() as conn, pytest.raises(InvalidShardError, match="SQL expression"):
            conn.execute(statement, parameters)


def _keyed_table() -> sa.Table:
    return sa.Table(
        "keyed",
        sa.MetaData(),
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("UserId", sa.BigInteger, key="user_id"),
        sa.Column("a b", sa.BigInteger),
        sa.Column("p%q", sa.BigInteger),
        sa.Column("note", sa.String(20)),
    )


#: each way .values() gives a column its value (the keys are columns of _keyed_table)
VALUES: list[Callable[[sa.Table], dict[Any, Any]]] = [
    lambda t: {"user_id": 5},
    lambda t: {t.c.user_id: 5},
    lambda t: {"user_id": sa.literal(5)},
    lambda t: {"user_id": sa.bindparam("uid", 5)},
    lambda t: {"user_id": sa.bindparam("uid", 5, unique=True)},
    lambda t: {"user_id": sa.bindparam("user_id", 5)},
    lambda t: {"user_id": sa.bindparam(None, 5)},
    lambda t: {"user_id": sa.bindparam("uid", callable_=lambda: 5)},
    lambda t: {"a b": 5},
    lambda t: {"p%q": 5},
    lambda t: {"a b": sa.bindparam("x y", 5)},
    lambda t: {"user_id": 5, "note": sa.bindparam("user_id_1", "n")},
]


@pytest.mark.parametrize("values", VALUES)
@pytest.mark.parametrize(
    "dialect", [sqlite.dialect(), postgresql.dialect(), mysql.dialect()], ids=lambda d: d.name
)
def test_the_name_the_parameters_give_a_value_under_is_sqlalchemys(
    values: Callable[[sa.Table], dict[Any, Any]], dialect: sa.Dialect
) -> None:
    """The library names each bind of .values() without compiling (a bindparam with a name of
    its own: that name; a plain value, a literal, a unique bindparam: the column's key), as
    SQLAlchemy's compiled INSERT names it, whose parameters are looked up by it."""
    table = _keyed_table()
    statement = table.insert().values(values(table))
    for column_keys in ([], ["note"], ["user_id", "a b"]):
        compiled = statement.compile(dialect=dialect, column_keys=column_keys)
        assert isinstance(compiled, sa.sql.compiler.SQLCompiler)
        names = {bind.key: name for bind, name in compiled.bind_names.items()}
        for key, bind in (insert_values(statement) or {}).items():
            assert isinstance(bind, sa.BindParameter)
            named = insert_bind_name(statement, shard._value_key(key), bind, dialect)
            assert named == names[bind.key], (key, bind)


def test_the_parameters_override_values_as_in_sqlalchemy(logs: Logs) -> None:
    """A parameter named as the bind wins; the stored shard is the stored user_id's."""
    engine, table = logs
    parameter_sets: list[dict[str, Any]] = [
        {"note": "a"},
        {"note": "b", "user_id": 8},
        {"note": "c", "uid": 9},
        {"note": "d", "uid_1": 10},
        {"note": "e", "user_id": 8, "uid": 9},
    ]
    with engine.begin() as conn:
        for values in VALUES[:6]:
            statement = table.insert().values(values(table))
            for parameters in parameter_sets:
                conn.execute(statement, parameters)
                conn.execute(statement, [parameters, parameters])
    rows = stored(engine, table)
    assert len(rows) == 6 * 5 * 3
    assert {user_id for user_id, _, _ in rows} == {5, 8, 9}
    assert all(row_shard == shard_of(str(user_id), 16) for user_id, _, row_shard in rows)


def test_an_anonymous_bind_of_a_hashed_column_is_refused_when_the_parameters_may_override_it(
    logs: Logs,
) -> None:
    """SQLAlchemy names an anonymous bindparam(None, 5) of .values() param_1, or the column's
    key when its statement cache holds an INSERT with a plain value there: the parameter
    user_id overrides it or not. The library refuses to guess; without it, its value."""
    engine, table = logs
    statement = table.insert().values(user_id=sa.bindparam(None, 5))
    with engine.begin() as conn:
        conn.execute(statement, {"note": "a"})
        for parameters in ({"note": "b", "user_id": 8}, {"note": "c", "param_1": 9}):
            with pytest.raises(InvalidShardError, match="anonymous"):
                conn.execute(statement, parameters)
    assert stored(engine, table) == [(5, "a", shard_of("5", 16))]


def test_a_bindparam_without_a_value_is_left_to_sqlalchemy(logs: Logs) -> None:
    engine, table = logs
    statement = table.insert().values(user_id=sa.bindparam("uid"))
    with engine.begin() as conn:
        with pytest.raises(sa.exc.StatementError, match=r"A value is required.*'uid'"):
            conn.execute(statement, {"note": "a", "user_id": 3})  # SQLAlchemy's own error
        with pytest.raises(InvalidShardError, match="'user_id', which has no value"):
            conn.execute(statement, {"note": "b"})
        conn.execute(statement, {"note": "c", "uid": 4})
    assert stored(engine, table) == [(4, "c", shard_of("4", 16))]
