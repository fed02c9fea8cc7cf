"""Checks a key column when it joins its table, and keeps its schema migration-safe.

Importing the package installs two listeners (``after_parent_attach`` on ``Column``
and on ``Table``): a column whose default is one of this library's is refused with
its strategy's error where its type cannot hold the keys, an integer key column gets
``autoincrement=False``, and ``default=new_uuid7`` runs as :func:`_new_uuid7_rows`.

Design: docs/architecture.md.
"""

from __future__ import annotations

import functools
import sys
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy import types as sqltypes
from sqlalchemy.sql.schema import CallableColumnDefault

from ._compat import BINARY_TYPES, declared_callable, type_variants
from .errors import (
    InvalidBitReversalError,
    InvalidGuidError,
    InvalidSequenceError,
    InvalidShardError,
    InvalidSnowflakeError,
    InvalidTypeIDError,
    SeqKeysError,
)

if TYPE_CHECKING:
    import uuid

    from sqlalchemy.engine.interfaces import Dialect, ExecutionContext

    from ._rows import RowsAhead
    from .shard import ShardId

__all__: list[str] = ["bigint_problem", "declared_default", "u64_problem"]


def _loaded(module: str, name: str) -> Any:
    """``sqlalchemy_seqkeys.<module>.<name>`` if that module is imported, else None.

    The checks import nothing: an object of a module not imported yet cannot
    be a column's default, so a strategy costs its import only when used.
    """
    return getattr(sys.modules.get(f"sqlalchemy_seqkeys.{module}"), name, None)


#: what each integer-key default is called in messages, and the error it raises
#: (module and class name: looked up with _loaded; tests/unit/test_imports.py
#: checks that each one names a class)
_INTEGER_KINDS: tuple[tuple[str, str, str, type[SeqKeysError]], ...] = (
    ("snowflake", "Snowflake", "snowflake ids", InvalidSnowflakeError),
    ("bitreverse", "BitReversed", "bit-reversed values", InvalidBitReversalError),
    ("sequences", "TableSequence", "table-sequence values", InvalidSequenceError),
    ("pooled", "PooledSequence", "pooled-sequence values", InvalidSequenceError),
)


def _instance(obj: Any, module: str, name: str) -> bool:
    cls = _loaded(module, name)
    return cls is not None and isinstance(obj, cls)


_GUID_LENGTH = 36  # the text form, 8-4-4-4-12 with hyphens

#: types that hold no number, nor a GUID unless one is listed before them
#: (String holds a GUID's text, Uuid a GUID): checked after those
_NOT_NUMBERS: tuple[type[Any], ...] = (
    sqltypes.String,
    sqltypes.Boolean,
    sqltypes.Date,
    sqltypes.DateTime,
    sqltypes.Time,
    sqltypes.Interval,
    BINARY_TYPES,
    sqltypes.JSON,
    sqltypes.ARRAY,
    sqltypes.Uuid,
)


def _given_default(column: sa.Column[Any]) -> Any:
    """The object the user passed as ``default=`` (SQLAlchemy may wrap a callable)."""
    return declared_callable(column.default)


def _integer_kind(fn: Any) -> tuple[str, type[SeqKeysError]] | None:
    for module, name, what, error in _INTEGER_KINDS:
        if _instance(fn, module, name):
            return what, error
    return None


def _is_guid_default(fn: Any) -> bool:
    if _instance(fn, "types", "CombGuidDefault"):
        return True
    minters = _loaded("comb", "guid_minters")  # new_uuid7, comb_minter(...)
    if minters is None:  # comb not imported: no COMB nor UUIDv7 minter exists
        return False
    if fn in minters:
        return True
    return isinstance(fn, functools.partial) and fn.func in (
        _loaded("comb", "new_comb"),
        _loaded("uuid7", "new_uuid7"),
    )


def _is_typeid_default(fn: Any) -> bool:
    """A ``typeid_default(prefix)``, or ``new_typeid`` (which is no column default)."""
    return _instance(fn, "typeid", "TypeIDDefault") or (
        fn is not None and fn is _loaded("typeid", "new_typeid")
    )


