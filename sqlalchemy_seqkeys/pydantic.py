"""Pydantic types for keys that leave the database as JSON (the ``pydantic`` extra).

JavaScript reads JSON numbers exactly only up to 2**53 - 1, so these annotated
types fix the wire form once: :data:`SnowflakeId` (63 bits, a string in JSON),
:data:`JsSafeId` (53 bits, a number; larger is refused), :class:`IdBits` (other
widths) and ``Annotated[TypeID, TypeIDPrefix("user")]`` (one TypeID prefix).
Importing ``sqlalchemy_seqkeys`` does not import Pydantic; this module does.

User guide: docs/ids-in-apis.md.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING, Annotated, Any

from .errors import InvalidSnowflakeError, MissingExtraError
from .typeid import check_prefix, pydantic_json_schema, pydantic_schema

if importlib.util.find_spec("pydantic") is None:
    raise MissingExtraError(
        "sqlalchemy_seqkeys.pydantic needs Pydantic 2: pip install 'sqlalchemy-seqkeys[pydantic]'"
    )

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import PydanticSerializationError, core_schema

if TYPE_CHECKING:
    from pydantic_core.core_schema import CoreSchema

__all__ = ["IdBits", "JsSafeId", "SnowflakeId", "TypeIDPrefix"]

#: the largest integer a JavaScript number holds exactly (Number.MAX_SAFE_INTEGER)
JS_MAX_SAFE_INTEGER = 2**53 - 1


class IdBits:
    """The Pydantic behaviour of :data:`SnowflakeId` and :data:`JsSafeId`, for other widths.

    Validates an int (not a bool or float) or a string of ASCII decimal digits
    from 0 to ``2**bits - 1``; serialises to JSON as a string
    (``as_string=True``) or as a number, checked again when written (a value
    that skipped validation and is out of range raises
    ``PydanticSerializationError``).

    :param bits: the width of the ids, 1 to 64.
    :param as_string: write the id to JSON as a decimal string; required above
        53 bits, where JavaScript numbers lose precision.

    Example::

        >>> from typing import Annotated
        >>> from pydantic import TypeAdapter
        >>> Id48 = Annotated[int, IdBits(48, as_string=False)]
        >>> TypeAdapter(Id48).dump_json(2**48 - 1)
        b'281474976710655'
    """

    __slots__ = ("as_string", "bits", "maximum")

    def __init__(self, bits: int, *, as_string: bool) -> None:
        if isinstance(bits, bool) or not isinstance(bits, int) or not 1 <= bits <= 64:
            raise InvalidSnowflakeError(
                f"IdBits(bits=...) takes an int from 1 to 64, not {bits!r:.80}"
            )
        if not isinstance(as_string, bool):
            raise InvalidSnowflakeError(
                f"IdBits(as_string=...) takes True or False, not {as_string!r:.80}"
            )
        if bits > 53 and not as_string:
            raise InvalidSnowflakeError(
                f"{bits}-bit ids written as JSON numbers are rounded by JavaScript (exact only "
                "to 2**53 - 1): use as_string=True, or at most 53 bits"
            )
        self.bits = bits
        self.as_string = as_string
        self.maximum = 2**bits - 1

    def __repr__(self) -> str:
        return f"IdBits({self.bits}, as_string={self.as_string})"

    def _from_text(self, text: str) -> int:
        # the pattern alone is not enough: under regex_engine="python-re", "$" matches
        # before a trailing newline, and int() takes Unicode digits, spaces and "_"
        if not (text.isascii() and text.isdigit()):
            raise ValueError(f"{text!r:.40} is not decimal digits 0-9 only")
        value = int(text)
        if value > self.maximum:
            raise ValueError(f"{text} is above {self.maximum}, the largest {self.bits}-bit id")
        return value

    def _checked(self, value: Any) -> int | None:
        """``value`` as an int if it is an id of this width, else None."""
        if value.__class__ is int and 0 <= value <= self.maximum:
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            # an int subclass (an IntEnum) that validation let through: int.__int__ is the
            # value itself, checked and written (its own __int__ or comparisons may lie)
            plain = int.__int__(value)
            return plain if 0 <= plain <= self.maximum else None
        return None

    def _to_number(self, value: Any) -> int:
        checked = self._checked(value)
        if checked is not None:
            return checked
        raise PydanticSerializationError(
            f"{value!r:.40} cannot be written as {self!r}, a JSON number from 0 to "
            f"{self.maximum} (JavaScript rounds larger ones): it was never validated (assigned "
            "without validate_assignment=True, or given to model_construct()); validate it, or "
            "write larger ids as strings (SnowflakeId, as_string=True)"
        )

    def _to_text(self, value: Any, info: core_schema.SerializationInfo) -> int | str:
        # an int in Python, its digits in JSON; out of range, neither
        checked = self._checked(value)
        if checked is None:
            raise PydanticSerializationError(
                f"{value!r:.40} cannot be written as {self!r}, an id from 0 to {self.maximum}: "
                "it was never validated (assigned without validate_assignment=True, or given "
                "to model_construct()); validate it"
            )
        return str(checked) if info.mode_is_json() else checked

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        digits = len(str(self.maximum))
        from_int = core_schema.int_schema(ge=0, le=self.maximum, strict=True)
        from_text = core_schema.no_info_after_validator_function(
            self._from_text,
            core_schema.str_schema(pattern=r"^[0-9]+$", max_length=digits, strict=True),
        )
        # An id is checked again on the way out: a value assigned without validation
        # (validate_assignment is off by default), from model_construct(), or returned to
        # FastAPI (which does not validate a model instance) would be rounded by JavaScript
        # (a number) or go out as a string no validator takes (as_string). No return_schema:
        # a number's JSON schema stays the validation one in both modes, so FastAPI does not
        # split a model into "-Input" and "-Output" components; a string's output schema
        # comes from __get_pydantic_json_schema__ (a return_schema would be applied to the
        # int that model_dump() gives, with a warning).
        serialization = (
            core_schema.plain_serializer_function_ser_schema(
                self._to_text, info_arg=True, when_used="always"
            )
            if self.as_string
            else core_schema.plain_serializer_function_ser_schema(
                self._to_number, info_arg=False, when_used="always"
            )
        )
        return core_schema.union_schema(
            [from_int, from_text],
            custom_error_type="seqkeys_id",
            custom_error_message=(
                f"an id is an integer from 0 to {self.maximum}, as a number or a string of "
                "decimal digits"
            ),
            serialization=serialization,
        )

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        if self.as_string and handler.mode == "serialization":
            return {"type": "string"}  # what JSON gets: the digits as a string
        return handler(schema)


SnowflakeId = Annotated[int, IdBits(63, as_string=True)]
"""A 63-bit id (a Snowflake, a bit-reversed or table-sequence BIGINT): a string in JSON.

