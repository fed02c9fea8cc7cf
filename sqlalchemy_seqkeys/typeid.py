"""TypeIDs: a type prefix and the base32 of a UUID, ``user_01h455vb4pex5vsknk084sn02q``.

:class:`TypeID` implements version 0.3 of the TypeID specification (prefix rules:
its ``prefix`` parameter, and the user guide); :func:`new_typeid` mints from UUIDv7, so ids sort by
creation time as text and as UUID. This module is pure Python; the column type is
:class:`~sqlalchemy_seqkeys.TypeIDType` (``sqlalchemy_seqkeys.typeid_sql``).

User guide: docs/ids-in-apis.md (Prefixes with TypeID).
"""

from __future__ import annotations

import functools
import re
from typing import Any
from uuid import UUID

from .errors import InvalidTypeIDError
from .uuid7 import new_uuid7

__all__ = ["TypeID", "TypeIDDefault", "new_typeid", "typeid_default"]

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
_VALUE = {c: i for i, c in enumerate(_ALPHABET)}
_PREFIX = re.compile(r"[a-z](?:[a-z_]{0,61}[a-z])?")
_SUFFIX_LENGTH = 26


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check_prefix(prefix: object) -> str:
    """``prefix`` if it is a valid TypeID prefix (possibly empty); otherwise InvalidTypeIDError."""
    if not isinstance(prefix, str):
        raise InvalidTypeIDError(
            f"a TypeID prefix is a str such as 'user', not {type(prefix).__name__} {_shown(prefix)}"
        )
    if prefix and _PREFIX.fullmatch(prefix) is None:
        raise InvalidTypeIDError(
            f"{_shown(prefix)} is not a TypeID prefix: use up to 63 lowercase letters a-z "
            "and underscores, starting and ending with a letter (or '' for no prefix)"
        )
    return prefix


def _encode(value: int) -> str:
    return "".join(_ALPHABET[(value >> shift) & 31] for shift in range(125, -5, -5))


def _decode(suffix: str, text: str) -> int:
    if len(suffix) != _SUFFIX_LENGTH:
        raise InvalidTypeIDError(
            f"{_shown(text)} is not a TypeID: its suffix has {len(suffix)} characters, "
            f"a TypeID's has {_SUFFIX_LENGTH} (the base32 of 128 bits)"
        )
    value = 0
    try:
        for char in suffix:
            value = (value << 5) | _VALUE[char]
    except KeyError:
        raise InvalidTypeIDError(
            f"{_shown(text)} is not a TypeID: its suffix may only hold the lowercase "
            f"characters {_ALPHABET!r}"
        ) from None
    if value >> 128:
        raise InvalidTypeIDError(
            f"{_shown(text)} is not a TypeID: its suffix encodes more than 128 bits "
            "(the first character of the suffix must be 0 to 7)"
        )
    return value


@functools.total_ordering
class TypeID:
    """A TypeID: a type ``prefix`` and a UUID, written ``prefix_`` + 26 base32 characters.

    Equal when prefix and UUID are; ordered by prefix, then by UUID (for ids of
    one prefix that is the order of their text and of their creation when
    minted from UUIDv7). Hashable and immutable.

    :param prefix: the type, up to 63 lowercase letters and underscores (not
        first or last), or ``""`` for none.
    :param uuid: the 128 bits it carries; :func:`new_typeid` mints a UUIDv7.

    Example::

        >>> import uuid
        >>> tid = TypeID("user", uuid.UUID("01890a5d-ac96-774b-bcce-b302099a8057"))
        >>> tid
        TypeID('user_01h455vb4pex5vsknk084sn02q')
        >>> tid.suffix
        '01h455vb4pex5vsknk084sn02q'
        >>> TypeID.parse(str(tid)) == tid
        True
    """

    __slots__ = ("_text", "prefix", "uuid")

    prefix: str
    uuid: UUID
    _text: str | None

    def __init__(self, prefix: str, uuid: UUID) -> None:
        check_prefix(prefix)
        if not isinstance(uuid, UUID):
            raise InvalidTypeIDError(
                f"TypeID(prefix, uuid) takes a uuid.UUID, not {type(uuid).__name__} "
                f"{_shown(uuid)}; parse text with TypeID.parse(...)"
            )
        object.__setattr__(self, "prefix", prefix)
        object.__setattr__(self, "uuid", uuid)
        object.__setattr__(self, "_text", None)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"TypeID is immutable: cannot set {name!r}")

    @classmethod
    def parse(cls, text: str, prefix: str | None = None) -> TypeID:
        """The TypeID written ``text``; with ``prefix``, it must be of that type.

        :param text: ``prefix_`` and 26 base32 characters, or the 26 alone (no prefix).
        :param prefix: the prefix ``text`` must have; ``None`` accepts any.
        :raises InvalidTypeIDError: ``text`` breaks the specification, or has another prefix.

        Example::

            >>> TypeID.parse("pre_fix_00000000000000000000000000").prefix
            'pre_fix'
            >>> TypeID.parse("user_00000000000000000000000000", prefix="order")
            Traceback (most recent call last):
            ...
            sqlalchemy_seqkeys.errors.InvalidTypeIDError: ... of type 'user', not 'order'
        """
        if prefix is not None:
            check_prefix(prefix)
        if not isinstance(text, str):
            raise InvalidTypeIDError(
                f"TypeID.parse takes the text of a TypeID, not {type(text).__name__} {_shown(text)}"
            )
        found, sep, suffix = text.rpartition("_")
        if sep and not found:
            raise InvalidTypeIDError(
                f"{_shown(text)} is not a TypeID: an empty prefix is written without the "
                "'_' separator"
            )
        if found and _PREFIX.fullmatch(found) is None:
            raise InvalidTypeIDError(
                f"{_shown(text)} is not a TypeID: its prefix {_shown(found)} must be up to 63 "
                "lowercase letters a-z and underscores, starting and ending with a letter"
            )
        value = _decode(suffix, text)
        if prefix is not None and found != prefix:
            raise InvalidTypeIDError(
                f"{_shown(text)} is a TypeID of type {found!r}, not {prefix!r}"
            )
        tid = cls.__new__(cls)
        object.__setattr__(tid, "prefix", found)
        object.__setattr__(tid, "uuid", UUID(int=value))
        object.__setattr__(tid, "_text", text)
        return tid

    @property
    def suffix(self) -> str:
        """The 26 base32 characters of the UUID.

        Example::

            >>> TypeID("", UUID(int=32)).suffix
            '00000000000000000000000010'
        """
        return _encode(self.uuid.int)

    def __str__(self) -> str:
        text: str | None = self._text
        if text is None:
            suffix = _encode(self.uuid.int)
            text = f"{self.prefix}_{suffix}" if self.prefix else suffix
            object.__setattr__(self, "_text", text)
        return text

    def __repr__(self) -> str:
        return f"TypeID({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TypeID):
            return NotImplemented
        return self.prefix == other.prefix and self.uuid == other.uuid

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, TypeID):
            return NotImplemented
        return (self.prefix, self.uuid.int) < (other.prefix, other.uuid.int)

    def __hash__(self) -> int:
        return hash((self.prefix, self.uuid))

    def __reduce__(self) -> tuple[Any, ...]:
        return (TypeID, (self.prefix, self.uuid))

    # Pydantic: a TypeID field validates from the text form and writes it to JSON
    # (any prefix; sqlalchemy_seqkeys.pydantic.TypeIDPrefix fixes one).
    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        return pydantic_schema(None)

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: Any, handler: Any) -> Any:
        return pydantic_json_schema(None)