def _is_uuid7(fn: Any) -> bool:
    new_uuid7 = _loaded("uuid7", "new_uuid7")
    if new_uuid7 is None:
        return False
    return fn is new_uuid7 or (isinstance(fn, functools.partial) and fn.func is new_uuid7)


def _known(type_: sqltypes.TypeEngine[Any]) -> bool:
    # NullType: a type SQLAlchemy fills in later (a ForeignKey's target), checked at CREATE
    return not isinstance(type_, sqltypes.NullType)


_variants = type_variants  # the base type and each with_variant type, with its dialect


def _on_sqlite(dialect: str | None) -> bool:
    return dialect is not None and dialect.partition("+")[0] == "sqlite"


@functools.cache
def _sqlite_dialect() -> Dialect:
    from sqlalchemy.dialects import sqlite

    return sqlite.dialect()


def _rounds_on_sqlite(type_: sqltypes.TypeEngine[Any]) -> bool:
    """Whether SQLAlchemy binds an integer given to ``type_`` as a float on SQLite.

    SQLite has no decimal type, so its dialect binds every ``Numeric`` through
    ``float`` (``supports_native_decimal`` is False): 2**63 - 1 and its
    neighbours become one value. Asked of the type's own bind processor there.
    """
    if not isinstance(type_, sqltypes.Numeric):
        return False
    dialect = _sqlite_dialect()
    try:
        processor = type_.dialect_impl(dialect).bind_processor(dialect)
        return processor is not None and not isinstance(processor(2**63 - 1), int)
    except Exception:  # a type that cannot bind an int cannot hold the keys
        return True


def _rounding_on_sqlite(type_: sqltypes.TypeEngine[Any]) -> str:
    return (
        f"SQLAlchemy binds {type_!r} as a float on SQLite, which has no decimal type, "
        "so keys that differ in their low bits round into one value"
    )


def bigint_problem(type_: sqltypes.TypeEngine[Any], dialect: str | None = None) -> str | None:
    """Why ``type_`` cannot hold every value up to 2**63 - 1, or None if it can (or may).

    ``dialect`` names the engine the type is used on (a ``with_variant`` name, or
    the engine's own); None judges it for any engine, SQLite aside, which the
    column check asks about on its own.
    """
    if isinstance(type_, sqltypes.TypeDecorator):
        return bigint_problem(type_.impl_instance, dialect)
    if isinstance(type_, sqltypes.BigInteger):
        return None
    if isinstance(type_, sqltypes.Float):
        return f"{type_!r} is a floating-point type, which rounds large integers"
    if _on_sqlite(dialect) and _rounds_on_sqlite(type_):
        return _rounding_on_sqlite(type_)
    if isinstance(type_, sqltypes.Numeric):  # before Integer: Oracle's NUMBER is both
        precision, scale = type_.precision, type_.scale
        if scale not in (None, 0):
            return f"{type_!r} has a scale of {scale}; an integer key needs scale 0"
        if precision is None:
            oracle = sys.modules.get("sqlalchemy.dialects.oracle")  # imported if in use
            if oracle is not None and isinstance(type_, oracle.NUMBER):
                return None  # NUMBER without precision: 38 digits
            return f"{type_!r} has no precision (MySQL's DECIMAL then holds 10 digits)"
        if precision < 19:
            return f"{type_!r} holds {precision} digits; 2**63 - 1 has 19"
        return None
    if isinstance(type_, sqltypes.Integer):
        if dialect is not None:
            from ._dialect import facts

            if facts(dialect).integer_is_64_bits:  # a variant: fine
                return None
        return f"{type_!r} is at most 32 bits on most engines"
    if isinstance(type_, _NOT_NUMBERS):
        return f"{type_!r} does not hold integers"
    return None  # a type this library does not know (UserDefinedType): may hold them