Validates from an int or a decimal string; ``model_dump()`` gives an int,
``model_dump_json()`` and FastAPI responses a string that JavaScript keeps exact. A
value that skipped validation (an assignment without ``validate_assignment``,
``model_construct()``) is checked when dumped: out of range (negative, past
2**63 - 1, not an int), ``model_dump()`` and ``model_dump_json()`` raise
``PydanticSerializationError`` (a FastAPI response: a 500) instead of writing it.
"""

JsSafeId = Annotated[int, IdBits(53, as_string=False)]
"""An id of at most 53 bits: a number in JSON, exact in JavaScript; larger ones are refused.

Validates from an int or a decimal string. A value that skipped validation (an
assignment without ``validate_assignment``, ``model_construct()``) is checked when
dumped: out of range, ``model_dump()`` and ``model_dump_json()`` raise
``PydanticSerializationError`` (a FastAPI response: a 500) instead of writing it.
"""


class TypeIDPrefix:
    """``Annotated[TypeID, TypeIDPrefix("user")]``: a TypeID of that type only, text in JSON.

    Validates from the text form (or a :class:`~sqlalchemy_seqkeys.TypeID`);
    another prefix is a validation error. A plain ``TypeID`` annotation
    accepts any prefix.

    :param prefix: the type the ids must have.

    Example::

        >>> from typing import Annotated
        >>> from pydantic import TypeAdapter, ValidationError
        >>> from sqlalchemy_seqkeys import TypeID
        >>> users = TypeAdapter(Annotated[TypeID, TypeIDPrefix("user")])
        >>> users.validate_python("user_01h455vb4pex5vsknk084sn02q").prefix
        'user'
        >>> try:
        ...     users.validate_python("order_01h455vb4pex5vsknk084sn02q")
        ... except ValidationError:
        ...     print("refused")
        refused
    """

    __slots__ = ("prefix",)

    def __init__(self, prefix: str) -> None:
        self.prefix = check_prefix(prefix)

    def __repr__(self) -> str:
        return f"TypeIDPrefix({self.prefix!r})"

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        schema: CoreSchema = pydantic_schema(self.prefix)
        return schema

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return pydantic_json_schema(self.prefix)
