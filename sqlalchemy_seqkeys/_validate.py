"""Argument checks shared by every public name: one message shape, the right error class.

Each check returns the value it accepted, so a constructor reads
``self.ttl = check_seconds(ttl, "ttl", InvalidSnowflakeError)``. Every
refusal reads ``<what> must be <wanted>, not <value> (<type>)[; <hint>]``.

Pure: nothing here imports SQLAlchemy (a caller passes ``sa.MetaData`` to
:func:`check_instance` itself). Design: docs/architecture.md.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from .errors import SeqKeysError

__all__ = [
    "IDENTIFIER_LENGTH",
    "check_aware",
    "check_callable",
    "check_flag",
    "check_instance",
    "check_int",
    "check_name",
    "check_seconds",
    "checked_clock",
    "parse_uuid",
    "shown",
]

T = TypeVar("T")

#: The longest table, column or schema name accepted: the most any supported
#: engine allows (Spanner, SQL Server and Oracle 128; PostgreSQL 63 and MySQL
#: 64 are checked by the server when the name is used).
IDENTIFIER_LENGTH = 128

#: The largest reading accepted from a user's clock, in ns since 1970 (as
#: ``time.time_ns``): a signed 64-bit count, up to the year 2262.
_CLOCK_MAX_NS = 2**63 - 1


def shown(value: object, limit: int = 60) -> str:
    """``repr(value)``, cut short: a 10,000-character name makes an unreadable message."""
    try:
        text = repr(value)
    except Exception:  # a hostile __repr__ must not hide the real error
        text = f"<{type(value).__name__} object>"
    return text if len(text) <= limit else f"{text[: limit - 5]}...{text[-2:]}"


#: The text forms of a UUID that parse_uuid reads: the ones Python documents for
#: uuid.UUID's hex argument, written properly. 32 hex digits, or 8-4-4-4-12 with
#: the four hyphens; either in braces or after "urn:uuid:" (any case) or alone.
#: ASCII hex digits only; nothing else (uuid.UUID alone takes "+", "_", spaces,
#: other Unicode digits and "uuid:" anywhere: int(..., 16) reads what is left).
_HYPHENATED = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_HEX_BODY = f"{_HYPHENATED}|[0-9a-fA-F]{{32}}"
_UUID_TEXT = re.compile(
    rf"({_HEX_BODY})|\{{({_HEX_BODY})\}}|[uU][rR][nN]:[uU][uU][iI][dD]:({_HEX_BODY})"
)


#: the characters of a GUID's hex digits, and nothing int(..., 16) reads besides
_HEX_DIGITS = "0123456789abcdefABCDEF"

_new_object, _set_attribute = object.__new__, object.__setattr__
_UUID, _SAFE_UNKNOWN = uuid.UUID, uuid.SafeUUID.unknown


def parse_uuid(value: object) -> uuid.UUID | None:
    """``value`` if it is a ``uuid.UUID``, the UUID its text spells if it is a str; else None.

    The text is read strictly: 32 hex digits, with the four hyphens of the
    8-4-4-4-12 form or none, alone, in braces or after ``urn:uuid:``. Anything
    else (surrounding spaces, a sign, underscores, a hyphen out of place, a
    missing digit) is None, never another UUID. The caller raises its own
    error: what the UUID was wanted for differs.

    Example::

        >>> parse_uuid("0190b6a8-6c3e-7d4a-9f1e-2b5c8d7e6f10").version, parse_uuid(b"x")
        (7, None)
        >>> parse_uuid("0190b6a8-6c3e-7d4a-9f1e-2b5c8d7e6f1 ") is None
        True
    """
    if isinstance(value, uuid.UUID):
        return value
    if isinstance(value, str):
        # The canonical form, as a database hands it back, without the pattern:
        # ASCII hex digits only. int(..., 16) alone would read a "0x" prefix
        # ("0x000000-..." as "00000000-..."), "_", "+", spaces and other
        # scripts' digits: stripping the hex alphabet must leave nothing.
        if len(value) == 36 and value[8] == value[13] == value[18] == value[23] == "-":
            digits = value.replace("-", "")
            if len(digits) != 32 or digits.strip(_HEX_DIGITS):
                return None
            guid: uuid.UUID = _new_object(_UUID)  # uuid.UUID(int=...) checks what we know
            _set_attribute(guid, "int", int(digits, 16))
            _set_attribute(guid, "is_safe", _SAFE_UNKNOWN)
            return guid
        match = _UUID_TEXT.fullmatch(value)
        if match is None:
            return None
        return uuid.UUID(match[match.lastindex or 0])
    return None


def _refuse(
    error: type[SeqKeysError], what: str, wanted: str, value: object, hint: str = ""
) -> SeqKeysError:
    kind = f" ({type(value).__name__})"
    return error(
        f"{what} must be {wanted}, not {shown(value)}{kind}" + (f"; {hint}" if hint else "")
    )


def check_int(
    value: object,
    name: str,
    error: type[SeqKeysError],
    *,
    min: int | None = None,
    max: int | None = None,
    hint: str = "",
) -> int:
    """``value`` if it is an int (not a bool) within ``[min, max]``; else raise ``error``.

    Example::

        >>> check_int(5, "batch_size", SeqKeysError, min=1)
        5
    """
    if isinstance(value, int) and not isinstance(value, bool):
        number = int(value)  # an int subclass's own value: its operators may say otherwise
        if (min is None or number >= min) and (max is None or number <= max):
            return number
    if min is not None and max is not None:
        wanted = f"an int from {min} to {max}"
    elif min is not None:
        wanted = f"an int >= {min}"
    elif max is not None:
        wanted = f"an int <= {max}"
    else:
        wanted = "an int"
    raise _refuse(error, name, wanted, value, hint)


def check_seconds(
    value: object,
    name: str,
    error: type[SeqKeysError],
    *,
    max: float = 365 * 86400.0,
    zero: bool = False,
    unit: str = "seconds",
) -> float:
    """``value`` as a float if it is a finite number of seconds in ``(0, max]``; else raise.

    ``zero=True`` accepts 0 too; ``unit`` names the unit in the message.

    Example::

        >>> check_seconds(30, "ttl", SeqKeysError)
        30.0
    """
    # compared before any float(): float(10**400) overflows
    if (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and not (isinstance(value, float) and math.isnan(value))
        and (value >= 0 if zero else value > 0)
        and value <= max
    ):
        return float(value)
    sign = "non-negative" if zero else "positive"
    raise _refuse(error, name, f"a finite, {sign} number of {unit} of at most {max:g}", value)


def check_name(
    value: object,
    what: str,
    error: type[SeqKeysError],
    *,
    max_length: int = IDENTIFIER_LENGTH,
    nullable: bool = False,
    hint: str = "",
) -> Any:
    """``value`` if it is a str of 1 to ``max_length`` characters UTF-8 can send, without
    a NUL; else raise.

    Names of tables, columns, schemas and sequences: a NUL cannot be stored
    or sent by most drivers, and an empty or over-long name fails only later,
    at the server, where the error no longer says which argument it was.
    With ``nullable``, None is accepted too (a schema left to the default).

    Example::

        >>> check_name("invoices", "table", SeqKeysError)
        'invoices'
    """
    if value is None and nullable:
        return None
    wanted = f"a non-empty str of at most {max_length} characters" + (
        " or None" if nullable else ""
    )
    if not isinstance(value, str) or not value:
        raise _refuse(error, what, wanted, value, hint)
    if len(value) > max_length:
        hint = "; ".join(filter(None, [f"it has {len(value)} characters", hint]))
        raise _refuse(error, what, wanted, value, f"{hint}; use a shorter name")
    if "\x00" in value:
        raise _refuse(
            error, what, wanted + " without NUL characters", value, "remove the NUL character"
        )
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: no driver can send it
            raise _refuse(
                error,
                what,
                wanted + " that UTF-8 can encode",
                value,
                "it holds a lone surrogate (a half of a UTF-16 pair, as from decoding bytes "
                "with errors='surrogateescape'); decode the name properly",
            ) from None
    return value


def check_flag(
    value: object, what: str, error: type[SeqKeysError], *, nullable: bool = False
) -> Any:
    """``value`` if it is True or False (or None with ``nullable``); else raise.

    A string such as ``"no"`` is truthy: taking it as a flag would do the
    opposite of what the caller wrote.

    Example::

        >>> check_flag(True, "checkfirst", SeqKeysError)
        True
    """
    if isinstance(value, bool) or (nullable and value is None):
        return value
    raise _refuse(error, what, "True or False" + (" or None" if nullable else ""), value)


def check_instance(
    value: object,
    types: type[T] | tuple[type[Any], ...],
    what: str,
    error: type[SeqKeysError],
    *,
    nullable: bool = False,
    hint: str = "",
) -> Any:
    """``value`` if it is an instance of ``types`` (or None with ``nullable``); else raise.

    Example::

        >>> check_instance(3, int, "count", SeqKeysError)
        3
    """
    if (nullable and value is None) or isinstance(value, types):
        return value
    names = [t.__name__ for t in (types if isinstance(types, tuple) else (types,))]
    wanted = "a " + " or a ".join(names) + (" or None" if nullable else "")
    raise _refuse(error, what, wanted, value, hint)


def check_aware(value: object, what: str, error: type[SeqKeysError]) -> datetime:
    """``value`` if it is a timezone-aware datetime; else raise.

    A naive datetime is refused, not read as local time or UTC: the two
    differ by hours, and keys near a bound would land on the wrong side.

    Example::

        >>> from datetime import timezone
        >>> check_aware(datetime(2024, 1, 1, tzinfo=timezone.utc), "start", SeqKeysError).year
        2024
    """
    wanted = "a timezone-aware datetime"
    if not isinstance(value, datetime):
        raise _refuse(error, what, wanted, value)
    if value.tzinfo is None or value.utcoffset() is None:
        raise _refuse(
            error, what, wanted, value, "add a tzinfo, e.g. datetime(..., tzinfo=timezone.utc)"
        )
    return value


def check_callable(
    value: object, what: str, error: type[SeqKeysError], *, nullable: bool = True
) -> Any:
    """``value`` if it is callable (or None with ``nullable``); else raise.

    Example::

        >>> check_callable(None, "after_fork", SeqKeysError) is None
        True
    """
    if (nullable and value is None) or callable(value):
        return value
    raise _refuse(error, what, "a callable" + (" or None" if nullable else ""), value)


def checked_clock(
    clock: Callable[[], object] | None, what: str, error: type[SeqKeysError]
) -> Callable[[], int] | None:
    """A user's clock wrapped so that each reading is checked: an int of Unix ns.

    None stays None (the library's own clock needs no check). A reading that
    is not an int from 0 to 2**63 - 1 raises ``error`` at the call that read
    it, before anything is minted from it.

    Example::

        >>> checked_clock(lambda: 5, "clock", SeqKeysError)()
        5
    """
    if clock is None:
        return None
    check_callable(clock, what, error, nullable=False)

    def read() -> int:
        now = clock()
        if type(now) is int and 0 <= now <= _CLOCK_MAX_NS:
            return now
        raise _refuse(
            error,
            f"a reading of {what}",
            "an int of nanoseconds since 1970 from 0 to 2**63 - 1",
            now,
            f"fix the function passed as {what}= (time.time_ns is one)",
        )

    read.__wrapped__ = clock  # type: ignore[attr-defined]
    return read