def u64_problem(type_: sqltypes.TypeEngine[Any], dialect: str | None = None) -> str | None:
    """Why ``type_`` cannot hold every value up to 2**64 - 1, or None if it can (or may).

    On SQLite (``dialect``), whose integers stop at 2**63 - 1, an integer type
    is accepted: sqlite3 refuses a larger value at the INSERT (OverflowError)
    and never rounds it; a ``Numeric`` there is bound as a float, and refused.
    """
    if isinstance(type_, sqltypes.TypeDecorator):
        return u64_problem(type_.impl_instance, dialect)
    if _on_sqlite(dialect):
        if _rounds_on_sqlite(type_):
            return f"{_rounding_on_sqlite(type_)}; and SQLite holds no integer past 2**63 - 1"
        if isinstance(type_, sqltypes.Integer):
            return None
        return bigint_problem(type_, dialect)
    if isinstance(type_, sqltypes.BigInteger):
        if getattr(type_, "unsigned", False):
            return None  # MySQL's BIGINT UNSIGNED
        return f"{type_!r} holds at most 2**63 - 1"
    numeric = isinstance(type_, sqltypes.Numeric) and not isinstance(type_, sqltypes.Float)
    if numeric and type_.precision is not None and type_.precision < 20:  # type: ignore[attr-defined]
        return f"{type_!r} holds {type_.precision} digits; 2**64 - 1 has 20"  # type: ignore[attr-defined]
    if isinstance(type_, sqltypes.Integer) and not isinstance(type_, sqltypes.Numeric):
        return f"{type_!r} holds at most 2**63 - 1"
    return bigint_problem(type_, dialect)


def converts(type_: sqltypes.TypeDecorator[Any]) -> bool:
    """Whether a ``TypeDecorator`` turns the bound value into something of its own."""
    cls = type(type_)
    return (
        cls.process_bind_param is not sqltypes.TypeDecorator.process_bind_param
        or cls.bind_processor is not sqltypes.TypeDecorator.bind_processor
    )


def _guid_problem(type_: sqltypes.TypeEngine[Any]) -> str | None:
    """Why ``type_`` cannot store a ``uuid.UUID``, or None if it can (or may).

    ``CombGuid`` and a ``TypeDecorator`` that converts the value (its own
    ``process_bind_param``) may; another ``TypeDecorator`` is judged by its
    ``impl``. Text of 36 characters and ``Uuid(as_uuid=False)`` may: psycopg,
    PyMySQL and asyncmy bind a ``uuid.UUID`` there, sqlite3, aiosqlite and
    asyncpg refuse it at the INSERT (documented; ``CombGuid()`` converts).
    """
    if _instance(type_, "types", "CombGuid"):
        return None
    if isinstance(type_, sqltypes.TypeDecorator):
        return None if converts(type_) else _guid_problem(type_.impl_instance)
    if isinstance(type_, sqltypes.Uuid):
        return None
    if isinstance(type_, sqltypes.Enum):
        return f"{type_!r} holds only its listed values"
    if isinstance(type_, sqltypes.String):
        if type_.length is not None and type_.length < _GUID_LENGTH:
            return (
                f"{type_!r} holds {type_.length} characters; the text form of a GUID "
                f"has {_GUID_LENGTH}"
            )
        return None
    if isinstance(type_, (sqltypes.Integer, sqltypes.Numeric, sqltypes.Float, *_NOT_NUMBERS)):
        return f"{type_!r} cannot store a uuid.UUID"
    return None


def _where(column: sa.Column[Any], table: sa.Table | None) -> str:
    return f"column {table.name}.{column.name}" if table is not None else f"column {column.name}"


def _refuse_first_problem(
    column: sa.Column[Any],
    table: sa.Table | None,
    problem_of: Callable[[sqltypes.TypeEngine[Any], str | None], str | None],
    error: type[SeqKeysError],
    message: Callable[[str, str, str | None], str],
) -> None:
    """Raise ``error`` for the first problem ``problem_of`` finds with the type or a variant.

    ``message(where, problem, dialect)`` words it, ``where`` naming the place as
    a message does (``column t.id (its variant for mysql)``), ``dialect`` the
    engine the type was judged for (None: any). Without a variant for SQLite,
    the base type is also judged as SQLite uses it (``column t.id (on SQLite,
    which has no variant of its own)``). Nothing where the column's type and
    each of its variants may hold the values.
    """
    variants = _variants(column.type)
    checks: list[tuple[str | None, sqltypes.TypeEngine[Any], str]] = [
        (None, column.type, ""),
    ]
    if not any(_on_sqlite(dialect) for dialect, _ in variants):
        checks.append(("sqlite", column.type, " (on SQLite, which has no variant of its own)"))
    checks.extend(
        (dialect, variant, f" (its variant for {dialect})") for dialect, variant in variants[1:]
    )
    for dialect, type_, on in checks:
        problem = problem_of(type_, dialect)
        if problem is not None:
            raise error(message(f"{_where(column, table)}{on}", problem, dialect))


