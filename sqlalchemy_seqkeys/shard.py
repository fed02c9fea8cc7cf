"""Shard ids hashed from key columns, identical to Spanner's ``MOD(FARM_FINGERPRINT(...), N)``.

:func:`farm_fingerprint` is Spanner's ``FARM_FINGERPRINT`` (the ``farmhash`` extra)
and :func:`shard_of` its ``MOD``, which truncates toward zero (negative shard ids;
``non_negative=True`` floors). :func:`spanner_shard_column` declares the column
Spanner generates; other engines fill it on INSERT once they opt in, with
:func:`fill_shard_columns` or the engine plugin ``seqkeys_shards``
(:class:`ShardColumnsPlugin`). :class:`ShardId` is the same as a column default.

User guide: docs/strategies/shard-ids.md.
"""

from __future__ import annotations

import sys
import threading
import warnings
import weakref
from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy import types as sqltypes
from sqlalchemy.engine import CreateEnginePlugin
from sqlalchemy.engine.default import DefaultExecutionContext
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.schema import CreateColumn
from sqlalchemy.sql.compiler import DDLCompiler

from sqlalchemy_seqkeys._columns import converts
from sqlalchemy_seqkeys._compat import (
    CopiedComputed,
    insert_bind_name,
    insert_multi_values,
    insert_values,
    proxied_engine,
)
from sqlalchemy_seqkeys._dialect import facts
from sqlalchemy_seqkeys._validate import check_flag, check_int, check_name, shown
from sqlalchemy_seqkeys.errors import InvalidShardError, MissingExtraError, NaiveDatetimeError

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = [
    "ShardId",
    "farm_fingerprint",
    "fill_shard_columns",
    "shard_of",
    "spanner_shard_column",
    "spanner_string",
]

#: Spanner's MOD takes INT64 operands
MAX_SHARDS = 2**63 - 1
#: with ``non_negative``, ``MOD(x, N) + N`` must stay within INT64
MAX_NON_NEGATIVE_SHARDS = 2**62

_farmhash: Any = None


def _fingerprint64() -> Any:
    global _farmhash
    if _farmhash is None:
        try:
            import farmhash
        except ImportError:
            raise MissingExtraError(
                "farm_fingerprint() needs FarmHash: pip install 'sqlalchemy-seqkeys[farmhash]' "
                "(the pyfarmhash package)"
            ) from None
        _farmhash = farmhash.fingerprint64
    return _farmhash


def farm_fingerprint(value: str | bytes) -> int:
    """FarmHash Fingerprint64 of ``value`` as a signed 64-bit int, like Spanner's FARM_FINGERPRINT.

    Text is hashed as UTF-8, as Spanner hashes STRING values.

    Example::

        >>> farm_fingerprint("1footrue")
        -1541654101129638711

    :param value: the text (hashed as UTF-8) or bytes to hash.
    """
    if isinstance(value, str):
        try:
            data: bytes = value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidShardError(
                f"cannot hash {shown(value)}: it holds a lone surrogate "
                f"({value[exc.start]!r} at index {exc.start}), which is not UTF-8 and which "
                "a Spanner STRING cannot hold; pass the text decoded properly"
            ) from None
    elif isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
    else:
        raise InvalidShardError(
            f"farm_fingerprint() hashes str or bytes, not {type(value).__name__}; "
            "build the string the way Spanner's CAST(... AS STRING) does first"
        )
    unsigned: int = _fingerprint64()(data)
    return unsigned - (1 << 64) if unsigned >= (1 << 63) else unsigned


def _check_shards(shards: int, non_negative: bool) -> None:
    check_int(shards, "shards", InvalidShardError, min=1, max=MAX_SHARDS)
    check_flag(non_negative, "non_negative", InvalidShardError)
    if non_negative and shards > MAX_NON_NEGATIVE_SHARDS:
        raise InvalidShardError(
            f"non_negative=True takes shards up to 2**62, not {shards}: Spanner's "
            "MOD(MOD(x, N) + N, N) overflows INT64 above it and its INSERT fails; "
            "use fewer shards, or non_negative=False"
        )


def shard_of(value: str | bytes, shards: int, *, non_negative: bool = False) -> int:
    """Spanner's ``MOD(FARM_FINGERPRINT(value), shards)``: truncated toward zero.

    With ``non_negative=True``, ``0 .. shards - 1`` (Python's ``%``) instead.

    Example::

        >>> shard_of("alphabet", 2048)
        -107

    :param value: the text (hashed as UTF-8) or bytes to hash.
    :param shards: the number of shards ``N``, from 1 to 2**63 - 1 (to 2**62 with
        ``non_negative=True``).
    :param non_negative: ``True`` for Python's ``%`` (``0 .. N - 1``) instead of
        Spanner's ``MOD``.
    """
    _check_shards(shards, non_negative)
    fingerprint = farm_fingerprint(value)
    if non_negative:
        return fingerprint % shards
    remainder = abs(fingerprint) % shards
    return -remainder if fingerprint < 0 else remainder


#: The time zone of GoogleSQL's CAST(timestamp AS STRING) when none is given.
_SPANNER_DEFAULT_ZONE = ZoneInfo("America/Los_Angeles")


