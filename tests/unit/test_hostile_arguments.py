"""Every public name, given a bad argument, raises a SeqKeysError: property-based.

The table ``TARGETS`` says, for every name in ``sqlalchemy_seqkeys.__all__``,
every public method of every public class and every seqkeys Alembic
operation, how to call it with valid arguments and which kind of bad value
each parameter must refuse. Hypothesis then calls each target with one
parameter replaced by a generated bad value and fails on

- any exception that is not a ``SeqKeysError`` (Python's ``TypeError`` for a
  missing or unexpected argument is a wrong call signature, not a bad value,
  and no target here makes one), or
- a call that returns: the bad value was accepted.

``test_every_public_name_is_covered`` introspects the package, so a new
public name or parameter fails the suite until it is added here. Engines are
SQLite files (sync and aiosqlite); the Alembic operations run offline
(``as_sql``), where they validate their arguments before emitting anything.
"""

from __future__ import annotations

import asyncio
import atexit
import inspect
import io
import math
import re
import shutil
import tempfile
import uuid
import warnings
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, fields
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

import sqlalchemy_seqkeys as sk
from sqlalchemy_seqkeys import SeqKeysError
from sqlalchemy_seqkeys._validate import shown
from sqlalchemy_seqkeys.alembic.ops import (
    ResyncBitReversedSequenceOp,
    ResyncBitReversedTableSequenceOp,
)
from sqlalchemy_seqkeys.bitreverse import MAX_BIT_REVERSED_BATCH
from sqlalchemy_seqkeys.pooled import MAX_ALLOCATION_SIZE
from sqlalchemy_seqkeys.sequences.generators import MAX_BATCH_SIZE

UTC = timezone.utc
BIG = 2**63 - 1

# -- kinds of bad values ---------------------------------------------------------------

#: values of the wrong type for almost anything
_JUNK: list[object] = [None, object(), ["x"], {"a": 1}]
_HUGE = 10**400  # float(_HUGE) overflows


def _bad(*fixed: object, extra: SearchStrategy[Any] | None = None) -> SearchStrategy[Any]:
    fixed_st = st.sampled_from(list(fixed))
    return fixed_st if extra is None else st.one_of(fixed_st, extra)


def _with_nul(max_len: int) -> SearchStrategy[str]:
    text = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=8)
    return st.tuples(text, text).map(lambda p: f"{p[0]}\x00{p[1]}"[:max_len])


def name(max_len: int = 128, *, nullable: bool = False) -> SearchStrategy[Any]:
    """Bad names: wrong types, empty, a NUL byte, a lone surrogate, longer than ``max_len``."""
    junk = [v for v in _JUNK if v is not None or not nullable]
    long = st.text(st.characters(codec="ascii", categories=["L"]), min_size=max_len + 1).map(
        lambda s: s + "x" * (max_len + 1 - len(s))
    )
    return st.one_of(
        st.sampled_from([*junk, "", 5, 1.5, True, b"name", "x" * 10_000, "a\ud800b"]),
        _with_nul(max_len),
        long,
    )


def integer(lo: int | None = None, hi: int | None = None) -> SearchStrategy[Any]:
    """Bad ints: wrong types, floats, NaN, infinities, bools, out of [lo, hi], huge."""
    fixed: list[object] = [*_JUNK, "1", 1.0, 1.5, math.nan, math.inf, -math.inf, True, False]
    fixed += [_HUGE, -_HUGE] if hi is None and lo is None else []
    if hi is not None:
        fixed.append(_HUGE)
    if lo is not None:
        fixed.append(-_HUGE)
    parts: list[SearchStrategy[Any]] = [st.sampled_from(fixed)]
    parts.append(st.floats(allow_nan=True, allow_infinity=True))
    if lo is not None:
        parts.append(st.integers(max_value=lo - 1))
    if hi is not None:
        parts.append(st.integers(min_value=hi + 1))
    return st.one_of(parts)


def seconds(hi: float = 365 * 86400.0) -> SearchStrategy[Any]:
    """Bad durations: wrong types, zero, negative, NaN, infinities, bools, huge."""
    return st.one_of(
        st.sampled_from(
            [*_JUNK, "30", 0, 0.0, -1, -0.5, math.nan, math.inf, -math.inf, True, _HUGE, 1e300]
        ),
        st.floats(max_value=0.0),
        st.floats(min_value=hi * 2, allow_infinity=False),
    )


def aware_datetime(*, nullable: bool = False) -> SearchStrategy[Any]:
    """Bad instants: naive datetimes, dates, strings, numbers."""
    junk = [v for v in _JUNK if v is not None or not nullable]
    return st.one_of(
        st.sampled_from([*junk, "2024-01-01T00:00:00Z", 1.5, date(2024, 1, 1), True]),
        st.datetimes(),  # naive
    )


def flag(*, nullable: bool = False) -> SearchStrategy[Any]:
    """Bad booleans: anything but True and False."""
    junk = [v for v in _JUNK if v is not None or not nullable]
    return st.sampled_from([*junk, "yes", "", 0, 1, 2.5])


def guid() -> SearchStrategy[Any]:
    """Bad GUIDs: wrong types, garbage text, wrong-length bytes and strings."""
    return st.one_of(
        st.sampled_from([*_JUNK, "garbage", "", 5, 1.5, True, b"\x01" * 15, b"\x01" * 17]),
        st.binary(max_size=40).filter(lambda b: len(b) != 16),
        st.text(max_size=40).filter(lambda s: not _parses_as_uuid(s)),
    )


def _parses_as_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


def choice() -> SearchStrategy[Any]:
    """Bad enum values: unknown strings, wrong types."""
    return st.one_of(
        st.sampled_from([*_JUNK, "", "nonexistent", "AS STRING", 5, 1.5, True]),
        st.text(max_size=12).filter(lambda s: s not in _KNOWN_CHOICES),
    )


_KNOWN_CHOICES = {
    *(m.value for m in sk.CombLayout),
    *(m.value for m in sk.SequenceMode),
    "wait",
    "raise",
    "sqlite",
    "postgresql",
    "mysql",
    "mariadb",
    "mssql",
    "oracle",
    "spanner+spanner",
    "spanner",
}


def dialect_or_name() -> SearchStrategy[Any]:
    return st.sampled_from([*_JUNK, "", "nonexistent", 5, True, "sqlite "])


def not_callable(*, nullable: bool = True) -> SearchStrategy[Any]:
    junk = [v for v in _JUNK if not callable(v) and (v is not None or not nullable)]
    return st.sampled_from([*junk, "time.time", 5, 1.5, True])


def clock() -> SearchStrategy[Any]:
    """Bad clocks: not callable, or callables that return no int of milliseconds."""
    returns = [None, "1", 1.5, math.nan, True, -1, _HUGE]
    return st.one_of(not_callable(), st.sampled_from(returns).map(lambda v: lambda: v))


