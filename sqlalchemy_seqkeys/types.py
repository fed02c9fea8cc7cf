"""``CombGuid``: a GUID column stored the way each engine wants, and ``new_comb_guid``.

:class:`CombGuid` picks the storage each dialect indexes best (``UUID``,
``UNIQUEIDENTIFIER``, ``RAW(16)``, ``CHAR(36)``, ``BINARY(16)`` with
``binary=True``) and always gives back :class:`uuid.UUID`. :data:`new_comb_guid`
mints the :class:`~sqlalchemy_seqkeys.CombLayout` that the server's ``ORDER BY``
sorts in minting order (``AT_END`` on SQL Server, ``AS_STRING`` elsewhere), and
random version 4 UUIDs on Spanner, where a key growing with time is the hotspot.

User guide: docs/strategies/comb-uuid7.md.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy import types as sqltypes
from sqlalchemy.dialects import registry
from sqlalchemy.engine.default import DefaultExecutionContext
from sqlalchemy.engine.interfaces import Dialect

from ._dialect import facts, has_facts, mariadb_uuid_keeps_v7_order
from ._rows import RowsAhead
from ._validate import check_flag, check_name, parse_uuid, shown
from .comb import CombLayout, comb_minter, comb_minter_many
from .dialects import GuidStorage
from .errors import InvalidGuidError, UnknownDialectError

__all__ = ["CombGuid", "CombGuidDefault", "new_comb_guid"]


def _as_uuid(value: object) -> uuid.UUID:
    guid = parse_uuid(value)
    if guid is not None:
        return guid
    if isinstance(value, str):
        raise InvalidGuidError(
            f"{value!r} is not a GUID; a CombGuid column takes a uuid.UUID "
            "or its text form such as '0190b6a8-6c3e-7d4a-9f1e-2b5c8d7e6f10'"
        )
    raise InvalidGuidError(
        f"a CombGuid column takes a uuid.UUID (or its text form), not "
        f"{type(value).__name__} {value!r}; wrap bytes with uuid.UUID(bytes=...)"
    )


# -- storage per dialect: sqlalchemy_seqkeys.dialects.<family>.FACTS.guid_storage --


class _MariaDBUuid(sqltypes.UserDefinedType[str]):
    """MariaDB's own ``UUID`` column type; the driver exchanges its text form."""

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return "UUID"

    def literal_processor(self, dialect: Dialect) -> Callable[[Any], str]:
        # offline SQL (literal_binds): the UUID's text, quoted as a string literal
        def process(value: Any) -> str:
            return "'" + str(value).replace("'", "''") + "'"

        return process


def _uuid_or_none(value: Any) -> uuid.UUID | None:
    """None for None, else ``value`` as a UUID (what :func:`_as_uuid` accepts)."""
    return None if value is None else _as_uuid(value)


def _uuid_bytes(value: uuid.UUID) -> bytes:
    return value.bytes


def _uuid_text(value: uuid.UUID) -> str:
    # str(UUID) formats through '%032x' and five slices joined by '%s'; this
    # is the same text in half the time, and it runs once per row.
    h = value.int.to_bytes(16, "big").hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


#: bit 79 of a UUID: the top bit of its version nibble (versions 8 to 15)
MARIADB_SUSPECT_BIT = 1 << 79


def mariadb_uuid_refuses(n: int) -> bool:
    """Whether MariaDB's ``UUID`` type (10.11.5+) refuses the UUID whose integer is ``n``.

    MariaDB stores versions 1 to 5 (with the RFC variant) with their groups
    swapped, and tells such a stored value by bit 7 of byte 6 and of minus
    byte 8 (a signed char): versions 8 to 15 whose byte 8 is 0x01 to 0x80 (the
    NCS variant but 0x00, and 0x80) would read as swapped, so it refuses them
    ("Incorrect uuid value"). Callers test ``MARIADB_SUSPECT_BIT`` first.
    """
    return bool(n & MARIADB_SUSPECT_BIT) and 0 < (n >> 56) & 0xFF <= 0x80