#: 400 Gregorian years, after which the calendar repeats exactly
_GREGORIAN_CYCLE = timedelta(days=146097)
#: before this UTC instant Python cannot compute Los Angeles' offset (the local time is in
#: year 0); it is still the zone's first offset, its local mean time
_FIRST_ZONED = datetime(1, 1, 2, tzinfo=timezone.utc)


def _timestamp_text(value: datetime) -> str:
    """GoogleSQL's text of a TIMESTAMP, in America/Los_Angeles (year 0001 to 9999 UTC).

    Spanner writes the zone's offset truncated toward zero to whole minutes (before
    1883-11-18 20:00 UTC, local mean time, -07:52:58, is -07:52) and computes the local
    time with that offset; the year has four digits, and the first hours of 0001-01-01
    UTC are written in local year 0000.
    """
    if value.tzinfo is None or value.utcoffset() is None:
        raise NaiveDatetimeError(
            f"{value!r} has no timezone, and Spanner's TIMESTAMP is an instant; "
            "pass an aware datetime"
        )
    try:
        utc = value.astimezone(timezone.utc)
    except OverflowError:
        raise InvalidShardError(
            f"cannot hash {value!r}: it is outside Spanner's TIMESTAMP range, "
            "0001-01-01 00:00:00 to 9999-12-31 23:59:59.999999 UTC"
        ) from None
    zoned = max(utc, _FIRST_ZONED).astimezone(_SPANNER_DEFAULT_ZONE)
    seconds = int((zoned.utcoffset() or timedelta(0)).total_seconds())
    minutes = abs(seconds) // 60  # toward zero, as Spanner does
    offset = timedelta(minutes=-minutes if seconds < 0 else minutes)
    naive = utc.replace(tzinfo=None)
    try:
        local, year_shift = naive + offset, 0
    except OverflowError:  # local year 0, which datetime has not: 400 years on, the same day
        local, year_shift = naive + _GREGORIAN_CYCLE + offset, 400
    text = (
        f"{local.year - year_shift:04d}-{local.month:02d}-{local.day:02d} "
        f"{local.hour:02d}:{local.minute:02d}:{local.second:02d}"
    )
    micro = local.microsecond
    if micro % 1000 == 0 and micro:
        text += f".{micro // 1000:03d}"
    elif micro:
        text += f".{micro:06d}"
    text += f"{'-' if seconds < 0 else '+'}{minutes // 60:02d}"
    if minutes % 60:
        text += f":{minutes % 60:02d}"
    return text


def spanner_string(value: object) -> str:
    """The text Spanner's ``CAST(value AS STRING)`` gives, for INT64, STRING, BOOL, TIMESTAMP, DATE.

    TIMESTAMP values are written in Spanner's default time zone,
    America/Los_Angeles, with 0, 3 or 6 fractional digits and the hour offset,
    exactly as the cast does (``2024-01-01 19:04:05.678-08``; before 1883-11-18
    20:00 UTC, local mean time cut to whole minutes, ``1850-06-01 04:38:15-07:52``;
    a year below 1000 in four digits). Any other type, a naive datetime, an
    instant outside Spanner's range (years 1 to 9999 UTC), or None raises an
    error instead of guessing.

    Example::

        >>> spanner_string(True), spanner_string(-5), spanner_string(date(2024, 1, 2))
        ('true', '-5', '2024-01-02')

    :param value: a ``bool``, ``int``, ``str``, aware ``datetime`` or ``date``.
    """
    if type(value) is str:  # the most common, first
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        # its number: an int subclass's own str() (an (int, Enum) member's 'Status.ACTIVE',
        # any IntEnum's on Python 3.10) is not what Spanner's CAST gives of the INT64
        number = int(value)
        if not -(2**63) <= number < 2**63:
            raise InvalidShardError(
                f"cannot hash {number}: Spanner's INT64 holds -2**63 to 2**63 - 1, so no row "
                "there has that key"
            )
        return str(number)
    if isinstance(value, str):
        return str.__str__(value)  # its text: a (str, Enum) member's str() is its name
    if isinstance(value, datetime):
        return _timestamp_text(value)
    if isinstance(value, date):
        return date.isoformat(value)  # a subclass's own isoformat() is not Spanner's
    if value is None:
        raise InvalidShardError(
            "cannot hash NULL: Spanner's CONCAT of a NULL is NULL, and so is the shard id; "
            "give the key columns values"
        )
    raise InvalidShardError(
        f"cannot hash a {type(value).__name__}; shard keys are INT64, STRING, BOOL, "
        "TIMESTAMP or DATE values, as in Spanner's CAST(... AS STRING)"
    )


#: a hashed column's value -> the text Spanner's CAST(column AS STRING) gives of what the
#: column stores; its second argument is the column's key, for the error
_Text = Callable[[Any, str], str]


def _stored_otherwise(key: str, value: object, column: str, detail: str) -> InvalidShardError:
    return InvalidShardError(
        f"cannot hash {shown(value)} ({type(value).__name__}) for column {key!r}, {column}: "
        f"{detail}"
    )


def _string_text(value: Any, key: str) -> str:
    if type(value) is str:
        return value
    if isinstance(value, str):
        return str.__str__(value)  # its text, which the column stores
    raise _stored_otherwise(key, value, "a String", "pass a str, the text it is to store")