def sync_bind() -> SearchStrategy[Any]:
    return st.sampled_from([*_JUNK, "sqlite://", 5, "async"])


def async_bind() -> SearchStrategy[Any]:
    return st.sampled_from([*_JUNK, "sqlite+aiosqlite://", 5, "sync"])


def metadata(*, nullable: bool = False) -> SearchStrategy[Any]:
    junk = [v for v in _JUNK if v is not None or not nullable]
    return st.sampled_from([*junk, "metadata", 5])


def skip_range() -> SearchStrategy[Any]:
    return st.sampled_from(
        [
            (5, 1),
            (-1, 3),
            "1-3",
            (1,),
            (1, 2, 3),
            (1.5, 2),
            (True, 3),
            (1, 2**63),
            (1, _HUGE),
            (math.nan, 3),
            5,
            object(),
        ]
    )


def text_or_bytes() -> SearchStrategy[Any]:
    return st.sampled_from([*_JUNK, 5, 1.5, True, uuid.uuid4()])


# -- what is called, with what ---------------------------------------------------------

_DIR = Path(tempfile.mkdtemp(prefix="seqkeys-hostile-"))
atexit.register(shutil.rmtree, _DIR, ignore_errors=True)
_URL = f"sqlite:///{_DIR / 'db.sqlite'}"


def _setup() -> sa.Engine:
    engine = sa.create_engine(_URL, poolclass=sa.NullPool)
    md = sa.MetaData()
    sk.sequences_table(md)
    sa.Table("data", md, sa.Column("id", sa.BigInteger, primary_key=True))
    md.create_all(engine)
    with engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM sequences"))
        conn.execute(sa.text("INSERT INTO sequences (name, next_value) VALUES ('s', 1)"))
        conn.execute(sa.text("INSERT INTO sequences (name, next_value) VALUES ('p', 1)"))
        conn.execute(sa.text("INSERT INTO sequences (name, next_value) VALUES ('b', 1)"))
        conn.execute(sa.text("INSERT INTO data (id) VALUES (7)"))
    return engine


ENGINE = _setup()


def _async_engine() -> AsyncEngine:
    return create_async_engine(f"sqlite+aiosqlite:///{_DIR / 'db.sqlite'}", poolclass=sa.NullPool)


def _resolve(value: object) -> object:
    """Stand-ins that need the running loop or the engine made at call time."""
    if value == "async":
        return _async_engine()
    if value == "sync":
        return ENGINE
    return value


@dataclass
class Target:
    """One public callable: ``call(**valid)`` works; each ``bad`` kind must be refused."""

    label: str
    call: Callable[..., Any]
    valid: Callable[[], dict[str, Any]]
    bad: dict[str, SearchStrategy[Any]]


