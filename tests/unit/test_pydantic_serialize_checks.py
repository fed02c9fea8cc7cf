"""Ids written as JSON strings (``SnowflakeId``, ``IdBits(as_string=True)``) are checked when
written, as ``JsSafeId`` numbers are: a value that skipped validation (an assignment without
``validate_assignment``, ``model_construct()``) and is out of range raises
``PydanticSerializationError`` instead of going out as a string no validator would take."""

from __future__ import annotations

import enum
import json
from typing import Annotated

import pytest
from pydantic import BaseModel, TypeAdapter
from pydantic_core import PydanticSerializationError

from sqlalchemy_seqkeys.pydantic import IdBits, JsSafeId, SnowflakeId

MAX63 = 2**63 - 1


class Out(BaseModel):
    id: SnowflakeId


@pytest.mark.parametrize("bad", [-5, -1, MAX63 + 1, 2**70, True, 1.5, "12", None])
def test_a_snowflake_id_that_skipped_validation_is_refused_when_written(bad: object) -> None:
    # the reviewer's case: model_construct(id=-5) and a 70-bit value went out as strings
    out = Out.model_construct(id=bad)
    with pytest.raises(PydanticSerializationError, match=r"cannot be written as IdBits\(63"):
        out.model_dump_json()
    with pytest.raises(PydanticSerializationError, match=r"cannot be written as IdBits\(63"):
        out.model_dump(mode="json")
    with pytest.raises(PydanticSerializationError, match=r"cannot be written as IdBits\(63"):
        out.model_dump()  # an int in Python, but one the type refuses (as JsSafeId does)


def test_an_assignment_out_of_range_is_refused_when_written_and_names_value_and_limit() -> None:
    out = Out(id=1)
    out.id = 2**70  # validate_assignment is off by default: the assignment is not checked
    with pytest.raises(PydanticSerializationError, match=f"{2**70}.*{MAX63}"):
        out.model_dump_json()
    out.id = MAX63
    assert out.model_dump_json() == f'{{"id":"{MAX63}"}}'
    assert out.model_dump() == {"id": MAX63}


def test_valid_ids_are_written_as_before() -> None:
    for value in (0, 1, 2**53 + 1, MAX63):
        out = Out.model_construct(id=value)
        assert out.model_dump_json() == f'{{"id":"{value}"}}'
        assert out.model_dump(mode="json") == {"id": str(value)}
        assert out.model_dump() == {"id": value}
        assert type(out.model_dump()["id"]) is int


def test_an_int_subclass_is_written_as_its_digits() -> None:
    class Code(enum.IntEnum):
        ANSWER = 42

    out = Out.model_construct(id=Code.ANSWER)
    assert out.model_dump_json() == '{"id":"42"}'
    assert type(out.model_dump()["id"]) is int


def test_other_widths_as_strings_are_checked_against_their_own_limit() -> None:
    id40 = TypeAdapter(Annotated[int, IdBits(40, as_string=True)])
    assert id40.dump_json(2**40 - 1) == f'"{2**40 - 1}"'.encode()
    with pytest.raises(PydanticSerializationError, match=f"{2**40}.*{2**40 - 1}"):
        id40.dump_json(2**40)


def test_the_json_schemas_are_unchanged() -> None:
    # input: a number or a string of digits; output: a string (so FastAPI splits the model
    # into "-Input" and "-Output" components, as before)
    validation = Out.model_json_schema(mode="validation")["properties"]["id"]
    assert validation == {
        "anyOf": [
            {"type": "integer", "minimum": 0, "maximum": MAX63},
            {"type": "string", "pattern": "^[0-9]+$", "maxLength": 19},
        ],
        "title": "Id",
    }
    serialization = Out.model_json_schema(mode="serialization")["properties"]["id"]
    assert serialization == {"type": "string", "title": "Id"}


def test_a_fastapi_response_with_an_id_out_of_range_is_a_server_error() -> None:
    import asyncio

    import httpx
    from fastapi import FastAPI

    app = FastAPI()

    class Both(BaseModel):
        id: SnowflakeId
        page: JsSafeId

    @app.get("/negative", response_model=Both)
    def negative() -> Both:
        return Both.model_construct(id=-5, page=1)

    @app.get("/wide", response_model=Both)
    def wide() -> Both:
        both = Both(id=1, page=1)
        both.id = 2**70  # not validated; FastAPI does not validate a model it is returned
        return both

    @app.get("/fine", response_model=Both)
    def fine() -> Both:
        return Both(id=MAX63, page=1)

    async def get(path: str, *, raise_app_exceptions: bool) -> httpx.Response:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=raise_app_exceptions)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return await client.get(path)

    for path in ("/negative", "/wide"):
        response = asyncio.run(get(path, raise_app_exceptions=False))
        assert response.status_code == 500, response.text
        assert str(2**70) not in response.text
        assert '"-5"' not in response.text
        with pytest.raises(PydanticSerializationError, match=r"cannot be written as IdBits\(63"):
            asyncio.run(get(path, raise_app_exceptions=True))
    fine_response = asyncio.run(get("/fine", raise_app_exceptions=True))
    assert fine_response.status_code == 200, fine_response.text
    assert json.loads(fine_response.text) == {"id": str(MAX63), "page": 1}
    schemas = app.openapi()["components"]["schemas"]
    assert schemas["Both"]["properties"]["id"]["type"] == "string"
