"""Every use of a private name of SQLAlchemy, Alembic or sqlalchemy-spanner, in one place.

Tested on SQLAlchemy 2.0.56 to 2.1.x, Alembic 1.20.1 and newer, and
sqlalchemy-spanner 1.15 and newer (the suite's lowest and newest sets,
``noxfile.py``). When a release renames one of these, this module is the one
that changes; nothing else in the package touches another library's
underscore names. Each entry says what it uses and since when it is there.
Imports nothing beyond SQLAlchemy itself until an entry is used. Design: docs/architecture.md.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy import types as sqltypes
from sqlalchemy.util import concurrency as _concurrency

__all__ = [
    "BINARY_TYPES",
    "ColumnArgument",
    "CopiedComputed",
    "alembic_impl_registered",
    "autocommit",
    "await_",
    "connect_listened",
    "declared_callable",
    "first_connect_done",
    "greenlet_spawn",
    "in_greenlet",
    "insert_bind_name",
    "insert_multi_values",
    "insert_values",
    "patch_spanner_reflection",
    "pool_connect_listened",
    "pool_creator",
    "register_alembic_impl",
    "schema_map_for_statement",
    "set_column_default",
    "type_variants",
    "url_connect_params",
    "without_overflow_limit",
]


# -- Column(...) arguments -------------------------------------------------------------


class ColumnArgument:
    """Base of an object a ``Column(...)`` takes among its positional arguments.

    SQLAlchemy calls ``_set_parent_with_dispatch(column)`` on each positional
    argument that has it (``SchemaEventTarget``, private; the same in 2.0 and
    2.1); a subclass implements :meth:`attach_to_column` instead.
    """

    def _set_parent_with_dispatch(self, parent: object, **kw: Any) -> None:
        self.attach_to_column(parent, **kw)

    def attach_to_column(self, parent: object, **kw: Any) -> None:
        """Attach to ``parent``, which SQLAlchemy found among a Column's arguments."""
        raise NotImplementedError


def set_column_default(column: sa.Column[Any], default: object, **kw: Any) -> None:
    """Make ``default`` the column's ``default=``, as ``Column(default=...)`` does, events included.

    ``ColumnDefault._set_parent_with_dispatch`` is what ``Column.__init__``
    calls for ``default=`` (2.0, 2.1).
    """
    sa.ColumnDefault(default)._set_parent_with_dispatch(column, **kw)


class CopiedComputed(sa.Computed):
    """A ``Computed`` that decides how it is copied with its column.

    ``Column._copy`` (``to_metadata``, declarative mixins) calls the private
    ``Computed._copy`` (2.0, 2.1); a subclass implements :meth:`copied`.
    """

    def _copy(self, **kw: Any) -> CopiedComputed:
        return self.copied()

    def copied(self) -> CopiedComputed:
        """The copy a copied column gets."""
        raise NotImplementedError


# -- column defaults and types as declared ---------------------------------------------


def declared_callable(default: Any) -> Any:
    """The callable given as a column's ``default=``; None where it is not a callable one.

    SQLAlchemy wraps a callable that takes no context in a ``lambda ctx: fn()``.
    From 2.0.3x ``CallableColumnDefault`` keeps the callable as given in its
    private ``_fn``; before, the wrapper is unwrapped (``__wrapped__`` for a
    function, the closure's one cell for a callable object).
    """
    if default is None or not getattr(default, "is_callable", False):
        return None
    if hasattr(default, "_fn"):
        return default._fn
    arg = default.arg
    wrapped = getattr(arg, "__wrapped__", None)  # functools.update_wrapper, for functions
    if wrapped is not None:
        return wrapped
    # A callable object (Snowflake) gets the wrapper named after its class, and
    # the wrapper's one closure cell holds it.
    closure = getattr(arg, "__closure__", None)
    if closure and len(closure) == 1:
        inner = closure[0].cell_contents
        if type(inner).__name__ == getattr(arg, "__name__", None):
            return inner
    return arg


def type_variants(type_: sqltypes.TypeEngine[Any]) -> list[tuple[str | None, Any]]:
    """The base type and each ``with_variant`` type, with the dialect name it is for.

    ``TypeEngine._variant_mapping`` (private; 2.0, 2.1) holds them.
    """
    mapping = getattr(type_, "_variant_mapping", None) or {}
    return [(None, type_), *mapping.items()]


