"""``TypeIDType``: a TypeID column stored as the engine's 16-byte UUID, read as a TypeID.

The column keeps the UUID only (the prefix belongs to the column), in
:class:`~sqlalchemy_seqkeys.CombGuid`'s 16-byte storage, whose conversions this
type calls; ``native_uuid=True`` uses MariaDB's own ``UUID`` from 10.11.6 (10.10.7,
11.0.4, 11.1.3, 11.2.2 in their series).

User guide: docs/ids-in-apis.md (Prefixes with TypeID).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from sqlalchemy import types as sqltypes
from sqlalchemy.engine.interfaces import Dialect

from ._dialect import family, mariadb_uuid_keeps_v7_order
from .errors import InvalidTypeIDError
from .typeid import TypeID, check_prefix
from .types import CombGuid, MariaDBUuidRefusedError, UnreadableGuidError

__all__ = ["TypeIDType"]

#: the two storages a TypeID column has: 16 bytes, or MariaDB's own UUID type
_BINARY = CombGuid(binary=True)
_NATIVE = CombGuid(native_uuid=True)
#: the storage a value compared with a native_uuid column binds with: MariaDB's text, unrefused
_NATIVE_COMPARED: CombGuid = _NATIVE.coerce_compared_value(None, None)


def _server_unknown(dialect: Dialect) -> bool:
    """True for a MySQL-family dialect that may be MariaDB or MySQL: not connected, no
    ``mariadb://`` URL. Its ``native_uuid`` storage is decided only by the server."""
    return (
        family(dialect) == "mysql"
        and not getattr(dialect, "is_mariadb", False)
        and dialect.server_version_info is None
    )