class MariaDBUuidRefusedError(InvalidGuidError):
    """A value MariaDB's ``UUID`` type refuses, bound to ``CombGuid(native_uuid=True)``.

    ``TypeIDType`` raises its own error instead (it catches this one).
    """


def mariadb_uuid_refused(value: uuid.UUID) -> MariaDBUuidRefusedError:
    """The error for ``value``, which :func:`mariadb_uuid_refuses`."""
    return MariaDBUuidRefusedError(
        f"{value} cannot be stored in MariaDB's UUID type (CombGuid(native_uuid=True)): "
        f"MariaDB refuses a UUID of version {value.int >> 76 & 15} (8 to 15) whose byte 8 "
        "is 0x01 to 0x80 (the NCS variant), as it would read back as one of versions 1 to "
        "5 stored swapped. Store such values with native_uuid=False: "
        "CombGuid(binary=True) (BINARY(16)) or CombGuid()"
    )


def _mariadb_uuid_text(value: uuid.UUID) -> str:
    n = value.int
    if n & MARIADB_SUSPECT_BIT and mariadb_uuid_refuses(n):
        raise mariadb_uuid_refused(value)
    return _uuid_text(value)


#: how a uuid.UUID is handed to the driver, by storage form
_TO_STORED: dict[str, Callable[[uuid.UUID], Any]] = {
    "native": lambda value: value,
    "text": _uuid_text,
    "bytes": _uuid_bytes,
    "mariadb_uuid": _mariadb_uuid_text,  # the text, for MariaDB's UUID type
}


def _storage(dialect: Dialect) -> GuidStorage:
    return facts(dialect).guid_storage