def _run(call: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    kwargs = {k: _resolve(v) if isinstance(v, str) else v for k, v in kwargs.items()}
    if inspect.iscoroutinefunction(call):
        return asyncio.run(call(**kwargs))
    result = call(**kwargs)
    if inspect.isawaitable(result):

        async def wait(awaitable: Awaitable[Any] = result) -> Any:
            return await awaitable

        return asyncio.run(wait())
    return result


def _mint(layout: object = None, **kw: Any) -> Any:
    snowflake = sk.Snowflake(1, **kw) if layout is None else sk.Snowflake(1, layout=layout, **kw)
    return snowflake.next_id()


def _lease(**kw: Any) -> sk.WorkerLease:
    return sk.WorkerLease(ENGINE, **kw).start()


def _lease_and_close(**kw: Any) -> int:
    lease = _lease(**kw)
    try:
        return lease.check()
    finally:
        lease.close()


async def _async_lease(engine: Any = "async", **kw: Any) -> int:
    lease = sk.AsyncWorkerLease(_resolve(engine), **kw)
    await lease.start()
    try:
        return lease.check()
    finally:
        await lease.aclose()


def _method(make: Callable[[], Any], name: str) -> Callable[..., Any]:
    """``make().name(**kwargs)``: a fresh valid instance each call."""

    def call(**kwargs: Any) -> Any:
        return getattr(make(), name)(**kwargs)

    call.__name__ = name
    return call


def _amethod(make: Callable[[], Any], name: str) -> Callable[..., Any]:
    async def call(**kwargs: Any) -> Any:
        return await getattr(make(), name)(**kwargs)

    call.__name__ = name
    return call


def _insert_with_comb_guid() -> Any:
    """new_comb_guid as SQLAlchemy calls it: with an INSERT's execution context."""
    t = sa.Table(
        "g",
        sa.MetaData(),
        sa.Column("id", sk.CombGuid(), primary_key=True, default=sk.new_comb_guid),
    )
    engine = sa.create_engine("sqlite://")
    t.create(engine)
    with engine.begin() as conn:
        return conn.execute(t.insert().returning(t.c.id)).scalar_one()


def _type_method(make: Callable[[], Any], name: str) -> Callable[..., Any]:
    """``make().name(value, dialect)``, as SQLAlchemy calls a column type (SQLite's dialect)."""

    def call(value: object) -> Any:
        return getattr(make(), name)(value, sa.create_engine("sqlite://").dialect)

    call.__name__ = name
    return call


def _op(name: str, dialect: str = "postgresql") -> Callable[..., Any]:
    """``op.<name>(**kwargs)`` in offline mode, as ``alembic upgrade --sql`` runs it."""
    from alembic.migration import MigrationContext
    from alembic.operations import Operations

    from sqlalchemy_seqkeys.alembic import register

    register()

    def call(**kwargs: Any) -> str:
        buf = io.StringIO()
        ctx = MigrationContext.configure(
            dialect_name=dialect, opts={"as_sql": True, "output_buffer": buf}
        )
        getattr(Operations(ctx), name)(**kwargs)
        return buf.getvalue()

    call.__name__ = name
    return call


_SEQ = 64  # the longest sequence name the sequences table holds
TICKS = 1 << 41
SEQUENCE_NAME = name(_SEQ)
IDENT = name()
SCHEMA = name(nullable=True)
LAYOUT = sk.SnowflakeLayout()


def _table_sequence(**kw: Any) -> sk.TableSequence:
    args: dict[str, Any] = {"mode": "separate", **kw}
    return sk.TableSequence("s", **args)


def _sync_and_async(
    label: str,
    call: Callable[..., Any],
    call_async: Callable[..., Any],
    valid: Callable[[], dict[str, Any]],
    bad: dict[str, SearchStrategy[Any]],
) -> list[Target]:
    """``label`` and ``label_async``, twins but for ``bind``: the SQLite ``ENGINE`` for the
    first, an ``AsyncEngine`` made at call time for the second; ``valid`` and ``bad`` are
    the other parameters, the same for both."""
    return [
        Target(label, call, lambda: {"bind": ENGINE, **valid()}, {"bind": sync_bind(), **bad}),
        Target(
            f"{label}_async",
            call_async,
            lambda: {"bind": "async", **valid()},
            {"bind": async_bind(), **bad},
        ),
    ]


def _function_and_twin(
    name: str, valid: Callable[[], dict[str, Any]], bad: dict[str, SearchStrategy[Any]]
) -> list[Target]:
    """``sk.<name>(bind, ...)`` and ``sk.<name>_async(bind, /, ...)`` (``_sync_and_async``)."""
    twin = getattr(sk, f"{name}_async")
    return _sync_and_async(name, getattr(sk, name), lambda bind, **kw: twin(bind, **kw), valid, bad)


#: each public sequence class with a fresh valid instance of it
_SEQUENCES: tuple[tuple[type, Callable[[], Any]], ...] = (
    (sk.TableSequence, _table_sequence),
    (sk.PooledSequence, lambda: sk.PooledSequence("p")),
    (sk.BitReversedSequence, lambda: sk.BitReversedSequence("b")),
)


def _sequence_methods(
    methods: tuple[str, ...],
    valid: Callable[[], dict[str, Any]],
    bad: dict[str, SearchStrategy[Any]],
    sequences: tuple[tuple[type, Callable[[], Any]], ...] = _SEQUENCES,
) -> list[Target]:
    """``Class.method(bind, ...)`` and ``Class.method_async(bind, ...)`` for every sequence
    class and method (``_sync_and_async``)."""
    return [
        target
        for cls, make in sequences
        for method in methods
        for target in _sync_and_async(
            f"{cls.__name__}.{method}",
            _method(make, method),
            _amethod(make, f"{method}_async"),
            valid,
            bad,
        )
    ]


def _fresh() -> str:
    return f"n{uuid.uuid4().hex[:16]}"


#: WorkerLease's and AsyncWorkerLease's parameters but the engine
_LEASE_BAD: dict[str, SearchStrategy[Any]] = {
    "ttl": seconds(),
    "table": IDENT,
    "max_worker_id": integer(0, BIG),
    "create_table": flag(),
    "clock": clock(),
    "max_skew": seconds(),
    "max_wait": seconds(),
}
#: the parameters of the ``*_bounds`` functions but the layout and the transform
_BOUNDS_BAD: dict[str, SearchStrategy[Any]] = {"start": aware_datetime(), "end": aware_datetime()}


def _january(**kw: Any) -> dict[str, Any]:
    """Valid ``*_bounds`` arguments: January 2024, and ``kw``."""
    return {
        "start": datetime(2024, 1, 1, tzinfo=UTC),
        "end": datetime(2024, 2, 1, tzinfo=UTC),
        **kw,
    }


#: the parameters a pooled sequence is made with, in all its spellings (the
#: factory, the class, the Alembic operations), but the ones only some have
_POOLED_BAD: dict[str, SearchStrategy[Any]] = {
    "name": SEQUENCE_NAME,
    "allocation_size": integer(1, MAX_ALLOCATION_SIZE),
    "start": integer(1, BIG - 1),
    "schema": SCHEMA,
    "table": IDENT,
}
#: the same for a bit-reversed sequence
_BIT_REVERSED_BAD: dict[str, SearchStrategy[Any]] = {
    "name": SEQUENCE_NAME,
    "start_with_counter": integer(1, BIG),
    "skip_range": skip_range(),
    "schema": SCHEMA,
    "table": IDENT,
}


#: the resync operations' arguments: a sequences-table row's, and a native sequence's


def resync_valid() -> dict[str, Any]:
    return {"name": "s", "table_name": "data", "column": "id"}


ROW_RESYNC_BAD: dict[str, SearchStrategy[Any]] = {
    "name": SEQUENCE_NAME,
    "table_name": IDENT,
    "column": IDENT,
    "schema": SCHEMA,
    "sequences_table": IDENT,
}
NATIVE_RESYNC_BAD = {**ROW_RESYNC_BAD, "sequence_schema": SCHEMA}

TARGETS: list[Target] = [
    # -- functions -----------------------------------------------------------------
    Target("reverse_bits", sk.reverse_bits, lambda: {"n": 5}, {"n": integer(0, BIG)}),
    Target(
        "rotate_digits",
        sk.rotate_digits,
        lambda: {"value": 123, "digits": 1},
        {"value": integer(0, BIG), "digits": integer(1, 18)},
    ),
    Target(
        "unrotate_digits",
        sk.unrotate_digits,
        lambda: {"value": 123, "digits": 1},
        {"value": integer(0, BIG), "digits": integer(1, 18)},
    ),
    Target(
        "farm_fingerprint", sk.farm_fingerprint, lambda: {"value": "a"}, {"value": text_or_bytes()}
    ),
    Target(
        "shard_of",
        sk.shard_of,
        lambda: {"value": "a", "shards": 4, "non_negative": False},
        {"value": text_or_bytes(), "shards": integer(1, BIG), "non_negative": flag()},
    ),
    Target(
        "fill_shard_columns",
        sk.fill_shard_columns,
        lambda: {"engine": ENGINE},
        {"engine": st.sampled_from([*_JUNK, "sqlite://", 5, sa.MetaData()])},
    ),
    Target(
        "spanner_string",
        sk.spanner_string,
        lambda: {"value": 5},
        {"value": st.sampled_from([None, 1.5, b"x", object(), datetime(2024, 1, 1), ["a"]])},
    ),
    Target(
        "spanner_shard_column",
        lambda name, columns, shards, non_negative: sk.spanner_shard_column(
            name, *columns, shards=shards, non_negative=non_negative
        ),
        lambda: {"name": "shard", "columns": ("a",), "shards": 4, "non_negative": False},
        {
            "name": IDENT,
            "columns": st.one_of(st.just(()), IDENT.map(lambda n: (n,))),
            "shards": integer(1, BIG),
            "non_negative": flag(),
        },
    ),
    Target(
        "new_comb",
        sk.new_comb,
        lambda: {"layout": "as_string", "at": None},
        {
            "layout": choice(),
            "at": st.one_of(
                aware_datetime(nullable=True),
                st.sampled_from([-1, 2**48, _HUGE, math.nan]),
                st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(1969, 12, 31)).map(
                    lambda d: d.replace(tzinfo=UTC)
                ),
            ),
        },
    ),
    Target(
        "comb_timestamp",
        sk.comb_timestamp,
        lambda: {"value": sk.new_comb("as_string"), "layout": "as_string"},
        {"value": guid(), "layout": choice()},
    ),
    Target("new_uuid7", sk.new_uuid7, dict, {}),
    Target(
        "uuid7_timestamp",
        sk.uuid7_timestamp,
        lambda: {"value": sk.new_uuid7()},
        {
            "value": st.one_of(
                guid(),
                st.sampled_from(
                    [
                        uuid.uuid4(),
                        uuid.UUID(int=(2**48 - 1) << 80 | 7 << 76 | 2 << 62),
                        uuid.UUID(int=(2**48 - 1) << 80 | 7 << 76 | 2 << 62 | 2**62 - 1),
                    ]
                ),
            )
        },
    ),
    Target("server_uuid7", sk.server_uuid7, dict, {}),
    Target("uuid7_bounds", sk.uuid7_bounds, _january, _BOUNDS_BAD),
    Target(
        "comb_bounds",
        sk.comb_bounds,
        lambda: _january(layout="as_string"),
        {**_BOUNDS_BAD, "layout": choice()},
    ),
    Target(
        "snowflake_bounds",
        sk.snowflake_bounds,
        lambda: _january(layout=None, transform=None),
        {
            **_BOUNDS_BAD,
            "layout": st.sampled_from(["as_string", 5, object(), True]),
            "transform": not_callable(),
        },
    ),
    Target(
        "sequences_table",
        sk.sequences_table,
        lambda: {"metadata": sa.MetaData(), "name": "sequences"},
        {"metadata": metadata(), "name": IDENT},
    ),
    Target(
        "workers_table",
        sk.workers_table,
        lambda: {"metadata": sa.MetaData(), "name": "seqkeys_workers"},
        {"metadata": metadata(), "name": IDENT},
    ),
    *_function_and_twin(
        "create_table_sequence",
        lambda: {"name": _fresh(), "start": 1, "table": "sequences"},
        {
            "name": SEQUENCE_NAME,
            "start": integer(0, BIG - 1),
            "table": IDENT,
            "checkfirst": flag(),
        },
    ),
    *_function_and_twin(
        "drop_table_sequence",
        lambda: {"name": "nonexistent", "table": "sequences", "checkfirst": True},
        {"name": SEQUENCE_NAME, "table": IDENT, "checkfirst": flag()},
    ),
    *_function_and_twin(
        "resync_table_sequence",
        lambda: {
            "name": "s",
            "table": "data",
            "column": "id",
            "schema": None,
            "sequences_table": "sequences",
        },
        {
            "name": SEQUENCE_NAME,
            "table": st.one_of(IDENT, st.just("no_such_table")),
            "column": st.one_of(IDENT, st.just("no_such_column")),
            "schema": SCHEMA,
            "sequences_table": st.one_of(IDENT, st.just("no_such_table")),
        },
    ),
    *_function_and_twin(
        "resync_pooled_sequence",
        lambda: {
            "name": "p",
            "table": "data",
            "column": "id",
            "schema": None,
            "sequence_schema": None,
            "sequences_table": "sequences",
        },
        {
            "name": SEQUENCE_NAME,
            "table": st.one_of(IDENT, st.just("no_such_table")),
            "column": st.one_of(IDENT, st.just("no_such_column")),
            "schema": SCHEMA,
            "sequence_schema": SCHEMA,
            "sequences_table": st.one_of(IDENT, st.just("no_such_table")),
        },
    ),
    Target(
        "pooled_sequence",
        sk.pooled_sequence,
        lambda: {"name": "p"},
        {
            **_POOLED_BAD,
            "batch_size": integer(1, MAX_ALLOCATION_SIZE),
            "metadata": metadata(nullable=True),
        },
    ),
    Target(
        "bit_reversed_sequence",
        sk.bit_reversed_sequence,
        lambda: {"name": "b"},
        {
            **_BIT_REVERSED_BAD,
            "start": integer(1, BIG),
            "batch_size": integer(1, MAX_BIT_REVERSED_BATCH),
            "metadata": metadata(nullable=True),
        },
    ),
    Target(
        "new_comb_guid",
        lambda context: (
            _insert_with_comb_guid() if context == "insert" else sk.new_comb_guid(context)
        ),
        lambda: {"context": "insert"},
        {"context": st.sampled_from([5, "ctx", object()])},
    ),
    # -- constructors --------------------------------------------------------------------
    Target(
        "TableSequence",
        sk.TableSequence,
        lambda: {"name": "s", "mode": "separate"},
        {
            "name": SEQUENCE_NAME,
            "mode": choice(),
            "batch_size": integer(1, MAX_BATCH_SIZE),
            "low_watermark": integer(0, MAX_BATCH_SIZE - 1),
            "start": integer(0, BIG),
            "table": IDENT,
            "refill_timeout": seconds(),
            "metadata": metadata(nullable=True),
        },
    ),
    Target(
        "PooledSequence",
        sk.PooledSequence,
        lambda: {"name": "p"},
        {
            **_POOLED_BAD,
            "batch_size": integer(1, MAX_ALLOCATION_SIZE),
            "metadata": metadata(nullable=True),
        },
    ),
    Target(
        "BitReversedSequence",
        sk.BitReversedSequence,
        lambda: {"name": "b"},
        {
            **_BIT_REVERSED_BAD,
            "start": integer(1, BIG),
            "batch_size": integer(1, MAX_BIT_REVERSED_BATCH),
            "metadata": metadata(nullable=True),
        },
    ),
    Target(
        "BitReversed",
        sk.BitReversed,
        lambda: {"source": sa.Sequence("b")},
        {
            "source": st.sampled_from([None, 5, "b", object()]),
            "skip_range": skip_range(),
        },
    ),
    Target(
        "ShardId",
        lambda columns, shards, non_negative: sk.ShardId(
            *columns, shards=shards, non_negative=non_negative
        ),
        lambda: {"columns": ("a",), "shards": 4, "non_negative": False},
        {
            "columns": st.one_of(st.just(()), IDENT.map(lambda n: (n,))),
            "shards": integer(1, BIG),
            "non_negative": flag(),
        },
    ),
    Target(
        "SnowflakeLayout",
        sk.SnowflakeLayout,
        dict,
        {
            "timestamp_bits": integer(1, 63),
            "worker_bits": integer(0, 62),
            "sequence_bits": integer(0, 62),
            "epoch": aware_datetime(),
            "time_unit": st.sampled_from(
                [None, 1, 1.5, "1ms", timedelta(0), timedelta(-1), timedelta(microseconds=1.5)]
            ),
            "allow_short_life": flag(),
        },
    ),
    Target(
        "SnowflakeLayout (overflowing fields)",
        lambda bits: sk.SnowflakeLayout(timestamp_bits=bits, worker_bits=0, sequence_bits=0),
        lambda: {"bits": 41},
        {"bits": st.integers(min_value=50, max_value=63)},
    ),
    Target(
        "Snowflake",
        lambda **kw: sk.Snowflake(**{"worker_id": 1, **kw}).next_id(),
        dict,
        {
            "worker_id": st.one_of(integer(0, 1023), st.just("lease")),
            "layout": st.sampled_from([5, "default", object(), True]),
            "on_clock_backwards": choice(),
            "max_backwards_ms": seconds(hi=86400_000.0).filter(lambda v: v != 0),
            "after_fork": not_callable(),
            "transform": not_callable(),
            "clock": clock(),
        },
    ),
    Target(
        "WorkerLease",
        lambda engine=ENGINE, **kw: (
            _lease_and_close(**kw) if engine is ENGINE else sk.WorkerLease(engine, **kw)
        ),
        dict,
        {"engine": sync_bind(), **_LEASE_BAD},
    ),
    Target("AsyncWorkerLease", _async_lease, dict, {"engine": async_bind(), **_LEASE_BAD}),
    Target(
        "CombGuid",
        sk.CombGuid,
        dict,
        {"binary": flag(), "native_uuid": flag()},
    ),
    Target(
        "CombGuidDefault",
        sk.CombGuidDefault,
        dict,
        {"layout": choice().filter(lambda v: v is not None)},
    ),
    Target("CombLayout", sk.CombLayout, lambda: {"value": "as_string"}, {"value": choice()}),
    Target("SequenceMode", sk.SequenceMode, lambda: {"value": "batch"}, {"value": choice()}),
    Target("ServerUuid7", sk.ServerUuid7, dict, {}),
    Target(
        "ServerUuid7 (arguments)",
        lambda clause=None: sk.ServerUuid7() if clause is None else sk.ServerUuid7(clause),
        lambda: {"clause": None},
        {"clause": st.sampled_from([5, "x", sa.literal(1)])},
    ),
    # -- methods ----------------------------------------------------------------------
    Target(
        "SnowflakeLayout.compose",
        LAYOUT.compose,
        lambda: {"ticks": 1, "worker_id": 1, "sequence": 1},
        {
            "ticks": integer(0, TICKS - 1),
            "worker_id": integer(0, 1023),
            "sequence": integer(0, 4095),
        },
    ),
    Target(
        "SnowflakeLayout.ticks_at",
        LAYOUT.ticks_at,
        lambda: {"instant": datetime(2024, 1, 1, tzinfo=UTC)},
        {
            "instant": st.one_of(
                aware_datetime(),
                st.sampled_from(
                    [datetime(2000, 1, 1, tzinfo=UTC), datetime(9999, 1, 1, tzinfo=UTC)]
                ),
            )
        },
    ),
    Target(
        "SnowflakeLayout.instant_of",
        LAYOUT.instant_of,
        lambda: {"ticks": 5},
        {"ticks": integer(0, TICKS - 1)},
    ),
    Target(
        "SnowflakeLayout.worker_from",
        LAYOUT.worker_from,
        lambda: {"datacenter": 1, "machine": 1},
        {
            "datacenter": integer(0, 31),
            "machine": integer(0, 31),
            "datacenter_bits": integer(0, 10),
        },
    ),
    Target(
        "Snowflake.bind",
        _method(lambda: sk.Snowflake(), "bind"),
        lambda: {"worker_id": 3},
        {"worker_id": integer(0, 1023)},
    ),
    Target(
        "Snowflake.decode",
        _method(lambda: sk.Snowflake(1), "decode"),
        lambda: {"value": sk.Snowflake(1).next_id()},
        {"value": integer(0, BIG)},
    ),
    Target("Snowflake.next_id", _method(lambda: sk.Snowflake(1), "next_id"), dict, {}),
    Target(
        "ShardId.of",
        lambda values: sk.ShardId("a", "b", shards=4).of(*values),
        lambda: {"values": (1, "x")},
        {
            "values": st.sampled_from(
                [(), (1,), (1, "x", 2), (None, "x"), (1.5, "x"), (object(), "x")]
            )
        },
    ),
    *[
        Target(
            f"CombGuidDefault.{method}",
            _method(lambda: sk.new_comb_guid, method),
            lambda: {"dialect": "sqlite"},
            {"dialect": dialect_or_name()},
        )
        for method in ("layout_for", "minter")
    ],
    Target(
        "CombGuidDefault.with_layout",
        _method(lambda: sk.new_comb_guid, "with_layout"),
        lambda: {"layout": "as_binary"},
        {"layout": choice()},
    ),
    *[
        Target(
            f"CombGuid.{method}{suffix}",
            _type_method(lambda binary=binary: sk.CombGuid(binary=binary), method),
            lambda valid=valid: {"value": valid()},
            {"value": guid().filter(lambda v: v is not None)},
        )
        for method, suffix, binary, valid in (
            ("process_bind_param", "", False, uuid.uuid4),
            ("process_literal_param", "", False, uuid.uuid4),
            # what a CombGuid column gives back when the database holds the value
            ("process_result_value", "", False, lambda: str(uuid.uuid4())),
            ("process_result_value", " (binary)", True, lambda: uuid.uuid4().bytes),
        )
    ],
    *_sequence_methods(("next_value",), dict, {}),
    *_sequence_methods(("next_values",), lambda: {"n": 2}, {"n": integer(0, MAX_BATCH_SIZE)}),
    *_sequence_methods(
        ("create", "drop"),
        lambda: {"checkfirst": True},
        {"checkfirst": flag()},
        sequences=(
            (sk.TableSequence, lambda: sk.TableSequence(_fresh(), mode="separate")),
            (sk.PooledSequence, lambda: sk.PooledSequence(_fresh())),
            (sk.BitReversedSequence, lambda: sk.BitReversedSequence(_fresh())),
        ),
    ),
    *[
        Target(
            f"{cls.__name__}.attach",
            _method(make, "attach"),
            lambda: {"metadata": sa.MetaData()},
            {"metadata": metadata()},
        )
        for cls, make in _SEQUENCES
    ],
    # -- Alembic operations (offline) -----------------------------------------------------
    Target(
        "op.create_sequences_table",
        _op("create_sequences_table"),
        dict,
        {"name": IDENT},
    ),
    Target("op.drop_sequences_table", _op("drop_sequences_table"), dict, {"name": IDENT}),
    Target("op.create_worker_lease_table", _op("create_worker_lease_table"), dict, {"name": IDENT}),
    Target("op.drop_worker_lease_table", _op("drop_worker_lease_table"), dict, {"name": IDENT}),
    *[
        Target(f"op.{verb}_{kind}", _op(f"{verb}_{kind}"), lambda: {"name": "n"}, bad)
        for kind, bad in (
            (
                "table_sequence",
                {"name": SEQUENCE_NAME, "start": integer(0, BIG - 1), "table": IDENT},
            ),
            ("bit_reversed_sequence", _BIT_REVERSED_BAD),
            ("pooled_sequence", _POOLED_BAD),
        )
        for verb in ("create", "drop")
    ],
    *[
        Target(f"op.{op}", _op(op, "mysql"), dict, {"table": IDENT})
        for op in (
            "make_sequence_names_case_sensitive",
            "make_sequence_names_case_insensitive",
            "upgrade_worker_lease_table",
            "downgrade_worker_lease_table",
        )
    ],
    Target(
        "op.fill_shard_column",
        _op(
            "fill_shard_column", "spanner+spanner"
        ),  # offline elsewhere it is refused: it reads rows
        lambda: {"table_name": "logs", "column_name": "shard", "columns": ["a"], "shards": 4},
        {
            "table_name": IDENT,
            "column_name": IDENT,
            "columns": st.one_of(st.just([]), st.just("a"), IDENT.map(lambda n: [n])),
            "shards": integer(1, BIG),
            "non_negative": flag(),
            "schema": SCHEMA,
            "batch_size": integer(1, 1_000_000),
        },
    ),
    Target(
        "op.resync_table_sequence",
        _op("resync_table_sequence"),
        resync_valid,
        ROW_RESYNC_BAD,
    ),
    # online only (they read every key): the arguments are checked when the op is made
    Target(
        "op.resync_bit_reversed_table_sequence",
        ResyncBitReversedTableSequenceOp,
        resync_valid,
        {**ROW_RESYNC_BAD, "skip_range": skip_range()},
    ),
    Target(
        "op.resync_bit_reversed_sequence",
        ResyncBitReversedSequenceOp,
        resync_valid,
        {**NATIVE_RESYNC_BAD, "skip_range": skip_range()},
    ),
    Target(
        "op.resync_pooled_sequence",
        _op("resync_pooled_sequence"),
        resync_valid,
        NATIVE_RESYNC_BAD,
    ),
]