#: the base of every binary type (LargeBinary, BINARY, VARBINARY; private in 2.0, 2.1)
BINARY_TYPES: type[sqltypes.TypeEngine[Any]] = sqltypes._Binary


# -- an INSERT's values ----------------------------------------------------------------


def insert_values(statement: sa.Insert) -> Mapping[Any, Any] | None:
    """What ``insert(t).values(...)`` was given: column (or name) -> value; None if nothing.

    ``ValuesBase._values`` (private; 2.0, 2.1).
    """
    values: Mapping[Any, Any] | None = getattr(statement, "_values", None)
    return values or None


def insert_multi_values(statement: sa.Insert) -> frozenset[str]:
    """The column keys that the rows of ``insert(t).values([...])`` give; empty: no such rows.

    ``ValuesBase._multi_values`` (private; 2.0, 2.1): batches of rows, each a dict (by
    column or name) or a tuple in the table's column order.
    """
    keys: set[str] = set()
    for batch in getattr(statement, "_multi_values", None) or ():
        for row in batch:
            if isinstance(row, Mapping):
                keys.update(k if isinstance(k, str) else getattr(k, "key", str(k)) for k in row)
            else:
                keys.update(column.key for column in list(statement.table.c)[: len(row)])
    return frozenset(keys)


def insert_bind_name(
    statement: sa.Insert, column: str, bind: sa.BindParameter[Any], dialect: sa.Dialect
) -> str:
    """The name under which execute()'s parameters override ``bind``, the value of ``column``
    in ``statement.values()``: the compiled statement's name of it, found without compiling.

    A plain value (or ``literal()``, or any ``unique`` bindparam) is named by the column's
    key, a ``bindparam("uid")`` by its own name (SQLAlchemy's crud compilation: an
    anonymous unique bind of ``.values()`` takes the column's key). Any other (an anonymous
    ``bindparam(None, ...)``, a ``quoted_name`` key) is rare: the statement is compiled,
    and its ``bind_names`` read.

    SQLAlchemy's naming rule for ``.values()`` binds (``crud._append_param_parameter``;
    2.0, 2.1), no private name.
    """
    if bind.unique:
        return column
    if type(bind.key) is str:
        return bind.key
    compiled = statement.compile(dialect=dialect)
    names = {b.key: name for b, name in getattr(compiled, "bind_names", {}).items()}
    return str(names.get(bind.key, bind.key))


# -- asyncio through SQLAlchemy's greenlet ---------------------------------------------

#: await from sync code running in SQLAlchemy's greenlet: ``sqlalchemy.util.concurrency``
#: names it ``await_`` in 2.1, ``await_only`` in 2.0 (deprecated from 2.2)
await_: Callable[[Awaitable[Any]], Any] = (
    getattr(_concurrency, "await_", None) or _concurrency.await_only
)


def _in_greenlet() -> bool:
    # what sqlalchemy.util.concurrency.in_greenlet() reads (not in every 2.0 release):
    # the private marker SQLAlchemy sets on the greenlets it spawns
    try:
        import greenlet
    except ImportError:  # no greenlet, no asyncio engine
        return False
    return bool(getattr(greenlet.getcurrent(), "__sqlalchemy_greenlet_provider__", False))


#: True inside the greenlet SQLAlchemy's asyncio engines run sync code in
in_greenlet: Callable[[], bool] = getattr(_concurrency, "in_greenlet", None) or _in_greenlet

#: run sync code in SQLAlchemy's greenlet from a coroutine (what AsyncConnection.run_sync
#: uses; ``sqlalchemy.util.concurrency``, not documented API, in 2.0 and 2.1)
greenlet_spawn = _concurrency.greenlet_spawn


def proxied_engine(engine: sa.Engine) -> sa.Engine:
    """The Engine an ``engine.execution_options(...)`` copy stands for (the engine itself
    when it is no copy): the same pool and events. SQLAlchemy keeps it in the private
    ``OptionEngine._proxied`` (2.0 and 2.1)."""
    while True:
        proxied = getattr(engine, "_proxied", None)
        if not isinstance(proxied, sa.Engine):
            return engine
        engine = proxied