def _refuse_unsigned(column: sa.Column[Any], table: sa.Table | None, fn: Any) -> None:
    """Refuse a column that cannot hold the ids of a Snowflake whose layout is unsigned."""
    _refuse_first_problem(
        column,
        table,
        u64_problem,
        InvalidSnowflakeError,
        lambda where, problem, dialect: (
            f"{where} cannot hold the ids of its default "
            f"{fn!r}, whose layout is unsigned (ids up to 2**64 - 1): {problem}. "
            + (
                "SQLite holds no integer past 2**63 - 1 at all: give the column an "
                "integer type there, .with_variant(sa.BigInteger(), 'sqlite') (or declare "
                "it sqlalchemy_seqkeys.UnsignedBigInteger()), where an id past "
                "2**63 - 1 then fails at its INSERT instead of being rounded"
                if _on_sqlite(dialect)
                else "Declare it sqlalchemy_seqkeys.UnsignedBigInteger() (NUMERIC(20, 0) "
                "on PostgreSQL, BIGINT UNSIGNED on MySQL and MariaDB, BIGINT on SQLite, "
                "whose numbers stop at 2**63 - 1; it reads ints, and binds an int compared "
                "with it as itself, where a plain sa.Numeric(20, 0) reads Decimal and, on "
                "PostgreSQL, cannot compare an id past 2**63 - 1: bigint out of range)"
            )
            + "; or drop unsigned=True from the layout (its ids then stay below "
            "2**63, and it runs out sooner: see layout.exhausts_at)"
        ),
    )


def _refuse_comb_in_native_uuid(column: sa.Column[Any], table: sa.Table | None, fn: Any) -> None:
    """Refuse a GUID default other than UUIDv7 on MariaDB's UUID type (``native_uuid=True``)."""
    type_ = column.type
    if _is_uuid7(fn) or not getattr(type_, "native_uuid", False):
        return
    if _instance(type_, "types", "CombGuid"):
        remedy = (
            "Use default=new_uuid7 with it, or CombGuid() / CombGuid(binary=True) for COMB keys"
        )
    elif _instance(type_, "typeid_sql", "TypeIDType"):
        prefix = type_.prefix  # type: ignore[attr-defined]
        remedy = (
            f"Use default=typeid_default({prefix!r}) (UUIDv7) with it, or "
            f"TypeIDType({prefix!r}) (16 bytes) for COMB keys"
        )
    else:
        return
    raise InvalidGuidError(
        f"{_where(column, table)} is {type_!r}, MariaDB's UUID type, "
        f"which swaps the groups of values whose random bits read as UUID versions 1 "
        f"to 5, as many COMB GUIDs of {fn!r} do, so their time order is lost. {remedy}"
    )


def _check_typeid_default(column: sa.Column[Any], table: sa.Table | None, fn: Any) -> None:
    """Refuse ``new_typeid`` as a default, and a ``typeid_default`` of another prefix."""
    where = _where(column, table)
    if not _instance(fn, "typeid", "TypeIDDefault"):  # new_typeid itself
        type_ = column.type
        prefix = getattr(type_, "prefix", "<prefix>")
        raise InvalidTypeIDError(
            f"{where} has default=new_typeid, which takes the prefix as its argument: "
            "SQLAlchemy would call it with the INSERT's execution context instead, and "
            f"every INSERT would fail. Use default=typeid_default({prefix!r}), which "
            "mints UUIDv7 TypeIDs of that prefix"
        )
    for dialect, variant in _variants(column.type):
        if not _instance(variant, "typeid_sql", "TypeIDType"):
            continue
        prefix = variant.prefix
        if prefix == fn.prefix:
            continue
        on = "" if dialect is None else f" (its variant for {dialect})"
        raise InvalidTypeIDError(
            f"{where}{on} is {variant!r}, whose ids are of type {prefix!r}, but its default "
            f"{fn!r} mints ids of type {fn.prefix!r}: every INSERT would fail. Use "
            f"default=typeid_default({prefix!r}), or TypeIDType({fn.prefix!r}) if the "
            f"column holds ids of type {fn.prefix!r}"
        )