def prefix() -> SearchStrategy[Any]:
    """Bad TypeID prefixes (the empty prefix is a valid one)."""
    return st.sampled_from(
        [None, 5, True, b"user", "User", "a b", "a\x00", "_a", "a_", "a" * 64, "é", ["user"]]
    )


_KEY = bytes(range(16))
_BAD_KEY = st.sampled_from([None, "k" * 16, 5, b"", b"\x01" * 15, b"\x01" * 17])


TARGETS += [
    Target(
        "OpaqueBigint",
        sk.OpaqueBigint,
        lambda: {"key": _KEY},
        {
            "key": _BAD_KEY,
            "bits": integer(20, 64),
            "tweak": st.sampled_from([None, "t", 5, ["t"]]),
        },
    ),
    Target(
        "OpaqueBigint.encode",
        sk.OpaqueBigint(_KEY).encode,
        lambda: {"key": 5},
        {"key": integer(0, 2**63 - 1)},
    ),
    Target(
        "OpaqueBigint.decode",
        sk.OpaqueBigint(_KEY).decode,
        lambda: {"public": 5},
        {"public": integer(0, 2**63 - 1)},
    ),
    Target("UuidV47", sk.UuidV47, lambda: {"key": _KEY}, {"key": _BAD_KEY}),
    Target(
        "UuidV47.encode",
        sk.UuidV47(_KEY).encode,
        lambda: {"key": sk.new_uuid7()},
        {"key": st.one_of(guid(), st.just(uuid.uuid4()))},
    ),
    Target(
        "UuidV47.decode",
        sk.UuidV47(_KEY).decode,
        lambda: {"public": sk.UuidV47(_KEY).encode(sk.new_uuid7())},
        {"public": st.sampled_from([None, 5, "garbage", b"\x01" * 16, object()])},
    ),
    Target(
        "TypeID",
        sk.TypeID,
        lambda: {"prefix": "user", "uuid": sk.new_uuid7()},
        {"prefix": prefix(), "uuid": guid()},
    ),
    Target(
        "TypeID.parse",
        sk.TypeID.parse,
        lambda: {"text": str(sk.new_typeid("user")), "prefix": "user"},
        {
            "text": st.sampled_from(
                [None, 5, "", "user_", "user_garbage", "User_01h455vb4pex5vsknk084sn02q", b"x"]
            ),
            "prefix": prefix().filter(lambda v: v is not None),
        },
    ),
    Target("TypeIDDefault", sk.TypeIDDefault, lambda: {"prefix": "user"}, {"prefix": prefix()}),
    Target("new_typeid", sk.new_typeid, lambda: {"prefix": "user"}, {"prefix": prefix()}),
    Target("typeid_default", sk.typeid_default, lambda: {"prefix": "user"}, {"prefix": prefix()}),
    Target(
        "TypeIDType",
        sk.TypeIDType,
        lambda: {"prefix": "user"},
        {"prefix": prefix(), "native_uuid": flag()},
    ),
    *[
        Target(
            f"TypeIDType.{method}",
            _type_method(lambda: sk.TypeIDType("user"), method),
            lambda: {"value": sk.new_typeid("user")},
            {"value": st.sampled_from([5, "garbage", sk.new_typeid("other"), object(), 1.5])},
        )
        for method in ("process_bind_param", "process_literal_param")
    ],
    Target(
        "TypeIDType.process_result_value",
        _type_method(lambda: sk.TypeIDType("user"), "process_result_value"),
        lambda: {"value": sk.new_uuid7().bytes},
        {"value": guid().filter(lambda v: v is not None and not isinstance(v, uuid.UUID))},
    ),
    *_function_and_twin(
        "doctor",
        lambda: {"metadata": sa.MetaData()},
        {"metadata": metadata()},
    ),
    Target("server_uuid", sk.server_uuid, dict, {}),
    Target("ServerUuid", sk.ServerUuid, dict, {}),
]