# -- connections -----------------------------------------------------------------------


@contextlib.contextmanager
def schema_map_for_statement(conn: sa.Connection, translate: Any) -> Iterator[None]:
    """``conn`` with ``translate`` as its schema_translate_map for the block, then exactly
    the execution options it had.

    ``Connection.execution_options()`` only adds options: setting the map back to
    what it was leaves ``schema_translate_map=None`` on a connection that had none,
    and a connection's option outranks every later statement's. So the options
    object is swapped and put back (``Connection._execution_options``, private;
    2.0, 2.1), the map being a statement's, not the connection's: no
    ``set_connection_execution_options`` event fires, as for a statement's options.
    """
    before = conn._execution_options
    conn._execution_options = before.union({"schema_translate_map": translate})
    try:
        yield
    finally:
        conn._execution_options = before


# -- pools -----------------------------------------------------------------------------


def pool_creator(pool: sa.pool.Pool) -> Any:
    """The callable ``pool`` opens its connections with (``Pool._creator``, private; 2.0,
    2.1): ``creator=`` as given, or ``create_engine``'s own. ``Pool.recreate()``, which
    ``Engine.dispose()`` and an asyncio engine's twin pools use, passes it on."""
    return pool._creator


def url_connect_params(pool: sa.pool.Pool) -> Mapping[str, Any] | None:
    """The keyword arguments ``pool`` opens its connections with when it opens them through
    ``create_engine``'s own function (the URL's and ``connect_args``); None for another
    creator (``creator=``, ``async_creator=``, a ``pool=`` built elsewhere).

    That function is ``create_engine.<locals>.connect``, its closure holding them as
    ``cparams`` (2.0.56, 2.1.9). A release that shapes it otherwise gives None: the
    caller treats the pool as one with a creator of its own.
    """
    creator = pool_creator(pool)
    code = getattr(creator, "__code__", None)
    if (
        code is None
        or getattr(creator, "__module__", None) != "sqlalchemy.engine.create"
        or getattr(creator, "__qualname__", None) != "create_engine.<locals>.connect"
    ):
        return None
    cells = dict(zip(code.co_freevars, getattr(creator, "__closure__", None) or (), strict=False))
    try:
        params = cells["cparams"].cell_contents
    except (KeyError, ValueError):  # no such cell; or empty
        return None
    return params if isinstance(params, Mapping) else None


def autocommit(conn: sa.Connection) -> bool:
    """Whether ``conn`` runs each statement in a transaction of its own (isolation level
    ``AUTOCOMMIT``, of the connection or of its engine), where SQLAlchemy's transactions
    are only its own bookkeeping: no savepoint, no ``SET LOCAL``, nothing to roll back
    (``Connection._is_autocommit_isolation()``: 2.0, 2.1)."""
    return bool(conn._is_autocommit_isolation())


def connect_listened(dialect: sa.Dialect) -> bool:
    """Whether a ``do_connect`` listener may change how ``dialect``'s engines connect
    (the event's listeners, ``dialect.dispatch.do_connect``: 2.0, 2.1)."""
    return bool(getattr(dialect.dispatch, "do_connect", None))


def pool_connect_listened(pool: sa.pool.Pool) -> bool:
    """Whether a pool "connect" listener of someone's but SQLAlchemy's runs on ``pool``'s
    connections: it may pick another schema or database (``SET search_path``, ``USE``)
    than the URL, as a ``do_connect`` listener may. SQLAlchemy's own (the dialect's
    ``on_connect``, the first connect) come from its modules, ``once=True`` ones behind
    its ``only_once`` wrapper (``pool.dispatch.connect``: 2.0, 2.1)."""
    listeners: Any = getattr(pool.dispatch, "connect", None) or ()
    return any(not _sqlalchemys(listener) for listener in listeners)


def _sqlalchemys(listener: object) -> bool:
    for _ in range(5):  # a wrapper of SQLAlchemy's holds the function as its cell "fn"
        code = getattr(listener, "__code__", None)
        if getattr(listener, "__qualname__", "") != "only_once.<locals>.go" or code is None:
            break
        closure = getattr(listener, "__closure__", None) or ()
        cells = dict(zip(code.co_freevars, closure, strict=False))
        try:
            listener = cells["fn"].cell_contents
        except (KeyError, ValueError):
            return False
    module = getattr(listener, "__module__", None) or ""
    return module == "sqlalchemy" or module.startswith("sqlalchemy.")


