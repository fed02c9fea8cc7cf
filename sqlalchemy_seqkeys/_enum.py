"""Enums whose members are also their strings, with one helpful coercion."""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Any, ClassVar, TypeVar

from ._validate import shown

__all__ = ["ChoiceEnum"]

E = TypeVar("E", bound="ChoiceEnum")


class ChoiceEnum(str, Enum):
    """A ``str`` enum: members compare and hash as their values, and ``coerce``
    turns a value into a member or raises the subclass's error naming the choices.

    A subclass names its error and its noun as class keywords::

        class CombLayout(ChoiceEnum, error=InvalidLayoutError, noun="COMB layout"):
            ...
    """

    # set by __init_subclass__ (a value here would make them members)
    _error: ClassVar[Callable[[str], Exception]]
    _noun: ClassVar[str]

    def __init_subclass__(
        cls,
        *,
        error: Callable[[str], Exception] = ValueError,
        noun: str = "",
        **kwargs: Any,
    ) -> None:
        super().__init_subclass__(**kwargs)
        cls._error = error
        cls._noun = noun or cls.__name__

    @classmethod
    def coerce(cls: type[E], value: E | str) -> E:
        """Return the member for ``value``, or raise the enum's error listing the choices."""
        return cls(value)

    @classmethod
    def _missing_(cls, value: object) -> Any:
        # Enum calls it for a value that is no member: ``CombLayout("x")`` raises
        # the enum's own error too, not a bare ValueError.
        choices = ", ".join(repr(m.value) for m in cls)
        kind = "" if isinstance(value, str) else f" ({type(value).__name__})"
        raise cls._error(
            f"{shown(value)}{kind} is not a {cls._noun}; use one of {choices} or a "
            f"{cls.__name__} member"
        )