class CombGuid(sqltypes.TypeDecorator[uuid.UUID]):
    """A GUID column type with per-dialect storage; values are ``uuid.UUID``.

    ``binary=True`` stores 16 bytes where the engine has a choice (MySQL and
    MariaDB ``BINARY(16)``, SQLite ``BLOB``, Spanner ``BYTES(16)``) instead of
    the 36-character text. Binds accept a ``uuid.UUID`` or its text: 32 hex
    digits, with the four hyphens of the 8-4-4-4-12 form or none, alone, in
    braces or after ``urn:uuid:``; anything else (surrounding spaces, a sign,
    underscores, ...) raises :class:`~sqlalchemy_seqkeys.InvalidGuidError`.
    A subclass or a ``TypeDecorator`` over it reads as itself: its own
    ``process_result_value`` runs.

    ``native_uuid=True`` is the storage for UUIDv7 keys on MariaDB: its own
    ``UUID`` type (16 bytes), which keeps UUIDs of version 6 and up in time
    order from 10.11.6 (10.10.7, 11.0.4, 11.1.3, 11.2.2 in their series, and
    every 11.3 and later; 10.11.5 stores them in order but compares them
    wrongly, MDEV-31926); elsewhere (older MariaDB, MySQL, other engines) the
    column is what it would be without it. COMB values carry random bits where
    the version goes, so MariaDB's ``UUID`` type swaps the groups of many of
    them (those that read as versions 1 to 5) and scrambles their order: a
    ``new_comb_guid`` default on such a column is refused.

    :param binary: store 16 bytes instead of the 36-character text where the
        engine has both (no change where its own UUID type is used).
    :param native_uuid: MariaDB's own ``UUID`` type where it keeps UUIDv7 keys
        (``default=new_uuid7``) in order, MariaDB 10.11.6 and later (10.10.7,
        11.0.4, 11.1.3, 11.2.2 in their series); elsewhere
        the column is what it would be without it. Not with ``binary``. A value
        MariaDB refuses (version 8 to 15 with byte 8 from 0x01 to 0x80) raises
        :class:`~sqlalchemy_seqkeys.InvalidGuidError` when it is stored (INSERT,
        UPDATE ... SET); compared with the column (``==``, ``in_``) it finds no row.

    Example::

        id: Mapped[uuid.UUID] = mapped_column(
            CombGuid(binary=True), primary_key=True, default=new_comb_guid
        )
        event_id: Mapped[uuid.UUID] = mapped_column(
            CombGuid(native_uuid=True), primary_key=True, default=new_uuid7
        )
    """

    impl = sqltypes.CHAR(36)
    cache_ok = True

    # native_uuid is not keyword-only: SQLAlchemy's statement cache keys a type by
    # its positional-or-keyword __init__ arguments
    def __init__(self, binary: bool = False, native_uuid: bool = False) -> None:
        super().__init__()
        check_flag(binary, "binary", InvalidGuidError)
        check_flag(native_uuid, "native_uuid", InvalidGuidError)
        if binary and native_uuid:
            raise InvalidGuidError(
                "CombGuid takes binary=True or native_uuid=True, not both: MariaDB's "
                "UUID type is already 16 bytes"
            )
        self.binary = binary
        self.native_uuid = native_uuid

    def __repr__(self) -> str:
        if self.native_uuid:
            return "CombGuid(native_uuid=True)"
        return "CombGuid(binary=True)" if self.binary else "CombGuid()"

    def _mariadb_uuid(self, dialect: Dialect) -> bool:
        return self.native_uuid and mariadb_uuid_keeps_v7_order(dialect)

    @property
    def python_type(self) -> type[uuid.UUID]:
        return uuid.UUID

    def _form(self, dialect: Dialect) -> str:
        if self._mariadb_uuid(dialect):
            return "mariadb_uuid"
        storage = _storage(dialect)
        return storage.binary_form if self.binary else storage.text_form

    def coerce_compared_value(self, op: Any, value: Any) -> Any:
        # A value compared with the column (==, !=, in_) is not stored: it binds
        # its text without MariaDB's refusal (the server finds no row for it).
        # INSERT and UPDATE ... SET bind with the column's own type, which refuses.
        # A subclass keeps its own type (its binds may differ).
        if self.native_uuid and type(self) is CombGuid:
            return _COMPARED
        return self

    def load_dialect_impl(self, dialect: Dialect) -> sqltypes.TypeEngine[Any]:
        if self._mariadb_uuid(dialect):
            return _MariaDBUuid()
        storage = _storage(dialect)
        return dialect.type_descriptor(storage.binary if self.binary else storage.text)

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if value is None:
            return None
        return _TO_STORED[self._form(dialect)](_as_uuid(value))

    def bind_processor(self, dialect: Dialect) -> Callable[[Any], Any] | None:
        # The same conversion as process_bind_param, as one closure per storage
        # form, looked up once per dialect: it runs once per row. A uuid.UUID
        # (what every default mints) takes one class check; None and text take
        # the slow branch, _uuid_or_none.
        form = self._form(dialect)
        impl_process = self.impl_instance.bind_processor(dialect)
        uuid_class = uuid.UUID
        process: Callable[[Any], Any]

        if form == "text":

            def process(value: Any) -> Any:
                if value.__class__ is not uuid_class and (value := _uuid_or_none(value)) is None:
                    return None
                # _uuid_text, inlined
                h = value.int.to_bytes(16, "big").hex()
                return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

        elif form == "mariadb_uuid":
            suspect = MARIADB_SUSPECT_BIT

            def process(value: Any) -> Any:
                if value.__class__ is not uuid_class and (value := _uuid_or_none(value)) is None:
                    return None
                n = value.int
                # one bit test for the values MariaDB takes: versions 0 to 7
                if n & suspect and mariadb_uuid_refuses(n):
                    raise mariadb_uuid_refused(value)
                h = n.to_bytes(16, "big").hex()
                return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

        elif form == "bytes":

            def process(value: Any) -> Any:
                if value.__class__ is not uuid_class and (value := _uuid_or_none(value)) is None:
                    return None
                return value.int.to_bytes(16, "big")  # UUID.bytes, without the property

        else:
            to_stored = _TO_STORED[form]

            def process(value: Any) -> Any:
                if value.__class__ is not uuid_class and (value := _uuid_or_none(value)) is None:
                    return None
                return to_stored(value)

        if impl_process is None:
            return process

        def process_then_impl(value: Any) -> Any:
            return impl_process(process(value))

        return process_then_impl

    def process_literal_param(self, value: Any, dialect: Dialect) -> str:
        # Offline SQL: the impl quotes text; bytes get the dialect's hex literal.
        guid = _as_uuid(value)
        form = self._form(dialect)
        if form == "bytes":
            return _storage(dialect).bytes_literal.format(guid.hex.upper())
        return _mariadb_uuid_text(guid) if form == "mariadb_uuid" else str(guid)

    def literal_processor(self, dialect: Dialect) -> Any:
        if self._form(dialect) != "bytes":
            return super().literal_processor(dialect)

        def process(value: Any) -> str:
            return self.process_literal_param(value, dialect)

        return process

    def column_expression(self, column: Any) -> Any:
        # SQLAlchemy tells a result processor nothing of its column, but it
        # hands each selected column here while compiling: the column is read
        # through _ReadNamingColumn, which reads it as its own type (this one,
        # a subclass, or a TypeDecorator whose impl is this one: their result
        # conversions all run) and names the column in the error below. The SQL
        # is unchanged (type_coerce renders the column as it is).
        table = getattr(column, "table", None)
        name = getattr(column, "name", None)
        if table is None or not isinstance(name, str):
            return column
        where = f"{getattr(table, 'name', None) or table}.{name}"
        return sa.type_coerce(column, _ReadNamingColumn(column.type, where))

    def process_result_value(self, value: Any, dialect: Dialect) -> uuid.UUID | None:
        if value is None or isinstance(value, uuid.UUID):
            return value
        guid: uuid.UUID | None = None
        try:
            if isinstance(value, (bytes, bytearray, memoryview)):
                guid = uuid.UUID(bytes=_storage(dialect).read_bytes(bytes(value)))
            else:
                # a driver's own UUID class (asyncpg's) reads as its text form; the
                # text is read strictly: ' 0190...', '+190...' are no GUIDs
                guid = parse_uuid(value if isinstance(value, str) else str(value))
        except (ValueError, TypeError):
            pass
        if guid is not None:
            return guid
        raise UnreadableGuidError.of(value, repr(self), dialect.name)