def _integer_text(value: Any, key: str) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return spanner_string(int(value))  # an IntEnum member: its number, on any Python
    raise _stored_otherwise(
        key, value, "an integer column", "pass an int (the engines store other values otherwise)"
    )


def _boolean_text(value: Any, key: str) -> str:
    if value is True or (type(value) is int and value == 1):
        return "true"
    if value is False or (type(value) is int and value == 0):
        return "false"
    raise _stored_otherwise(key, value, "a Boolean", "pass True or False (or 1 or 0)")


def _date_text(value: Any, key: str) -> str:
    if isinstance(value, date) and not isinstance(value, datetime):
        return date.isoformat(value)
    raise _stored_otherwise(
        key,
        value,
        "a Date",
        "the engines cut a datetime to a day (in which zone depends on the engine) or "
        "refuse it; pass a date",
    )


def _timestamp_column_text(value: Any, key: str) -> str:
    if isinstance(value, datetime):
        return _timestamp_text(value)
    raise _stored_otherwise(key, value, "a DateTime", "pass an aware datetime")


def _enum_text(type_: sqltypes.Enum) -> _Text:
    """What ``sa.Enum`` stores: a member's name (or its ``values_callable`` value)."""

    def text(value: Any, key: str) -> str:
        try:
            # what Enum's bind processing stores (SQLAlchemy leaves it unannotated)
            stored = type_._db_value_for_elem(value)  # type: ignore[no-untyped-call]
        except (LookupError, TypeError):
            stored = None
        if isinstance(stored, str):
            return stored
        raise _stored_otherwise(
            key,
            value,
            f"an Enum of {', '.join(map(repr, type_.enums))}",
            "it is none of them; pass one of its members (whose stored text is hashed) "
            "or that text",
        )

    return text


def _column_text(type_: sqltypes.TypeEngine[Any]) -> _Text:
    """How a value given to a column of ``type_`` becomes the text Spanner hashes.

    The column's type decides, not the value's: ``sa.Enum`` stores a member's name,
    ``Boolean`` stores 1 as true. A value the column would store as something else
    than its text is refused; a type this library does not know (or a
    ``TypeDecorator`` that converts the value) hashes the value by :func:`spanner_string`.
    """
    while isinstance(type_, sqltypes.TypeDecorator):
        if converts(type_):
            return _any_text
        type_ = type_.impl_instance
    if isinstance(type_, sqltypes.Enum):  # before String, which it is
        return _enum_text(type_)
    if isinstance(type_, sqltypes.String):
        return _string_text
    if isinstance(type_, sqltypes.Boolean):
        return _boolean_text
    if isinstance(type_, sqltypes.Integer):
        return _integer_text
    if isinstance(type_, sqltypes.DateTime):
        return _timestamp_column_text
    if isinstance(type_, sqltypes.Date):
        return _date_text
    return _any_text


def _any_text(value: Any, key: str) -> str:
    return spanner_string(value)


#: each hashed column's key and how its value becomes text, in the hashing order
_Texts = tuple[tuple[str, _Text], ...]


def _column_texts(shard: ShardId, table: sa.Table | None) -> _Texts | None:
    """How each column ``shard`` hashes turns its value into text, in ``table``."""
    if not isinstance(table, sa.Table):
        return None
    found = _texts_cache.get(table)
    if found is None:
        found = _texts_cache[table] = {}
    texts = found.get(shard)
    if texts is None:
        texts = found[shard] = tuple(
            (key, _column_text(table.c[key].type) if key in table.c else _any_text)
            for key in shard.columns
        )
    return texts


#: Table -> ShardId -> how each hashed column's value becomes text (the column types')
_texts_cache: weakref.WeakKeyDictionary[sa.Table, dict[ShardId, _Texts]] = (
    weakref.WeakKeyDictionary()
)


