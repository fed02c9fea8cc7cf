"""An int subclass whose ``__int__`` or comparisons lie is written as its own value, checked.

``JsSafeId``, ``SnowflakeId`` and ``IdBits`` check an id again when it is written; the
check and the value written are both the int itself (``int.__int__``, as Snowflake's
transform check reads it), never what a subclass's ``__int__`` or ``__ge__``/``__le__``
return: a value that passed the range check cannot then go out as a number JavaScript
rounds, or as digits no validator takes.
"""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import BaseModel, TypeAdapter
from pydantic_core import PydanticSerializationError

from sqlalchemy_seqkeys.pydantic import JS_MAX_SAFE_INTEGER, IdBits, JsSafeId, SnowflakeId

HUGE = 2**60 + 1  # past 2**53: JavaScript reads it as 1152921504606846976


class LyingInt(int):
    """5, whose ``int()`` says 2**60 + 1."""

    def __int__(self) -> int:
        return HUGE


class InRangeByItsWord(int):
    """An int whose comparisons say it is in every range (0 <= x <= anything)."""

    def __ge__(self, other: Any) -> bool:
        return True

    def __le__(self, other: Any) -> bool:
        return True


class Number(BaseModel):
    id: JsSafeId


class Text(BaseModel):
    id: SnowflakeId


def test_a_js_safe_id_with_a_lying_int_is_written_as_its_value() -> None:
    # the reviewer's case: model_construct skips validation; the range check passed on 5,
    # then int(value) sent 1152921504606846977 to the browser
    shown = Number.model_construct(id=LyingInt(5))
    assert shown.model_dump_json() == '{"id":5}'
    assert shown.model_dump(mode="json") == {"id": 5}
    assert type(shown.model_dump()["id"]) is int
    assert Number(id=LyingInt(5)).model_dump_json() == '{"id":5}'  # validated, the same


def test_a_snowflake_id_with_a_lying_int_is_written_as_its_digits() -> None:
    assert Text.model_construct(id=LyingInt(5)).model_dump_json() == '{"id":"5"}'
    assert TypeAdapter(Annotated[int, IdBits(48, as_string=True)]).dump_json(LyingInt(7)) == b'"7"'


@pytest.mark.parametrize(
    ("model", "value"),
    [(Number, JS_MAX_SAFE_INTEGER + 1), (Number, HUGE), (Number, -1), (Text, 2**63), (Text, -1)],
)
def test_an_out_of_range_subclass_whose_comparisons_lie_is_refused(
    model: type[BaseModel], value: int
) -> None:
    with pytest.raises(PydanticSerializationError, match="cannot be written as IdBits"):
        model.model_construct(id=InRangeByItsWord(value)).model_dump_json()


def test_an_in_range_subclass_whose_comparisons_lie_is_written() -> None:
    assert Number.model_construct(id=InRangeByItsWord(42)).model_dump_json() == '{"id":42}'