class _ComparedCombGuid(CombGuid):
    """``CombGuid(native_uuid=True)`` compared with a value: binds MariaDB's text unrefused.

    Its own class keeps it apart from the column's type in the statement cache.
    """

    cache_ok = True

    def _form(self, dialect: Dialect) -> str:
        form = super()._form(dialect)
        return "text" if form == "mariadb_uuid" else form


#: the type a value compared with a ``CombGuid(native_uuid=True)`` column binds with
_COMPARED = _ComparedCombGuid(native_uuid=True)


def _not_a_guid(value: object, declared: str, dialect_name: str, column: str | None) -> str:
    where = f"column {column} ({declared})" if column else f"a {declared} column"
    return (
        f"the database returned {shown(value)} ({type(value).__name__}) from {where} "
        f"on {dialect_name}, which is not a GUID: the column holds a value this type did "
        "not write. Find the row and fix or delete it"
    )


class UnreadableGuidError(InvalidGuidError):
    """A stored value that is no GUID: :class:`_ReadNamingColumn` names its column.

    Public in the package, not in ``__all__``: ``TypeIDType`` catches it to name itself.
    """

    value: object = None
    declared: str = "CombGuid()"
    dialect_name: str = ""

    @classmethod
    def of(cls, value: object, declared: str, dialect_name: str) -> UnreadableGuidError:
        # the message is the only argument: the error pickles as any other
        error = cls(_not_a_guid(value, declared, dialect_name, None))
        error.value, error.declared, error.dialect_name = value, declared, dialect_name
        return error

    def declared_as(self, declared: str) -> UnreadableGuidError:
        """The same error, saying the column is declared ``declared`` (a type wrapping
        CombGuid, such as ``TypeIDType(prefix='user')``, names itself)."""
        return self.of(self.value, declared, self.dialect_name)

    def naming(self, column: str) -> InvalidGuidError:
        """The same error, naming ``column`` ("table.column")."""
        return InvalidGuidError(_not_a_guid(self.value, self.declared, self.dialect_name, column))