class ShardId:
    """A column default: ``MOD(FARM_FINGERPRINT(CONCAT(CAST(col AS STRING), ...)), shards)``.

    ``columns`` are the names (keys) of the row's columns to hash, in order.
    Their values must be set by the application or by defaults of columns
    declared earlier in the table (SQLAlchemy computes defaults in column
    order). ``non_negative=True`` gives ``0 .. shards - 1``; see :func:`shard_of`.

    As a default (and in :func:`spanner_shard_column`), each value is hashed as
    its column stores it, by the column's type: the name an ``sa.Enum`` stores
    for a member, ``true`` for a ``Boolean`` given 1. A value its column would
    store as other text (a datetime in a ``Date`` column, 2 in a ``Boolean``, a
    bool or a text in an integer column) raises :class:`InvalidShardError`.

    Example::

        shard: Mapped[int] = mapped_column(
            BigInteger, primary_key=True, default=ShardId("last_access", shards=2048)
        )

    :param columns: the names (keys) of the row's columns to hash, in order; at least one.
    :param shards: the number of shards ``N``, from 1 to 2**63 - 1 (to 2**62 with
        ``non_negative=True``).
    :param non_negative: ``True`` for ``0 .. N - 1``; ``False``, Spanner's ``MOD``,
        keeps the fingerprint's sign.
    """

    def __init__(self, *columns: str, shards: int, non_negative: bool = False) -> None:
        if not columns:
            raise InvalidShardError("ShardId needs at least one column to hash")
        _check_shards(shards, non_negative)
        self.columns: Sequence[str] = tuple(
            check_name(getattr(c, "key", c), "a column to hash", InvalidShardError) for c in columns
        )
        self.shards = shards
        self.non_negative = non_negative

    def __repr__(self) -> str:
        names = ", ".join(repr(c) for c in self.columns)
        non_negative = ", non_negative=True" if self.non_negative else ""
        return f"ShardId({names}, shards={self.shards}{non_negative})"

    def of(self, *values: object) -> int:
        """The shard id of one row's key values, given in the column order.

        The values are hashed as they are, by :func:`spanner_string`, with no
        column to read a type from: give them as the columns store them (for an
        ``sa.Enum`` column, the text it stores for a member, its name by default).

        Example::

            >>> ShardId("n", "s", "b", shards=16).of(1, "foo", True)
            -7

        :param values: one value per hashed column, in the column order.
        """
        if len(values) != len(self.columns):
            raise InvalidShardError(
                f"{self!r} hashes {len(self.columns)} column(s), "
                f"{', '.join(map(repr, self.columns))}, but of() got {len(values)} value(s); "
                "pass one value per column, in that order"
            )
        text = "".join(spanner_string(v) for v in values)
        return shard_of(text, self.shards, non_negative=self.non_negative)

    def __call__(self, context: DefaultExecutionContext) -> int:
        # SQLAlchemy leaves get_current_parameters unannotated: it returns the row's dict
        row: dict[str, Any] = context.get_current_parameters()  # type: ignore[no-untyped-call]
        column = getattr(context, "current_column", None)  # the column being defaulted
        return self._of_row(
            row,
            "ShardId",
            "set it, or declare its default before the shard column",
            _column_texts(self, getattr(column, "table", None)),
        )

    def _of_row(
        self,
        row: Mapping[str, Any],
        what: str,
        remedy: str,
        texts: Sequence[tuple[str, _Text]] | None = None,
    ) -> int:
        """The shard id of one INSERT's row; a hashed column missing from it says ``remedy``.

        ``texts`` (each hashed column's key and how its value becomes text) turn each
        value into the text of what its column stores, by the column's type; without
        them the values are hashed as :meth:`of` hashes them.
        """
        try:
            if texts:  # each value's text, which of() then hashes as it is
                values = [text(row[key], key) for key, text in texts]
            else:
                values = [row[c] for c in self.columns]
        except KeyError as exc:  # the texts raise no KeyError of their own
            raise InvalidShardError(
                f"{what} hashes column {exc.args[0]!r}, which has no value in this INSERT; {remedy}"
            ) from None
        return self.of(*values)


# -- the stored generated column ------------------------------------------------


class ShardComputed(CopiedComputed):
    """``AS (MOD(FARM_FINGERPRINT(...), N)) STORED`` on Spanner; nothing elsewhere.

    Elsewhere the column is a plain column that the INSERT fills from
    :class:`ShardId` (see :func:`_fill_shard_ids`).
    """

    def __init__(self, shard: ShardId) -> None:
        self.shard = shard
        super().__init__(_spanner_expression(shard, quote=lambda name: name), persisted=True)

    def copied(self) -> ShardComputed:
        """A copied column (``to_metadata``, a mixin's) hashes the same columns."""
        return ShardComputed(self.shard)


def hashed_column_names(column: sa.Column[Any] | None, shard: ShardId) -> list[str]:
    """The names of the columns ``shard`` hashes, in the table of the shard ``column``.

    :class:`ShardId` takes the columns' keys (what an INSERT's parameters are named
    by); DDL and a migration script need their names, which differ for a
    ``Column("LastAccess", key="last_access")``. A key the table lacks is kept.
    """
    table = getattr(column, "table", None)
    if not isinstance(table, sa.Table):
        return list(shard.columns)
    return [table.c[key].name if key in table.c else key for key in shard.columns]


def _spanner_expression(shard: ShardId, quote: Any, names: Sequence[str] | None = None) -> str:
    parts = [f"CAST({quote(name)} AS STRING)" for name in (names or shard.columns)]
    text = parts[0] if len(parts) == 1 else f"CONCAT({', '.join(parts)})"
    n = shard.shards
    if shard.non_negative:
        return f"MOD(MOD(FARM_FINGERPRINT({text}), {n}) + {n}, {n})"
    return f"MOD(FARM_FINGERPRINT({text}), {n})"


@compiles(ShardComputed, "spanner+spanner")
def _spanner_generated(element: ShardComputed, compiler: DDLCompiler, **kw: Any) -> str:
    quote = compiler.preparer.quote
    names = hashed_column_names(element.column, element.shard)
    return f"AS ({_spanner_expression(element.shard, quote, names)}) STORED"


@compiles(ShardComputed)
def _filled_on_insert(element: ShardComputed, compiler: DDLCompiler, **kw: Any) -> str:
    return ""