#: public methods with no parameter to make bad (their instance's constructor is covered)
NO_PARAMETERS = {
    "AsyncWorkerLease.aclose",
    "AsyncWorkerLease.check",
    "AsyncWorkerLease.close",
    "AsyncWorkerLease.start",
    "WorkerLease.check",
    "WorkerLease.close",
    "WorkerLease.for_child",
    "DoctorFinding.as_dict",
    "DoctorReport.as_dict",
    "DoctorReport.to_json",
    "DoctorReport.format",
    "UnsignedBigInteger",
}
#: parameters SQLAlchemy itself passes (never a user), with why they are not generated
# -- snowflake layouts: field order, worker parts, 64 bits, presets (issue 24) ------------
TARGETS += [
    # (H4, issue 24) SnowflakeLayout's new parameters and methods
    Target(
        "SnowflakeLayout (order and parts)",
        sk.SnowflakeLayout,
        dict,
        {
            "order": st.one_of(
                choice(),
                st.sampled_from(
                    [("worker", "timestamp", "sequence"), ("timestamp",), ["timestamp"] * 3, 5]
                ),
            ),
            "worker_parts": st.sampled_from(
                [
                    5,
                    "ab",
                    (("a", 5),),
                    (("a", 5), ("a", 5)),
                    (("", 10),),
                    (("a", 0), ("b", 10)),
                    (("sequence", 10),),
                    (("a", 1.5),),
                    ((None, 10),),
                    (("a", 10, 1),),
                ]
            ),
            "unsigned": flag(),
        },
    ),
    *[
        Target(
            f"SnowflakeLayout.{method}",
            getattr(LAYOUT, method),
            lambda: {"value": 1},
            {"value": integer(0, 2**63 - 1)},
        )
        for method in ("decompose", "decode", "parts")
    ],
    Target(
        "SnowflakeLayout.split_worker",
        LAYOUT.split_worker,
        lambda: {"worker_id": 1},
        {"worker_id": integer(0, 1023)},
    ),
    Target(
        "SnowflakeLayout.worker_of",
        sk.SnowflakeLayout.discord().worker_of,
        lambda: {"worker": 1, "process": 1},
        {"worker": integer(0, 31), "process": integer(0, 31)},
    ),
    Target(
        "SnowflakeLayout.twitter", sk.SnowflakeLayout.twitter, dict, {"epoch": aware_datetime()}
    ),
    Target(
        "SnowflakeLayout.sonyflake",
        sk.SnowflakeLayout.sonyflake,
        dict,
        {
            "epoch": aware_datetime(),
            "sequence_bits": integer(0, 30),
            "machine_bits": integer(0, 30),
            "time_unit": st.sampled_from([None, 1, "10ms", timedelta(0), timedelta(-1)]),
        },
    ),
    Target("SnowflakeLayout.discord", sk.SnowflakeLayout.discord, dict, {"unsigned": flag()}),
    Target(
        "SnowflakeLayout.instagram",
        sk.SnowflakeLayout.instagram,
        dict,
        {"epoch": aware_datetime(), "unsigned": flag()},
    ),
    Target(
        "SnowflakeLayout.js_safe", sk.SnowflakeLayout.js_safe, dict, {"epoch": aware_datetime()}
    ),
    Target(
        "ClockBackwardsMode", sk.ClockBackwardsMode, lambda: {"value": "wait"}, {"value": choice()}
    ),
]