def without_overflow_limit(pool: sa.pool.Pool) -> sa.pool.Pool:
    """``pool`` (new, unused) opens as many connections as are asked for at once.

    A ``QueuePool``'s ``max_overflow`` becomes -1, its "no limit"
    (``QueuePool._max_overflow``, set in ``__init__`` and read at each
    checkout: 2.0, 2.1); it keeps ``pool_size`` connections idle as before.
    """
    if isinstance(pool, sa.pool.QueuePool):
        pool._max_overflow = -1
    return pool


def first_connect_done(pool: sa.pool.Pool) -> bool:
    """Whether ``pool``'s "connect" listeners have run once, without an error: those of
    ``create_engine``, which initialize the dialect (server version; MariaDB or MySQL,
    and so whether it has sequences), among them. Until then a pool runs them under a
    lock of its own, an asyncio lock for an async engine, which waits on the event loop
    it was first contended on (``_ListenerCollection._exec_w_sync_once``: 2.0, 2.1).
    """
    listeners: Any = getattr(pool.dispatch, "connect", None)
    done = getattr(listeners, "_exec_w_sync_once", None)
    if done is None:
        raise RuntimeError(  # pragma: no cover - a SQLAlchemy release that changed it
            "sqlalchemy_seqkeys cannot tell whether a pool's first connect has run on "
            f"SQLAlchemy {sa.__version__}: report it, with this version"
        )
    return bool(done)


# -- Alembic ---------------------------------------------------------------------------


def alembic_impl_registered(dialect_name: str) -> bool:
    """Whether Alembic has an impl for ``dialect_name`` (``alembic.ddl.impl._impls``, 1.20)."""
    from alembic.ddl.impl import _impls

    return dialect_name in _impls


def register_alembic_impl(dialect_name: str, impl: type[Any]) -> None:
    """Make ``impl`` Alembic's impl for ``dialect_name`` (what ``__dialect__`` on a class does)."""
    from alembic.ddl.impl import _impls

    impl.__dialect__ = dialect_name
    _impls[dialect_name] = impl


# -- sqlalchemy-spanner ----------------------------------------------------------------


def patch_spanner_reflection() -> None:
    """Two gaps in sqlalchemy-spanner's reflection (1.15 to 1.17) that Alembic falls into.

    Reflecting no tables at all must not be a syntax error: the private
    ``SpannerDialect._get_table_filter_query`` builds ``WHERE (...)`` from the
    table names it is asked about; for an empty list (Alembic asks that of an
    empty database) that is ``WHERE () AND``, which Spanner rejects. An empty
    list now matches nothing. And a reflected primary key has a ``"name"``
    (None where there is none, as on Spanner): SQLAlchemy's contract, which
    Alembic's comparison relies on. Idempotent; nothing without the extra.
    """
    try:
        from google.cloud.sqlalchemy_spanner.sqlalchemy_spanner import SpannerDialect
    except ImportError:  # pragma: no cover - the spanner extra is not installed
        return
    original = SpannerDialect._get_table_filter_query
    if getattr(original, "_seqkeys_patched", False):
        return

    def table_filter(
        self: Any, filter_names: Any, info_schema_table: str, append_query: bool = False
    ) -> str:
        if filter_names is not None and len(filter_names) == 0:
            return "FALSE AND " if append_query else "FALSE "
        text: str = original(self, filter_names, info_schema_table, append_query)
        return text

    table_filter._seqkeys_patched = True  # type: ignore[attr-defined]
    SpannerDialect._get_table_filter_query = table_filter

    original_pk = SpannerDialect.get_multi_pk_constraint

    def multi_pk_constraint(self: Any, *args: Any, **kw: Any) -> Any:
        found = original_pk(self, *args, **kw)
        for constraint in found.values():
            constraint.setdefault("name", None)
        return found

    SpannerDialect.get_multi_pk_constraint = multi_pk_constraint