@compiles(CreateColumn)
def _create_column(create: CreateColumn, compiler: DDLCompiler, **kw: Any) -> str:
    column = create.element
    if (
        not isinstance(column.computed, ShardComputed)
        or facts(compiler.dialect).generates_shard_columns
    ):
        text: str = compiler.visit_create_column(create, **kw)  # type: ignore[no-untyped-call]
        return text
    # a plain column: some dialects (SQL Server) leave the type out of any computed column
    type_ = compiler.dialect.type_compiler_instance.process(column.type, type_expression=column)
    text = f"{compiler.preparer.format_column(column)} {type_}"
    return text if column.nullable else f"{text} NOT NULL"


#: a shard column of a table: its key, its ShardId, how each hashed column's value
#: becomes text (by the column's type)
_ShardColumn = tuple[str, ShardId, _Texts]
#: Table -> its shard columns; computed once per table.
_shard_columns_cache: weakref.WeakKeyDictionary[sa.Table, list[_ShardColumn]] = (
    weakref.WeakKeyDictionary()
)
_hook_lock = threading.Lock()
_hook_installed = False
#: the engines fill_shard_columns() was called for (their own listener fills), and the
#: engines the deprecated process-wide hook has warned about; both hold root engines
#: (an ``engine.execution_options(...)`` copy counts as its engine)
_opted_in: weakref.WeakSet[sa.Engine] = weakref.WeakSet()
_warned: weakref.WeakSet[sa.Engine] = weakref.WeakSet()


def _shard_columns(table: sa.Table) -> list[_ShardColumn]:
    found = _shard_columns_cache.get(table)
    if found is None:
        found = []
        for c in table.columns:
            if isinstance(c.computed, ShardComputed):
                shard = c.computed.shard
                found.append((c.key, shard, _column_texts(shard, table) or ()))
        _shard_columns_cache[table] = found
    return found


def _row_shard(row: Mapping[str, Any], shard_column: _ShardColumn) -> int:
    """The shard id ``row`` hashes to; one given by hand must be it (InvalidShardError)."""
    key, shard, texts = shard_column
    value = shard._of_row(
        row,
        f"shard column {key!r}",
        "give it one (a column default is computed too late to hash)",
        texts,
    )
    given = row.get(key)
    if given is not None and given != value:
        raise InvalidShardError(
            f"shard column {key!r} was given {given!r}, but the row hashes to {value}; "
            "leave it out and it is filled in (on Spanner the server computes it)"
        )
    return value