def new_typeid(prefix: str) -> TypeID:
    """A new TypeID of type ``prefix``, minted from a UUIDv7 (time-ordered).

    :param prefix: the type, such as ``"user"``; ``""`` for none.

    Example::

        >>> a, b = new_typeid("user"), new_typeid("user")
        >>> a < b and str(a) < str(b) and a.uuid.version == 7
        True
    """
    return TypeID(prefix, new_uuid7())


class TypeIDDefault:
    """A column default minting TypeIDs of one prefix from UUIDv7; see :func:`typeid_default`.

    :param prefix: the type of the ids it mints.

    Example::

        >>> mint = TypeIDDefault("order")
        >>> mint().prefix
        'order'
    """

    __slots__ = ("prefix",)

    def __init__(self, prefix: str) -> None:
        self.prefix = check_prefix(prefix)

    def __repr__(self) -> str:
        return f"typeid_default({self.prefix!r})"

    def __call__(self) -> TypeID:
        return TypeID(self.prefix, new_uuid7())


def typeid_default(prefix: str) -> TypeIDDefault:
    """The column default for a :class:`~sqlalchemy_seqkeys.TypeIDType` key: new UUIDv7 TypeIDs.

    :param prefix: the column's type prefix (the one given to ``TypeIDType``).

    Example::

        id: Mapped[TypeID] = mapped_column(
            TypeIDType("user"), primary_key=True, default=typeid_default("user")
        )
    """
    return TypeIDDefault(prefix)


# -- Pydantic, imported only when a model uses a TypeID ------------------------------


def pydantic_schema(prefix: str | None) -> Any:
    """The Pydantic core schema of a TypeID (of ``prefix``, or any prefix when None)."""
    from pydantic_core import core_schema

    def from_text(text: str) -> TypeID:
        return TypeID.parse(text, prefix=prefix)

    def from_typeid(value: TypeID) -> TypeID:
        if prefix is not None and value.prefix != prefix:
            raise ValueError(f"{str(value)!r} is a TypeID of type {value.prefix!r}, not {prefix!r}")
        return value

    text = core_schema.no_info_after_validator_function(
        from_text, core_schema.str_schema(strict=True)
    )
    instance = core_schema.no_info_after_validator_function(
        from_typeid, core_schema.is_instance_schema(TypeID)
    )
    return core_schema.json_or_python_schema(
        json_schema=text,
        python_schema=core_schema.union_schema([instance, text]),
        serialization=core_schema.plain_serializer_function_ser_schema(
            str, when_used="json", return_schema=core_schema.str_schema()
        ),
    )


def pydantic_json_schema(prefix: str | None) -> dict[str, Any]:
    """The JSON schema of a TypeID's text form (of ``prefix``, or any prefix when None)."""
    suffix = "[0-7][0-9a-hjkmnp-tv-z]{25}"
    if prefix is None:
        pattern = f"^([a-z]([a-z_]{{0,61}}[a-z])?_)?{suffix}$"
    elif prefix:
        pattern = f"^{prefix}_{suffix}$"
    else:
        pattern = f"^{suffix}$"
    return {"type": "string", "format": "typeid", "pattern": pattern}