NOT_GENERATED = {
    (
        "SnowflakeLayout.worker_of",
        "parts",
    ): "**parts: generated by the parts' names (worker, process)",
    **{
        (f"{cls}.attach_to_column", param): "SQLAlchemy calls it when the column joins its table"
        for cls in ("TableSequence", "PooledSequence", "BitReversedSequence")
        for param in ("parent", "kw")
    },
    **{
        (f"{cls}.{method}", param): "the lease protocol a Snowflake calls (_lease.Lease)"
        for cls in ("WorkerLease", "AsyncWorkerLease")
        for method, param in (
            ("extend_mark", "until_ms"),
            ("bind_minter", "make"),
            ("in_this_process", "clock"),
        )
    },
    ("CombGuid.process_bind_param", "dialect"): "SQLAlchemy passes its Dialect",
    ("CombGuid.process_literal_param", "dialect"): "SQLAlchemy passes its Dialect",
    ("CombGuid.process_result_value", "dialect"): "SQLAlchemy passes its Dialect",
    ("CombGuid.load_dialect_impl", "dialect"): "SQLAlchemy passes its Dialect",
    ("CombGuid.bind_processor", "dialect"): "SQLAlchemy passes its Dialect",
    ("CombGuid.literal_processor", "dialect"): "SQLAlchemy passes its Dialect",
    ("CombGuid.result_processor", "dialect"): "SQLAlchemy passes its Dialect",
    ("CombGuid.result_processor", "coltype"): "SQLAlchemy passes the DBAPI type",
    ("spanner_shard_column", "column_kw"): "sqlalchemy.Column's own keyword arguments",
    **{
        (f"{cls}.coerce_compared_value", param): "SQLAlchemy passes it (the operator, and "
        "the value compared with the column)"
        for cls in ("UnsignedBigInteger", "CombGuid", "TypeIDType")
        for param in ("op", "value")
    },
    **{
        ("UnsignedBigInteger.process_result_value", param): "SQLAlchemy passes what the "
        "database returns (an int, or NUMERIC's Decimal) and its Dialect"
        for param in ("value", "dialect")
    },
    **{
        ("UnsignedBigInteger.process_bind_param", param): "SQLAlchemy passes the value "
        "bound (anything but an int from 0 to 2**64 - 1 or None raises InvalidSnowflakeError: "
        "tests/backend/test_ids_review_unsigned.py) and its Dialect"
        for param in ("value", "dialect")
    },
    ("DecodedSnowflake", "*"): "a NamedTuple of decode()'s results, not an input",
    ("DoctorFinding", "*"): "a record of doctor()'s results, not an input",
    ("DoctorReport", "*"): "a record of doctor()'s results, not an input",
    ("CombGuid.column_expression", "column"): "SQLAlchemy passes the column it compiles",
    **{
        (f"TypeIDType.{method}", param): "SQLAlchemy passes it"
        for method in (
            "load_dialect_impl",
            "process_bind_param",
            "bind_processor",
            "process_literal_param",
            "literal_processor",
            "result_processor",
            "process_result_value",
        )
        for param in ("dialect", "coltype")
    },
}