class _ReadNamingColumn(sqltypes.TypeDecorator[Any]):
    """How a SELECT reads a column whose type is or wraps CombGuid: as that type.

    ``read_as`` is the column's own type (CombGuid, a subclass of it, or a
    TypeDecorator over it) and reads every value, its own result conversion
    included; only a stored value that is no GUID changes: its error names
    ``column`` ("table.column").
    """

    impl: sqltypes.TypeEngine[Any] | type[sqltypes.TypeEngine[Any]] = sqltypes.NullType
    cache_ok = True
    # read as it is: not wrapped again
    _has_column_expression = False

    def __init__(self, read_as: sqltypes.TypeEngine[Any], column: str) -> None:  # both in the key
        super().__init__()
        self.impl = read_as  # not the class's NullType
        self.read_as = read_as
        self.column = column

    def result_processor(self, dialect: Dialect, coltype: Any) -> Callable[[Any], Any] | None:
        read = self.impl_instance.result_processor(dialect, coltype)
        if read is None:  # a wrapping type that reads nothing itself: no error to name
            return None
        column = self.column

        def process(value: Any) -> Any:
            try:
                return read(value)
            except UnreadableGuidError as exc:
                raise exc.naming(column) from None

        return process


# -- the column default ---------------------------------------------------------


def _check_dialect(dialect: object) -> str:
    """The name of ``dialect`` (a Dialect or a dialect name); an unknown name raises."""
    if isinstance(dialect, Dialect):
        return dialect.name
    name: str = check_name(dialect, "dialect", UnknownDialectError)
    if has_facts(name):
        return name
    try:  # a third-party dialect: known if SQLAlchemy can load it
        registry.load(name.replace("+", "."))
    except (sa_exc.NoSuchModuleError, ImportError):
        raise UnknownDialectError(
            f"no SQLAlchemy dialect is called {name!r}; pass engine.dialect or a name "
            "such as 'postgresql', 'mysql', 'sqlite', 'mssql', 'oracle' or 'spanner'"
        ) from None
    return name