def _filled(
    row: Mapping[str, Any],
    shards: list[_ShardColumn],
    inserted: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``row`` with its shard ids; ``inserted``: the row as the INSERT stores it, which
    they hash (the statement's ``.values()`` under ``row``), else ``row`` itself."""
    out = dict(row)
    seen = out if inserted is None else dict(inserted)
    for shard_column in shards:
        out[shard_column[0]] = seen[shard_column[0]] = _row_shard(seen, shard_column)
    return out


def _each_row(
    conn: sa.Connection,
    statement: sa.Insert,
    rows: Sequence[Mapping[str, Any]],
    shards: list[_ShardColumn],
    each: Callable[
        [Mapping[str, Any], list[_ShardColumn], Mapping[str, Any] | None], dict[str, Any]
    ],
) -> list[dict[str, Any]]:
    """``each`` (:func:`_filled` or :func:`_left_out`) of the execute() parameters ``rows``
    of ``statement``, given each row as the INSERT stores it where ``.values()`` has some."""
    inserted = _inserted_rows(conn, statement, rows, shards) if insert_values(statement) else None
    if inserted is None:
        return [each(row, shards, None) for row in rows]
    return [each(row, shards, seen) for row, seen in zip(rows, inserted, strict=True)]


def _inserted_rows(
    conn: sa.Connection,
    statement: sa.Insert,
    rows: Sequence[Mapping[str, Any]],
    shards: list[_ShardColumn],
) -> list[dict[str, Any]] | None:
    """Each of ``rows`` with the hashed and shard columns of ``insert(t).values(...)`` as
    SQLAlchemy merges them: a column's bound value, unless the parameters give its bind's
    name (``_compat.insert_bind_name``), which then wins, as in SQLAlchemy.

    Nothing is compiled or evaluated: the values are read from the bindparams, and a column
    that is neither hashed nor a shard column is not read at all. None: nothing to merge
    (no such column in ``.values()``; rows of ``.values([...])``, which SQLAlchemy refuses
    with parameters).
    """
    values = insert_values(statement)
    if not values or insert_multi_values(statement):
        return None
    binds = _read_binds(values, shards)
    if not binds:  # the common case (an ORM flush with an SQL expression): the rows as given
        return None
    named = [
        (column, bind, insert_bind_name(statement, column, bind, conn.dialect))
        for column, bind in binds
    ]
    inserted = []
    for row in rows:
        merged = dict(row)
        for column, bind, name in named:
            value = _read_value(column, bind, name, row)
            if value is not _UNREAD:
                merged[column] = value
        inserted.append(merged)
    return inserted


#: :func:`_read_value` of a bind that has no value: SQLAlchemy says so when it runs
_UNREAD: Any = object()


def _read_binds(
    values: Mapping[Any, Any], shards: list[_ShardColumn]
) -> list[tuple[str, sa.BindParameter[Any]]]:
    """The hashed and shard columns of ``.values()``, each with its bindparam; a hashed
    column given an SQL expression is refused. The other columns are left alone."""
    shard_keys = {key for key, _, _ in shards}
    hashed = {column for _, shard, _ in shards for column in shard.columns}
    binds = []
    for key, value in values.items():
        column = _value_key(key)
        if column not in hashed and column not in shard_keys:
            continue
        if isinstance(value, sa.BindParameter):
            binds.append((column, value))
        elif column in hashed:
            raise InvalidShardError(
                f"cannot hash column {column!r}: its value is an SQL expression, not a value"
            )
    return binds


def _read_value(column: str, bind: sa.BindParameter[Any], name: str, row: Mapping[str, Any]) -> Any:
    """The value SQLAlchemy stores in ``column`` of ``.values()``: the parameter ``name`` of
    ``row`` (the execute() parameters) if it gives one, else ``bind``'s own value. The library
    never calls a ``callable_`` (SQLAlchemy calls it again, for another value): refused.
    """
    anonymous = not bind.unique and name != bind.key
    if anonymous and (column in row or name in row):
        # SQLAlchemy's statement cache decides which name the bind has: this or the column's
        raise InvalidShardError(
            f"cannot hash column {column!r}: its value in .values() is an anonymous "
            f"bindparam(None, ...), which SQLAlchemy names {name!r} or {column!r} (its "
            "statement cache decides), so the parameters may or may not override it; give "
            ".values() a plain value or a named bindparam"
        )
    if name in row:
        return row[name]
    if bind.callable is not None:
        raise InvalidShardError(
            f"cannot hash column {column!r}: its value in .values() is "
            f"bindparam({name!r}, callable_=...), which SQLAlchemy calls only as the INSERT "
            f"runs (called here too, it would give another value); pass the value in the "
            f"parameters instead: conn.execute(statement, {{{name!r}: value, ...}})"
        )
    if bind.required:
        return _UNREAD
    return bind.value


def _left_out(
    row: Mapping[str, Any],
    shards: list[_ShardColumn],
    inserted: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``row`` without the shard ids given by hand, each checked: the server computes them.

    ``inserted``: the row as the INSERT stores it (as for :func:`_filled`).
    """
    out = dict(row)
    seen = out if inserted is None else inserted
    for shard_column in shards:
        if shard_column[0] in out:
            _row_shard(seen, shard_column)
            del out[shard_column[0]]
    return out


#: what a ``before_execute`` listener returns: the statement and its parameters
_Execution = tuple[Any, Sequence[Mapping[str, Any]], Mapping[str, Any]]


def _shard_listener(*, implicit: bool) -> Callable[..., _Execution]:
    """A ``before_execute`` listener that fills the shard columns of an INSERT on engines
    where they are not generated: the one :func:`fill_shard_columns` installs on an engine,
    or (``implicit``) the deprecated one on the ``Engine`` class, which leaves the engines
    that opted in to their own listener and warns once for each of the others."""

    def fill_shard_ids(
        conn: sa.Connection,
        statement: Any,
        multiparams: Sequence[Mapping[str, Any]],
        params: Mapping[str, Any],
        execution_options: Any,
    ) -> _Execution:
        if not isinstance(statement, sa.Insert) or not isinstance(statement.table, sa.Table):
            return statement, multiparams, params
        shards = _shard_columns(statement.table)
        if not shards:
            return statement, multiparams, params
        engine = proxied_engine(conn.engine) if implicit else None
        if engine is not None and engine in _opted_in:
            return statement, multiparams, params  # the engine's own listener fills the row
        filled: _Execution
        if facts(conn.dialect).generates_shard_columns:  # Spanner: the server computes them
            left_out = _given_left_out(conn, statement, multiparams, params, shards)
            if left_out is None:  # no shard id given: as it came
                return statement, multiparams, params
            if engine is not None and engine not in _warned:
                _warn_not_opted_in(engine, statement, "checked (and left out, for the server)")
            return left_out
        if multiparams:
            filled = statement, _each_row(conn, statement, multiparams, shards, _filled), params
        elif params:
            filled = (
                statement,
                multiparams,
                _each_row(conn, statement, [params], shards, _filled)[0],
            )
        else:
            filled = _filled_statement(statement, shards), multiparams, params
        if engine is not None and engine not in _warned:
            _warn_not_opted_in(engine, statement)
        return filled

    return fill_shard_ids


_fill_shard_ids = _shard_listener(implicit=False)
_fill_shard_ids_implicitly = _shard_listener(implicit=True)


def _given_left_out(
    conn: sa.Connection,
    statement: sa.Insert,
    multiparams: Sequence[Mapping[str, Any]],
    params: Mapping[str, Any],
    shards: list[_ShardColumn],
) -> _Execution | None:
    """An INSERT on an engine that generates the shard columns, with each shard id given by
    hand checked (a wrong one raises InvalidShardError) and left out: the server refuses
    any value for its generated column, and computes the same. None: none was given.
    """
    keys = [key for key, _, _ in shards]
    if multiparams:
        if not any(key in row for row in multiparams for key in keys):
            return None
        return statement, _each_row(conn, statement, multiparams, shards, _left_out), params
    if params:
        if not any(key in params for key in keys):
            return None
        return statement, multiparams, _each_row(conn, statement, [params], shards, _left_out)[0]
    given = insert_multi_values(statement).intersection(keys)
    if given:
        raise InvalidShardError(
            f"this INSERT into {statement.table} gives shard column(s) "
            f"{', '.join(sorted(given))} a value in several rows of .values([...]), which "
            f"{conn.dialect.name} computes itself and refuses to be given: leave the shard "
            "column out (the server computes it), or pass the rows as parameters "
            "(conn.execute(insert(table), rows)), where each given one is checked and left "
            "out for you"
        )
    values = insert_values(statement)
    if not values or not any(_value_key(key) in keys for key in values):
        return None
    return _statement_left_out(conn, statement, values, shards), multiparams, params


def _value_key(key: Any) -> str:
    """The column key of a key of ``insert(t).values(...)``: a name or a column."""
    return key if isinstance(key, str) else getattr(key, "key", str(key))


def _statement_left_out(
    conn: sa.Connection,
    statement: sa.Insert,
    values: Mapping[Any, Any],
    shards: list[_ShardColumn],
) -> sa.Insert:
    """``insert(t).values(...)`` whose shard ids given by hand are right, without them.

    The statement is built again from its table, values and execution options; one with
    more (RETURNING, a prefix, a hint), which that would lose, is refused instead.
    """
    _left_out(_bound_row(values, shards), shards)  # each given one checked
    keys = {key for key, _, _ in shards}
    rebuilt = sa.insert(statement.table).values(dict(values))
    if str(rebuilt.compile(dialect=conn.dialect)) != str(statement.compile(dialect=conn.dialect)):
        raise InvalidShardError(
            f"this INSERT into {statement.table} gives shard column(s) "
            f"{', '.join(sorted(keys & {_value_key(k) for k in values}))} a value, which "
            f"{conn.dialect.name} computes itself and refuses to be given; the value is right, "
            "but the INSERT has more than its values to keep: leave the shard column out "
            "(the server computes it), or pass the rows as parameters "
            "(conn.execute(insert(table), rows)), where it is left out for you"
        )
    kept = {key: value for key, value in values.items() if _value_key(key) not in keys}
    return (
        sa.insert(statement.table)
        .values(kept)
        .execution_options(**statement.get_execution_options())
    )


def _warn_not_opted_in(engine: sa.Engine, statement: sa.Insert, done: str = "filled") -> None:
    """The deprecated hook filled (``done``) a row of an engine that did not opt in: warn, once."""
    with _hook_lock:
        if engine in _warned:
            return
        _warned.add(engine)
    warnings.warn(
        f"sqlalchemy-seqkeys {done} the shard column(s) of an INSERT into {statement.table} "
        f"on {engine!r}, which did not opt in, through the hook on every Engine of the "
        "process; that hook is deprecated since 0.3 and goes away in 0.4. Call "
        "sqlalchemy_seqkeys.fill_shard_columns(engine) once after creating the engine, or "
        "create it with create_engine(url, plugins=['seqkeys_shards'])",
        DeprecationWarning,
        stacklevel=2,
    )


def _filled_statement(statement: sa.Insert, shards: list[_ShardColumn]) -> sa.Insert:
    values = insert_values(statement)
    if (
        not values
        or insert_multi_values(statement)
        or getattr(statement, "select", None) is not None
    ):
        raise InvalidShardError(
            f"cannot fill the shard columns of this INSERT into {statement.table}: pass the rows "
            "as parameters (conn.execute(insert(table), rows)) or use .values(col=value, ...)"
        )
    filled = _filled(_bound_row(values, shards), shards)
    return statement.values({key: filled[key] for key, _, _ in shards})


def _bound_row(values: Mapping[Any, Any], shards: list[_ShardColumn]) -> dict[str, Any]:
    """The hashed and shard columns of the row ``insert(t).values(...)`` was given, by column
    key (:func:`_read_binds`, :func:`_read_value`); the other columns are not read."""
    row: dict[str, Any] = {}
    for column, bind in _read_binds(values, shards):
        name = column if bind.unique else str(bind.key)  # no parameters: only for the errors
        value = _read_value(column, bind, name, {})
        if value is not _UNREAD:
            row[column] = value
    return row


def _install_hook() -> None:
    global _hook_installed
    with _hook_lock:
        if not _hook_installed:
            event.listen(sa.Engine, "before_execute", _fill_shard_ids_implicitly, retval=True)
            _hook_installed = True


def fill_shard_columns(engine: sa.Engine | AsyncEngine) -> None:
    """Have ``engine`` fill the shard columns of :func:`spanner_shard_column` on INSERT.

    Call it once for each engine that inserts into a table with a shard column,
    right after creating the engine; or create the engine with SQLAlchemy's
    engine plugin of this package, which calls it for you::

        engine = create_engine(url, plugins=["seqkeys_shards"])
        # or: create_engine("postgresql+psycopg://...?plugin=seqkeys_shards")

    It installs a ``before_execute`` listener on this engine alone (an
    ``AsyncEngine``'s ``sync_engine``; for an ``engine.execution_options(...)``
    copy, the engine it copies). Calling it again for the same engine does
    nothing. On Spanner the server computes its generated column and refuses any
    value for it: the listener leaves the rows alone, except that a shard id given
    by hand is checked (a wrong one raises :class:`InvalidShardError`, as elsewhere)
    and left out of the INSERT. Without it the rows are still filled, for one more
    minor version, by a deprecated hook on every engine of the process, which
    warns once per engine that did not opt in.

    Example::

        >>> engine = sa.create_engine("sqlite://")
        >>> fill_shard_columns(engine)

    :param engine: the ``Engine`` (from ``create_engine()``) or ``AsyncEngine``
        (from ``create_async_engine()``) whose INSERTs fill the shard columns.
    """
    root = proxied_engine(engine if isinstance(engine, sa.Engine) else _sync_engine(engine))
    with _hook_lock:
        if root in _opted_in:
            return
        event.listen(root, "before_execute", _fill_shard_ids, retval=True)
        _opted_in.add(root)


def _sync_engine(engine: object) -> sa.Engine:
    """An AsyncEngine's ``sync_engine``; anything else is refused."""
    # an AsyncEngine exists only once its module is imported: no import of asyncio here
    asyncio_ext = sys.modules.get("sqlalchemy.ext.asyncio")
    async_engine = getattr(asyncio_ext, "AsyncEngine", None)
    if async_engine is None or not isinstance(engine, async_engine):
        raise InvalidShardError(
            "fill_shard_columns() takes an Engine or an AsyncEngine (what create_engine() "
            f"or create_async_engine() returns), not {shown(engine)} "
            f"({type(engine).__name__}); for a Connection or a Session, pass the engine it "
            "uses (connection.engine, session.get_bind())"
        )
    sync: sa.Engine = engine.sync_engine
    return sync


class ShardColumnsPlugin(CreateEnginePlugin):
    """SQLAlchemy's engine plugin ``seqkeys_shards``: :func:`fill_shard_columns` on each new engine.

    Installed with the package (the ``sqlalchemy.plugins`` entry point), and
    named in ``create_engine(url, plugins=["seqkeys_shards"])``,
    ``create_async_engine(url, plugins=["seqkeys_shards"])`` or the URL's
    ``?plugin=seqkeys_shards``; SQLAlchemy constructs it, not the application.

    :param url: the URL given to ``create_engine()``; the plugin takes nothing from it.
    :param kwargs: the keyword arguments of ``create_engine()``; the plugin takes none.
    """

    def update_url(self, url: sa.URL) -> sa.URL:
        """The URL unchanged: the plugin has no parameters of its own."""
        return url

    def engine_created(self, engine: sa.Engine) -> None:
        """Opt the new engine in: :func:`fill_shard_columns`."""
        fill_shard_columns(engine)


def spanner_shard_column(
    name: str,
    *columns: str,
    shards: int,
    non_negative: bool = False,
    **column_kw: Any,
) -> sa.Column[int]:
    """A shard-id column: generated by Spanner, filled by this library everywhere else.

    On Spanner the column is ``name INT64 NOT NULL AS (MOD(FARM_FINGERPRINT(
    CAST(c1 AS STRING)), shards)) STORED`` (several ``columns`` are joined
    with ``CONCAT``), so the server computes it. On the other engines it is a
    plain ``BIGINT NOT NULL`` column, and every INSERT through an engine that
    opted in with :func:`fill_shard_columns` (or the ``seqkeys_shards`` engine
    plugin) gets the same value computed in Python by :class:`ShardId`: from
    the ORM, from ``conn.execute(insert(table), rows)`` and from
    ``insert(table).values(...)``. The hashed columns' values must be in the
    INSERT itself (a column default is computed too late to hash), and a shard
    id given by hand must be the right one (:class:`InvalidShardError`); on
    Spanner it is then left out of the INSERT, and the server computes it.

    An engine that did not opt in is still filled, for one more minor version,
    by a hook on every engine of the process that this function installs; it
    warns once per such engine (``DeprecationWarning``).

    Example::

        class UserAccessLog(Base):
            __tablename__ = "UserAccessLogs"
            ShardId: Mapped[int] = spanner_shard_column(
                "ShardId", "LastAccess", shards=2048, primary_key=True
            )
            LastAccess: Mapped[datetime] = mapped_column(DateTime(timezone=True), primary_key=True)
            UserId: Mapped[int] = mapped_column(BigInteger, primary_key=True)

        engine = create_engine(url, plugins=["seqkeys_shards"])  # fills it on INSERT

    :param name: the column's name.
    :param columns: the names (keys) of the columns to hash, in order; at least one.
    :param shards: the number of shards ``N``, from 1 to 2**63 - 1 (to 2**62 with
        ``non_negative=True``).
    :param non_negative: ``True`` for ``0 .. N - 1`` (``MOD(MOD(..., N) + N, N)``);
        ``False``, Spanner's ``MOD``, keeps the fingerprint's sign.
    :param column_kw: keyword arguments of ``sqlalchemy.Column`` (``primary_key=True``);
        ``nullable`` and ``autoincrement`` default to ``False``.
    """
    check_name(name, "name", InvalidShardError)
    shard = ShardId(*columns, shards=shards, non_negative=non_negative)
    column_kw.setdefault("nullable", False)
    column_kw.setdefault("autoincrement", False)
    _install_hook()
    return sa.Column(name, sa.BigInteger, ShardComputed(shard), **column_kw)