_BY_LABEL = {t.label: t for t in TARGETS}


def _cases() -> Iterator[Any]:
    for target in TARGETS:
        for param in target.bad:
            yield pytest.param(target, param, id=f"{target.label}-{param}")


#: Python's own refusal of a call's shape (not of a value): fine
_SIGNATURE = re.compile(r"positional argument|keyword argument|takes no arguments")


def _refused(target: Target, param: str, value: object) -> None:
    kwargs = {**target.valid(), param: value}
    try:
        with warnings.catch_warnings():
            # the deprecated factories warn before they refuse the value
            warnings.simplefilter("ignore", DeprecationWarning)
            result = _run(target.call, kwargs)
    except SeqKeysError as exc:
        message = str(exc)
    except TypeError as exc:
        if not _SIGNATURE.search(str(exc)):
            pytest.fail(f"{target.label}({param}={value!r}) raised TypeError: {exc}")
        return
    except Exception as exc:
        pytest.fail(
            f"{target.label}({param}={shown(value)}) raised {type(exc).__name__}: {exc}, "
            "not a SeqKeysError"
        )
    else:
        pytest.fail(
            f"{target.label}({param}={shown(value)}) accepted a bad value and gave {shown(result)}"
        )
    assert len(message) > 20, f"{message!r} does not say what was wrong"


@pytest.mark.parametrize(("target", "param"), list(_cases()))
def test_a_bad_argument_raises_a_seqkeys_error(target: Target, param: str) -> None:
    @settings(
        derandomize=True,
        max_examples=12,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(value=target.bad[param])
    def check(value: object) -> None:
        _refused(target, param, value)

    check()


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.label)
def test_the_valid_arguments_work(target: Target) -> None:
    # a refusal above is for the bad value, not for the valid ones beside it
    with warnings.catch_warnings():
        # the deprecated factories warn (tests/backend/test_sequence_contract.py checks it)
        warnings.simplefilter("ignore", DeprecationWarning)
        _run(target.call, target.valid())