def _check_type(column: sa.Column[Any], table: sa.Table | None) -> None:
    """Refuse a seqkeys default on a column type that cannot hold its values."""
    fn = _given_default(column)
    if fn is None:
        return
    type_ = column.type
    if not _known(type_):
        return
    if _is_typeid_default(fn):
        _check_typeid_default(column, table, fn)
        return
    integer = _integer_kind(fn)
    if integer is not None:
        what, error = integer
        layout = getattr(fn, "layout", None) if _instance(fn, "snowflake", "Snowflake") else None
        if layout is not None and layout.max_id > 2**63 - 1:
            _refuse_unsigned(column, table, fn)
            return
        _refuse_first_problem(
            column,
            table,
            bigint_problem,
            error,
            lambda where, problem, dialect: (
                f"{where} cannot hold the {what} of its default "
                f"{fn!r}: {problem}, and the values are 63-bit. "
                + (
                    "Declare it sa.BigInteger, or keep its type elsewhere and give it "
                    ".with_variant(sa.BigInteger(), 'sqlite')"
                    if _on_sqlite(dialect)
                    else "Declare it sa.BigInteger (INT64 on Spanner), or "
                    "sa.BigInteger().with_variant(sa.Integer(), 'sqlite') to keep SQLite's "
                    "INTEGER PRIMARY KEY; for Mapped[int] without a type, give "
                    "mapped_column(sa.BigInteger, ...) or type_annotation_map={int: sa.BigInteger}"
                )
            ),
        )
    elif _is_guid_default(fn):
        _refuse_comb_in_native_uuid(column, table, fn)
        _refuse_first_problem(
            column,
            table,
            lambda variant, _dialect: _guid_problem(variant),
            InvalidGuidError,
            lambda where, problem, _dialect: (
                f"{where} cannot store the GUIDs of its default "
                f"{fn!r}: {problem}. Declare it CombGuid() (or CombGuid(binary=True) "
                "for 16 bytes), which stores a uuid.UUID the way each engine indexes best "
                "(text of 36 characters where the engine has no UUID type, converted on "
                "every driver), or sa.Uuid()"
            ),
        )


def _shard_of(column: sa.Column[Any]) -> ShardId | None:
    if _instance(column.computed, "shard", "ShardComputed"):
        return column.computed.shard  # type: ignore[union-attr,no-any-return]
    fn = _given_default(column)
    return fn if _instance(fn, "shard", "ShardId") else None


def _check_shards(table: sa.Table, columns: list[sa.Column[Any]]) -> None:
    """Refuse a shard column that hashes a column its (complete) table does not have."""
    for column in columns:
        shard = _shard_of(column)
        if shard is None or column.table is not table:
            continue
        missing = [name for name in shard.columns if name not in table.c]
        if missing:
            have = ", ".join(repr(c.key) for c in table.c)
            raise InvalidShardError(
                f"{_where(column, table)} hashes {', '.join(map(repr, missing))} with {shard!r}, "
                f"but the table has no such column (its columns: {have}). Name the columns "
                "by their key, as in Table.c"
            )


#: tables still being constructed -> their shard columns, checked when the table is complete
_pending_shards: weakref.WeakKeyDictionary[sa.Table, list[sa.Column[Any]]] = (
    weakref.WeakKeyDictionary()
)
#: tables with columns to check again at CREATE TABLE (late types, columns added later)
_checked_at_create: weakref.WeakSet[sa.Table] = weakref.WeakSet()
#: tables whose construction has finished
_complete: weakref.WeakSet[sa.Table] = weakref.WeakSet()