class TypeIDType(sqltypes.TypeDecorator[TypeID]):
    """A column of TypeIDs of one type: stores the UUID in 16 bytes, returns :class:`TypeID`.

    Binds take a :class:`~sqlalchemy_seqkeys.TypeID` or its text with the
    column's prefix (another prefix raises
    :class:`~sqlalchemy_seqkeys.InvalidTypeIDError`, which SQLAlchemy wraps
    in a ``StatementError`` when it happens in a statement), or a bare
    ``uuid.UUID`` (it carries no type, the column gives it one). Rows come
    back as ``TypeID`` objects with the column's prefix.

    :param prefix: the type of the ids, such as ``"user"`` (``""`` for none).
    :param native_uuid: on MariaDB 10.11.6 and later (10.10.7, 11.0.4, 11.1.3,
        11.2.2 in their series), store in MariaDB's own ``UUID`` type (as
        :class:`~sqlalchemy_seqkeys.CombGuid` with ``native_uuid=True``) instead of
        ``BINARY(16)``; elsewhere (an older MariaDB, MySQL) ignored. A COMB
        default is refused there (MariaDB's ``UUID`` sorts it out of minting order),
        and so is an id MariaDB's ``UUID`` refuses (version 8 to 15 with byte 8
        from 0x01 to 0x80), with :class:`~sqlalchemy_seqkeys.InvalidTypeIDError` when it
        is stored; compared with the column (``==``, ``in_``) it finds no row.
        A ``mysql://`` dialect that has not connected cannot tell MariaDB from
        MySQL, so the column refuses to compile or bind there (offline SQL) with
        :class:`~sqlalchemy_seqkeys.InvalidTypeIDError`: use a ``mariadb://`` URL.

    Example::

        id: Mapped[TypeID] = mapped_column(
            TypeIDType("user"), primary_key=True, default=typeid_default("user")
        )
        # a query takes the text an API received:
        session.get(User, TypeID.parse("user_01h455vb4pex5vsknk084sn02q"))
    """

    impl = sqltypes.LargeBinary(16)
    cache_ok = True

    # native_uuid is not keyword-only: SQLAlchemy's statement cache keys a type by
    # its positional-or-keyword __init__ arguments
    def __init__(self, prefix: str, native_uuid: bool = False) -> None:
        super().__init__()
        self.prefix = check_prefix(prefix)
        if not isinstance(native_uuid, bool):
            raise InvalidTypeIDError(
                f"TypeIDType(native_uuid=...) takes True or False, not {native_uuid!r:.80}"
            )
        self.native_uuid = native_uuid

    def _guid(self, dialect: Dialect) -> CombGuid:
        """The storage: MariaDB's UUID where ``native_uuid`` applies, else 16 bytes."""
        if self.native_uuid:
            if mariadb_uuid_keeps_v7_order(dialect):
                return _NATIVE
            if _server_unknown(dialect):
                raise self._unknown_server()
        return _BINARY

    def _unknown_server(self) -> InvalidTypeIDError:
        """The error for ``native_uuid`` on a ``mysql://`` dialect that never connected."""
        return InvalidTypeIDError(
            f"{self!r} cannot tell its storage on a mysql:// dialect that has not "
            "connected: MariaDB 10.11.6 and later (10.10.7, 11.0.4, 11.1.3, 11.2.2 in "
            "their series) store it in its UUID type (bound as text), MySQL and older "
            "MariaDB in BINARY(16) (bound as 16 bytes), and a BINARY(16) column made from "
            "SQL rendered now would then be sent text by the application connected to "
            "MariaDB. For offline SQL (alembic --sql, "
            "CreateTable(...).compile(engine)) use a mariadb:// URL "
            "(mariadb+pymysql://...) for MariaDB, or native_uuid=False (BINARY(16)) for "
            "MySQL; or compile after the engine has connected"
        )

    def coerce_compared_value(self, op: Any, value: Any) -> Any:
        # A value compared with the column (==, !=, in_) is not stored: it binds
        # without MariaDB's refusal (CombGuid's compared type; the server finds no
        # row). INSERT and UPDATE ... SET bind with the column's own type, which
        # refuses. A subclass keeps its own type (its binds may differ).
        if not self.native_uuid or type(self) is not TypeIDType:
            return self
        compared = self.__dict__.get("_compared")
        if compared is None:
            compared = self.__dict__["_compared"] = _ComparedTypeIDType(self.prefix, True)
        return compared

    def __repr__(self) -> str:
        extra = ", native_uuid=True" if self.native_uuid else ""
        return f"TypeIDType(prefix={self.prefix!r}{extra})"

    @property
    def python_type(self) -> type[TypeID]:
        return TypeID

    def _uuid(self, value: Any) -> uuid.UUID:
        if isinstance(value, TypeID):
            if value.prefix != self.prefix:
                raise InvalidTypeIDError(
                    f"{str(value)!r} is a TypeID of type {value.prefix!r}, but the column is "
                    f"{self!r}: pass an id of type {self.prefix!r}"
                )
            return value.uuid
        if isinstance(value, str):
            return TypeID.parse(value, prefix=self.prefix).uuid
        if isinstance(value, uuid.UUID):
            return value
        raise InvalidTypeIDError(
            f"a {self!r} column takes a TypeID, its text or a uuid.UUID, not "
            f"{type(value).__name__} {value!r:.80}"
        )

    def _refused(self, value: uuid.UUID) -> InvalidTypeIDError:
        """The error for a UUID that MariaDB's UUID type refuses (CombGuid found it)."""
        return InvalidTypeIDError(
            f"{str(TypeID(self.prefix, value))!r} (UUID {value}) cannot be stored in "
            f"MariaDB's UUID type ({self!r}): MariaDB refuses a UUID of version "
            f"{value.int >> 76 & 15} (8 to 15) whose byte 8 is 0x01 to 0x80 (the NCS "
            "variant), as it would read back as one of versions 1 to 5 stored swapped. "
            f"Store such ids with native_uuid=False: TypeIDType({self.prefix!r}) (BINARY(16))"
        )

    def load_dialect_impl(self, dialect: Dialect) -> sqltypes.TypeEngine[Any]:
        # the storage CombGuid picks (also what DDL and Alembic see)
        return self._guid(dialect).load_dialect_impl(dialect)

    def _converted(self, convert: Callable[[uuid.UUID], Any], guid: uuid.UUID) -> Any:
        """``convert(guid)``, CombGuid's conversion to its storage. It refuses a UUID that
        MariaDB's UUID type would refuse (version 8 and up with the NCS variant) with
        InvalidGuidError, which a TypeID column says with InvalidTypeIDError."""
        try:
            return convert(guid)
        except MariaDBUuidRefusedError:
            raise self._refused(guid) from None

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if value is None:
            return None
        guid = self._guid(dialect)
        return self._converted(lambda v: guid.process_bind_param(v, dialect), self._uuid(value))

    def bind_processor(self, dialect: Dialect) -> Callable[[Any], Any] | None:
        # CombGuid's own processor (its storage conversion for this dialect) after ours
        inner = self._guid(dialect).dialect_impl(dialect).bind_processor(dialect)
        to_uuid = self._uuid
        converted = self._converted

        def process(value: Any) -> Any:
            if value is None:
                return None
            value = to_uuid(value)
            return value if inner is None else converted(inner, value)

        return process

    def process_literal_param(self, value: Any, dialect: Dialect) -> str:
        guid = self._guid(dialect)
        literal: str = self._converted(
            lambda v: guid.process_literal_param(v, dialect), self._uuid(value)
        )
        return literal

    def literal_processor(self, dialect: Dialect) -> Callable[[Any], str] | None:
        inner = self._guid(dialect).dialect_impl(dialect).literal_processor(dialect)
        if inner is None:
            return None
        to_uuid = self._uuid
        converted = self._converted

        def process(value: Any) -> str:
            literal: str = converted(inner, to_uuid(value))
            return literal

        return process

    def result_processor(
        self, dialect: Dialect, coltype: object
    ) -> Callable[[Any], TypeID | None] | None:
        inner = self._guid(dialect).dialect_impl(dialect).result_processor(dialect, coltype)
        prefix = self.prefix
        declared = repr(self)

        def process(value: Any) -> TypeID | None:
            if inner is not None:
                try:
                    value = inner(value)
                except UnreadableGuidError as exc:  # says CombGuid, the storage inside
                    raise exc.declared_as(declared) from None
            if value is None:
                return None
            return TypeID(prefix, value)

        return process

    def process_result_value(self, value: Any, dialect: Dialect) -> TypeID | None:
        try:
            guid = self._guid(dialect).process_result_value(value, dialect)
        except UnreadableGuidError as exc:  # says CombGuid, the storage inside
            raise exc.declared_as(repr(self)) from None
        return None if guid is None else TypeID(self.prefix, guid)


class _ComparedTypeIDType(TypeIDType):
    """``TypeIDType(prefix, native_uuid=True)`` compared with a value: binds unrefused.

    Its own class keeps it apart from the column's type in the statement cache.
    """

    cache_ok = True

    def _guid(self, dialect: Dialect) -> CombGuid:
        guid = super()._guid(dialect)
        return _NATIVE_COMPARED if guid is _NATIVE else guid
