"""The exceptions of sqlalchemy-seqkeys, one hierarchy rooted at :class:`SeqKeysError`.

Every message says what was wrong and what to do about it, so that the text a
user sees in a traceback is enough to fix the call::

    >>> from sqlalchemy_seqkeys import new_comb, SeqKeysError
    >>> from datetime import datetime
    >>> try:
    ...     new_comb("as_string", at=datetime(2024, 1, 1))
    ... except SeqKeysError as exc:
    ...     print(type(exc).__name__)
    NaiveDatetimeError

Errors that stand for bad arguments also derive from the built-in exception a
Python programmer would expect (``ValueError`` or ``TypeError``), so existing
``except ValueError`` blocks keep working.
"""

from __future__ import annotations

__all__ = [
    "InvalidGuidError",
    "InvalidLayoutError",
    "NaiveDatetimeError",
    "SeqKeysError",
    "TimestampOutOfRangeError",
]


class SeqKeysError(Exception):
    """Base class of every error raised by sqlalchemy-seqkeys.

    Example::

        try:
            ...
        except SeqKeysError as exc:
            log.error("key generation failed: %s", exc)
    """


class InvalidLayoutError(SeqKeysError, ValueError):
    """A COMB layout name or value that is not one of :class:`CombLayout`.

    Example: ``new_comb("as_text")`` raises it; use ``"as_string"``.
    """


class NaiveDatetimeError(SeqKeysError, ValueError):
    """A datetime without a timezone where an absolute instant is needed.

    Example: ``new_comb(CombLayout.AS_STRING, at=datetime(2024, 1, 1))`` raises
    it; pass ``datetime(2024, 1, 1, tzinfo=timezone.utc)`` instead.
    """


class TimestampOutOfRangeError(SeqKeysError, ValueError):
    """A timestamp that does not fit the key's timestamp field.

    Example: COMB GUIDs hold 48 bits of Unix milliseconds, from 1970-01-01 to
    10889-08-02; ``new_comb(layout, at=datetime(1960, 1, 1, tzinfo=utc))``
    raises it.
    """


class InvalidGuidError(SeqKeysError, TypeError):
    """A value that is not a GUID where one is expected.

    Example: binding ``12345`` to a :class:`CombGuid` column raises it; pass a
    ``uuid.UUID`` or its 36-character string.
    """