def _is_ours(column: sa.Column[Any]) -> bool:
    fn = _given_default(column)
    return (
        _instance(column.computed, "shard", "ShardComputed")
        or _integer_kind(fn) is not None
        or _instance(fn, "shard", "ShardId")
        or _is_guid_default(fn)
        or _is_typeid_default(fn)
    )


@functools.cache
def _uuid7_rows() -> RowsAhead[uuid.UUID]:
    """Where an executemany keeps the UUIDv7 values of its rows (made at first use)."""
    from ._rows import RowsAhead

    return RowsAhead("uuid7")


def _new_uuid7_rows(context: ExecutionContext) -> uuid.UUID:
    """``new_uuid7`` as a column default that sees its execution context.

    SQLAlchemy calls a zero-argument default without its context, so a column
    declared ``default=new_uuid7`` calls this instead (the default as given,
    ``new_uuid7``, stays what SQLAlchemy copies and compares). An executemany
    mints the values of all its rows at its first row (one clock reading and
    lock, not one per row: the values one by one would give), kept for its
    other rows (:mod:`sqlalchemy_seqkeys._rows`).
    """
    from . import uuid7

    rows = _uuid7_rows()
    value = rows.pop(context)
    if value is None:
        # mint_many looked up at each call: tests count its calls
        value = rows.take(context, lambda n: uuid7.default_generator.mint_many(n))
    return uuid7.new_uuid7() if value is None else value


def declared_default(column: sa.Column[Any]) -> Any:
    """The callable ``default=`` the column was declared with; None if it has none.

    ``new_uuid7`` also once it became the context-aware default, and the
    object itself where SQLAlchemy wrapped it (a ``Snowflake``), on every
    supported SQLAlchemy.
    """
    fn = _given_default(column)
    return _loaded("uuid7", "new_uuid7") if fn is _new_uuid7_rows else fn


def _column_attached(column: sa.Column[Any], parent: Any) -> None:
    if not isinstance(parent, sa.Table) or not _is_ours(column):
        return
    _check_type(column, parent)
    fn = _given_default(column)
    is_new_uuid7 = fn is not None and fn is _loaded("uuid7", "new_uuid7")
    if is_new_uuid7 and isinstance(column.default, CallableColumnDefault):
        column.default.arg = _new_uuid7_rows
    if column.autoincrement == "auto" and (
        _integer_kind(fn) is not None or _instance(fn, "shard", "ShardId")
    ):
        # what create_all already assumes; Alembic then renders it (no SERIAL)
        column.autoincrement = False
    if _shard_of(column) is not None:
        if parent in _complete:
            _check_at_create(parent)  # its hashed columns may be appended next
        else:
            _pending_shards.setdefault(parent, []).append(column)
    if not _known(column.type):
        _check_at_create(parent)


def _table_complete(table: sa.Table, parent: Any) -> None:
    _complete.add(table)
    columns = _pending_shards.pop(table, None)
    if not columns:
        return
    if len(columns) == len(table.columns):
        # Only shard columns: Alembic's op.add_column puts the column it adds in a
        # Table(name, MetaData(), column) of its own, which is never created. Such a
        # table is checked at its CREATE TABLE (a model's table too, then).
        _check_at_create(table)
        return
    _check_shards(table, columns)


def _check_at_create(table: sa.Table) -> None:
    if table not in _checked_at_create:
        _checked_at_create.add(table)
        event.listen(table, "before_create", _before_create)


def _before_create(table: sa.Table, connection: Any, **kw: Any) -> None:
    for column in table.columns:
        if _is_ours(column):
            _check_type(column, table)
    _check_shards(table, list(table.columns))


def _install_listeners() -> None:
    if not event.contains(sa.Column, "after_parent_attach", _column_attached):
        event.listen(sa.Column, "after_parent_attach", _column_attached)
        event.listen(sa.Table, "after_parent_attach", _table_complete)


_install_listeners()
