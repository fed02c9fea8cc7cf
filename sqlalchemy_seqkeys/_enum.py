"""Enums whose members are also their strings, with one helpful coercion."""

from __future__ import annotations

from enum import Enum
from typing import TypeVar

__all__ = ["ChoiceEnum"]

E = TypeVar("E", bound="ChoiceEnum")


class ChoiceEnum(str, Enum):
    """A ``str`` enum: members compare and hash as their values, and ``coerce``
    turns a value into a member or raises the subclass's error naming the choices."""

    @classmethod
    def _invalid(cls, message: str) -> Exception:
        return ValueError(message)

    @classmethod
    def _noun(cls) -> str:
        return cls.__name__

    @classmethod
    def coerce(cls: type[E], value: E | str) -> E:
        """Return the member for ``value``, or raise the enum's error listing the choices."""
        try:
            return cls(value)
        except ValueError:
            choices = ", ".join(repr(m.value) for m in cls)
            raise cls._invalid(f"{value!r} is not a {cls._noun()}; use one of {choices}") from None