def _own_methods(cls: type) -> dict[str, Callable[..., Any]]:
    """Public methods and properties defined in sqlalchemy_seqkeys (not inherited from others)."""
    found = {}
    for klass in cls.__mro__:
        if not klass.__module__.startswith("sqlalchemy_seqkeys"):
            continue
        for attr, value in vars(klass).items():
            if attr.startswith("_") or attr in found:
                continue
            if isinstance(value, (property, staticmethod, classmethod)) or inspect.isfunction(
                value
            ):
                found[attr] = value
    return found


def _parameters(fn: Any) -> list[str]:
    if isinstance(fn, property):
        return []
    fn = getattr(fn, "__func__", fn)
    params = inspect.signature(fn).parameters.values()
    return [p.name for p in params if p.name not in ("self", "cls")]


def _public() -> dict[str, list[str]]:
    """Every public callable, ``Class.method`` and ``op.name``, with its parameters."""
    from sqlalchemy_seqkeys.alembic.ops import IMPLEMENTATIONS

    found: dict[str, list[str]] = {}
    for attr in sk.__all__:
        obj = getattr(sk, attr)
        if attr == "__version__" or (isinstance(obj, type) and issubclass(obj, BaseException)):
            continue
        if isinstance(obj, type) and issubclass(obj, sk.CombLayout.__mro__[1]):  # ChoiceEnum
            found[attr] = ["value"]
            continue
        if isinstance(obj, type) and issubclass(obj, tuple):  # NamedTuple
            found[attr] = ["*"]
            continue
        if isinstance(obj, type):
            found[attr] = _parameters(obj)
            for method, fn in _own_methods(obj).items():
                found[f"{attr}.{method}"] = _parameters(fn)
        elif isinstance(obj, sk.CombGuidDefault):
            found[attr] = ["context"]
        elif attr.endswith("_async") and hasattr(sk, attr.removesuffix("_async")):
            # (bind, /, *args, **kwargs): the sync form's parameters
            found[attr] = _parameters(getattr(sk, attr.removesuffix("_async")))
        else:
            found[attr] = _parameters(obj)
    for op_class in IMPLEMENTATIONS:
        found[f"op.{op_class.op_name}"] = [f.name for f in fields(op_class) if f.init]
    return found


def test_every_public_name_is_covered() -> None:
    covered: dict[str, set[str]] = {}
    for target in TARGETS:
        base = target.label.split(" (")[0]
        covered.setdefault(base, set()).update(target.bad)
    missing = []
    for label, params in _public().items():
        if label in NO_PARAMETERS or (label, "*") in NOT_GENERATED:
            continue
        for param in params:
            if (label, param) in NOT_GENERATED:
                continue
            if param == "values" and label == "ShardId.of":
                pass
            if label not in covered or param not in covered[label] | _aliases(label):
                missing.append(f"{label}: {param}")
    assert not missing, "public parameters no bad value is generated for:\n" + "\n".join(missing)


def _aliases(label: str) -> set[str]:
    # *args spelled as one parameter in the table
    return (
        {"columns", "clauses"}
        if label in {"ShardId", "spanner_shard_column", "ServerUuid7"}
        else set()
    )


# -- key column types that cannot hold the key ------------------------------------------

_INTEGER_DEFAULTS: dict[str, Callable[[], Any]] = {
    "Snowflake": lambda: sk.Snowflake(1),
    "TableSequence": lambda: sk.TableSequence("s", mode="batch"),
    "PooledSequence": lambda: sk.PooledSequence("p"),
    "BitReversedSequence": lambda: sk.BitReversedSequence("b"),
}
_NOT_INTEGER_TYPES: list[Any] = [
    sa.String(10),
    sa.String(),
    sa.Boolean(),
    sa.Float(),
    sa.Double(),
    sa.Date(),
    sa.DateTime(),
    sa.LargeBinary(16),
    sa.Uuid(),
    sa.JSON(),
    sk.CombGuid(),
]
_GUID_DEFAULTS: dict[str, Any] = {
    "new_comb_guid": sk.new_comb_guid,
    "new_uuid7": sk.new_uuid7,
    "new_comb_guid.with_layout": sk.new_comb_guid.with_layout("at_end"),
}
_NOT_GUID_TYPES: list[Any] = [
    sa.Float(),
    sa.Double(),
    sa.Integer(),
    sa.BigInteger(),
    sa.Numeric(38, 0),
    sa.Boolean(),
    sa.Date(),
    sa.String(10),
    sa.LargeBinary(16),
]


@pytest.mark.parametrize("type_", _NOT_INTEGER_TYPES, ids=repr)
@pytest.mark.parametrize("default", _INTEGER_DEFAULTS, ids=str)
def test_an_integer_key_on_a_column_that_holds_no_integers_is_refused(
    default: str, type_: Any
) -> None:
    # before: String(10) and Boolean key columns were accepted, and the
    # first INSERT stored text or failed at the server
    with pytest.raises(SeqKeysError, match=r"column t\.id .*cannot hold"):
        sa.Table(
            "t",
            sa.MetaData(),
            sa.Column("id", type_, primary_key=True, default=_INTEGER_DEFAULTS[default]()),
        )


@pytest.mark.parametrize("type_", _NOT_GUID_TYPES, ids=repr)
@pytest.mark.parametrize("default", _GUID_DEFAULTS, ids=str)
def test_a_guid_key_on_a_column_that_holds_no_guid_is_refused(default: str, type_: Any) -> None:
    with pytest.raises(sk.InvalidGuidError, match=r"column t\.id .*cannot store"):
        sa.Table(
            "t",
            sa.MetaData(),
            sa.Column("id", type_, primary_key=True, default=_GUID_DEFAULTS[default]),
        )


# -- stored values that are not keys -----------------------------------------------------


@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
@pytest.mark.parametrize("garbage", ["garbage", "", "0" * 35, b"\x01" * 15, b"\x01" * 17, 5])
def test_reading_a_stored_value_that_is_no_guid_names_the_column(
    binary: bool, garbage: object
) -> None:
    engine = sa.create_engine("sqlite://")
    t = sa.Table("invoices", sa.MetaData(), sa.Column("id", sk.CombGuid(binary=binary)))
    t.create(engine)
    with engine.begin() as conn:
        conn.exec_driver_sql("INSERT INTO invoices (id) VALUES (?)", (garbage,))
    with engine.connect() as conn, pytest.raises(sk.InvalidGuidError, match=r"column invoices\.id"):
        conn.execute(sa.select(t.c.id)).all()