class CombGuidDefault:
    """A column default that mints COMB GUIDs in the layout the dialect sorts by.

    Use the ready instance :data:`new_comb_guid`; construct one (or call
    :meth:`with_layout`) only to force a layout on every dialect.

    :param layout: the :class:`~sqlalchemy_seqkeys.CombLayout` (or its value,
        ``"at_end"``) minted on every dialect; None: the one each dialect's
        ``ORDER BY`` follows (random version 4 UUIDs on Spanner).

    Example::

        id: Mapped[uuid.UUID] = mapped_column(CombGuid(), primary_key=True, default=new_comb_guid)
        # always AT_END, e.g. for a table shared with SQL Server:
        other: Mapped[uuid.UUID] = mapped_column(
            CombGuid(), default=new_comb_guid.with_layout("at_end")
        )
    """

    __slots__ = ("_many", "_minters", "_rows", "layout")

    def __init__(self, layout: CombLayout | str | None = None) -> None:
        self.layout = None if layout is None else CombLayout.coerce(layout)
        # dialect name -> zero-argument minter; filled on first use per dialect
        self._minters: dict[str, Callable[[], uuid.UUID]] = {}
        # dialect name -> minter of k values at once (an executemany's rows)
        self._many: dict[str, Callable[[int], list[uuid.UUID]]] = {}
        self._rows: RowsAhead[uuid.UUID] = RowsAhead(f"comb_{id(self):x}")

    def __repr__(self) -> str:
        return (
            "new_comb_guid"
            if self.layout is None
            else f"new_comb_guid.with_layout({self.layout.value!r})"
        )

    def with_layout(self, layout: CombLayout | str) -> CombGuidDefault:
        """Return a default that always mints ``layout``, whatever the dialect.

        :param layout: a :class:`~sqlalchemy_seqkeys.CombLayout` or its value
            (``"as_string"``, ``"as_binary"``, ``"at_end"``).

        Example::

            >>> new_comb_guid.with_layout("as_binary")
            new_comb_guid.with_layout('as_binary')
        """
        return CombGuidDefault(CombLayout.coerce(layout))

    def layout_for(self, dialect: Dialect | str) -> CombLayout | None:
        """The layout minted on ``dialect`` (a Dialect or its name); None means uuid4.

        :param dialect: a Dialect, or a dialect name (``"mssql"``); an unknown
            name raises :class:`~sqlalchemy_seqkeys.UnknownDialectError`.

        Example::

            >>> new_comb_guid.layout_for("mssql")
            <CombLayout.AT_END: 'at_end'>
            >>> new_comb_guid.layout_for("spanner") is None
            True
        """
        _check_dialect(dialect)
        if self.layout is not None:
            return self.layout
        # the layout that makes the dialect's ORDER BY follow minting order
        return facts(dialect).guid_order

    def minter(self, dialect: Dialect | str) -> Callable[[], uuid.UUID]:
        """The zero-argument function this default calls on ``dialect``.

        :param dialect: a Dialect, or a dialect name; an unknown name raises
            :class:`~sqlalchemy_seqkeys.UnknownDialectError`.

        Example::

            >>> mint = new_comb_guid.minter("postgresql")
            >>> mint() < mint()
            True
        """
        name = _check_dialect(dialect)
        try:
            return self._minters[name]
        except KeyError:
            layout = self.layout_for(name)
            found = uuid.uuid4 if layout is None else comb_minter(layout)
            self._minters[name] = found
            return found

    def _minter_many(self, name: str) -> Callable[[int], list[uuid.UUID]]:
        found = self._many.get(name)
        if found is None:
            layout = self.layout_for(name)
            if layout is None:
                found = lambda k: [uuid.uuid4() for _ in range(k)]  # noqa: E731
            else:
                found = comb_minter_many(layout)
            self._many[name] = found
        return found

    def __call__(self, context: DefaultExecutionContext) -> uuid.UUID:
        # An executemany mints the values of all its rows at its first row (one
        # clock reading and lock, not one per row: sqlalchemy_seqkeys._rows).
        try:
            value = self._rows.pop(context)
        except AttributeError:
            raise InvalidGuidError(
                f"{self!r} is a column default: SQLAlchemy calls it with the INSERT's "
                f"execution context, not {shown(context)} ({type(context).__name__}). "
                "To mint a value yourself call new_comb(layout) or self.minter(dialect)()"
            ) from None
        if value is not None:
            return value
        name = context.dialect.name
        value = self._rows.take(context, self._minter_many(name))
        if value is not None:
            return value
        mint = self._minters.get(name)
        if mint is None:
            mint = self.minter(context.dialect)
        return mint()


new_comb_guid = CombGuidDefault()
"""The COMB column default: mints the layout the dialect it runs on sorts by.

``AT_END`` on SQL Server, random version 4 UUIDs on Spanner (where time order
is a hotspot), ``AS_STRING`` elsewhere.

Example::

    id: Mapped[uuid.UUID] = mapped_column(CombGuid(), primary_key=True, default=new_comb_guid)
"""
