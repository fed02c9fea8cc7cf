"""The Pydantic types: ids that survive JSON in JavaScript, TypeIDs as text, FastAPI models.

JavaScript is real here: Node.js parses what the models dump (``JSON.parse``)
and prints each number back with ``String()``, which gives the exact digits of
the double it holds.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from datetime import timedelta
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError

from sqlalchemy_seqkeys import (
    InvalidSnowflakeError,
    InvalidTypeIDError,
    Snowflake,
    SnowflakeLayout,
    TypeID,
    new_typeid,
)
from sqlalchemy_seqkeys.pydantic import IdBits, JsSafeId, SnowflakeId, TypeIDPrefix

NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="Node.js is not installed")

MAX63 = 2**63 - 1
MAX53 = 2**53 - 1


def js_parse(text: str) -> Any:
    """What JavaScript's JSON.parse makes of ``text``, numbers written back exactly as strings."""
    assert NODE is not None
    script = (
        "const s = require('fs').readFileSync(0, 'utf8');"
        "const v = JSON.parse(s);"
        "const out = v.map(o => Object.fromEntries(Object.entries(o).map("
        "([k, x]) => [k, [typeof x, String(x)]])));"
        "process.stdout.write(JSON.stringify(out));"
    )
    result = subprocess.run(
        [NODE, "-e", script], input=text, capture_output=True, text=True, timeout=60, check=True
    )
    return json.loads(result.stdout)


class Tweet(BaseModel):
    id: SnowflakeId
    page: JsSafeId


def sample_ids(maximum: int, count: int) -> list[int]:
    rng = random.Random(24)
    edges = [0, 1, maximum, maximum - 1, 2**52 + 1, 2**53 - 1]
    return [v for v in edges if v <= maximum] + [rng.randint(0, maximum) for _ in range(count)]


@needs_node
def test_63_bit_ids_reach_javascript_exactly_as_strings_and_53_bit_ids_as_numbers() -> None:
    tweets = [
        Tweet(id=a, page=b)
        for a, b in zip(sample_ids(MAX63, 300), sample_ids(MAX53, 300), strict=False)
    ]
    text = "[" + ",".join(t.model_dump_json() for t in tweets) + "]"
    parsed = js_parse(text)
    for tweet, seen in zip(tweets, parsed, strict=True):
        assert seen["id"] == ["string", str(tweet.id)]
        assert seen["page"] == ["number", str(tweet.page)]
    # and back: what JavaScript sends (the string, the number) validates to the same ids
    back = [Tweet.model_validate({k: v[1] for k, v in seen.items()}) for seen in parsed]
    assert back == tweets


@needs_node
def test_ids_of_a_53_bit_snowflake_layout_reach_javascript_exactly_as_numbers() -> None:
    # 39 bits of 10 ms (about 174 years from the epoch), 6 worker bits, 8 sequence bits
    layout = SnowflakeLayout(
        timestamp_bits=39, worker_bits=6, sequence_bits=8, time_unit=timedelta(milliseconds=10)
    )
    snowflake = Snowflake(worker_id=63, layout=layout)
    ids = [snowflake.next_id() for _ in range(3000)]
    assert max(ids) <= MAX53
    pages = [Page(id=i) for i in ids]
    parsed = js_parse("[" + ",".join(p.model_dump_json() for p in pages) + "]")
    assert [seen["id"] for seen in parsed] == [["number", str(i)] for i in ids]


class Page(BaseModel):
    id: JsSafeId


@needs_node
def test_what_goes_wrong_without_them_a_63_bit_number_is_rounded_by_javascript() -> None:
    raw = json.dumps([{"id": 1234567890123456789}])
    assert js_parse(raw) == [{"id": ["number", "1234567890123456800"]}]


def test_63_bit_ids_round_trip_through_the_pydantic_type_as_strings() -> None:
    for value in sample_ids(MAX63, 2000):
        dumped = Tweet(id=value, page=1).model_dump_json()
        assert json.loads(dumped)["id"] == str(value)
        assert Tweet.model_validate_json(dumped).id == value
        assert Tweet.model_validate_json(dumped.replace(f'"{value}"', str(value))).id == value
    assert Tweet(id=MAX63, page=1).model_dump() == {"id": MAX63, "page": 1}  # ints in Python


@pytest.mark.parametrize(
    "bad",
    [MAX63 + 1, -1, "9223372036854775808", "1.5", " 12", "1e3", "0x10", "1_0", True, 1.0, None],
)
def test_a_63_bit_id_refuses_what_is_not_one(bad: object) -> None:
    with pytest.raises(ValidationError):
        Tweet.model_validate({"id": bad, "page": 1})


@pytest.mark.parametrize("bad", [MAX53 + 1, "9007199254740992", -1, 2.0, False])
def test_a_53_bit_id_refuses_what_javascript_would_round(bad: object) -> None:
    with pytest.raises(ValidationError):
        Tweet.model_validate({"id": 1, "page": bad})


def test_typeids_validate_from_text_and_serialise_as_text() -> None:
    class Out(BaseModel):
        any_id: TypeID
        user_id: Annotated[TypeID, TypeIDPrefix("user")]

    user = new_typeid("user")
    out = Out.model_validate({"any_id": str(new_typeid("order")), "user_id": str(user)})
    assert out.user_id == user
    assert isinstance(out.any_id, TypeID)
    dumped = json.loads(out.model_dump_json())
    assert dumped == {"any_id": str(out.any_id), "user_id": str(user)}
    assert Out.model_validate_json(out.model_dump_json()) == out
    assert Out(any_id=out.any_id, user_id=user) == out  # TypeID objects are taken as they are
    for bad in ("order_01h455vb4pex5vsknk084sn02q", "user_8zzzzzzzzzzzzzzzzzzzzzzzzz", 12):
        with pytest.raises(ValidationError):
            Out.model_validate({"any_id": out.any_id, "user_id": bad})
    with pytest.raises(ValidationError):
        Out(any_id=out.any_id, user_id=new_typeid("order"))
    schema = Out.model_json_schema()["properties"]["user_id"]
    assert schema["type"] == "string"
    assert schema["pattern"].startswith("^user_")


def test_bad_arguments_to_the_types_are_seqkeys_errors() -> None:
    with pytest.raises(InvalidTypeIDError):
        TypeIDPrefix("User")
    for bits, as_string in ((0, True), (65, True), (54, False), (True, True), (63, "yes")):
        with pytest.raises(InvalidSnowflakeError):
            IdBits(bits, as_string=as_string)  # type: ignore[arg-type]
    assert TypeAdapter(Annotated[int, IdBits(48, as_string=False)]).dump_json(2**48 - 1) == (
        b"281474976710655"
    )


def test_fastapi_response_models_send_strings_and_typeids_as_text() -> None:
    import asyncio

    import httpx
    from fastapi import FastAPI

    app = FastAPI()
    user = new_typeid("user")

    class UserOut(BaseModel):
        id: SnowflakeId
        page: JsSafeId
        public_id: Annotated[TypeID, TypeIDPrefix("user")]

    @app.get("/users/{public_id}", response_model=UserOut)
    def get_user(public_id: Annotated[TypeID, TypeIDPrefix("user")]) -> UserOut:
        return UserOut(id=MAX63, page=MAX53, public_id=public_id)

    async def main() -> tuple[httpx.Response, httpx.Response, httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return (
                await client.get(f"/users/{user}"),
                await client.get("/users/order_01h455vb4pex5vsknk084sn02q"),
                await client.get("/openapi.json"),
            )

    found, wrong_type, openapi = asyncio.run(main())
    assert found.status_code == 200, found.text
    assert found.json() == {"id": str(MAX63), "page": MAX53, "public_id": str(user)}
    assert wrong_type.status_code == 422
    schema = openapi.json()["components"]["schemas"]["UserOut"]
    assert schema["properties"]["id"]["type"] == "string"


def test_importing_the_package_does_not_import_pydantic() -> None:
    code = (
        "import sys, sqlalchemy_seqkeys;"
        "assert 'pydantic' not in sys.modules and 'pydantic_core' not in sys.modules, "
        "sorted(m for m in sys.modules if 'pydantic' in m)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


class Counter(BaseModel):
    count: JsSafeId


def test_a_53_bit_id_above_the_limit_is_refused_when_written_after_assignment() -> None:
    # validate_assignment is off by default: the assignment is not checked, so the write must be
    counter = Counter(count=MAX53)
    counter.count = 2**60
    with pytest.raises(PydanticSerializationError, match=f"{2**60}.*{MAX53}"):
        counter.model_dump_json()
    with pytest.raises(PydanticSerializationError, match=f"{2**60}.*{MAX53}"):
        counter.model_dump(mode="json")
    with pytest.raises(PydanticSerializationError, match=f"{2**60}.*{MAX53}"):
        counter.model_dump()  # an int in Python, but one the type refuses
    counter.count = -1
    with pytest.raises(PydanticSerializationError, match="-1 cannot be written"):
        counter.model_dump_json()
    counter.count = MAX53
    assert counter.model_dump_json() == f'{{"count":{MAX53}}}'


@pytest.mark.parametrize("bad", [MAX53 + 1, 2**60, -1, 1e20, True, "12"])
def test_a_53_bit_id_above_the_limit_is_refused_when_written_from_model_construct(
    bad: object,
) -> None:
    with pytest.raises(PydanticSerializationError, match=r"cannot be written as IdBits\(53"):
        Counter.model_construct(count=bad).model_dump_json()
    assert Counter.model_construct(count=MAX53).model_dump_json() == f'{{"count":{MAX53}}}'


def test_a_53_bit_id_keeps_its_json_schema_and_python_dump() -> None:
    number = {"type": "integer", "minimum": 0, "maximum": MAX53}
    digits = {"type": "string", "pattern": "^[0-9]+$", "maxLength": 16}
    for mode in ("validation", "serialization"):
        schema = Counter.model_json_schema(mode=mode)["properties"]["count"]  # type: ignore[arg-type]
        assert schema == {"anyOf": [number, digits], "title": "Count"}
    assert Counter(count=MAX53).model_dump() == {"count": MAX53}  # an int in Python


def test_a_fastapi_response_with_a_53_bit_id_above_the_limit_is_a_server_error() -> None:
    import asyncio

    import httpx
    from fastapi import FastAPI

    app = FastAPI()

    @app.get("/counter")
    def get_counter() -> Counter:
        counter = Counter(count=1)
        counter.count = 2**60  # not validated; FastAPI does not validate a model it is returned
        return counter

    @app.get("/constructed", response_model=Counter)
    def get_constructed() -> Counter:
        return Counter.model_construct(count=MAX53 + 1)

    @app.post("/counter")
    def echo(counter: Counter) -> Counter:
        return counter

    async def main() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return [await client.get("/counter"), await client.get("/constructed")]

    for response in asyncio.run(main()):
        assert response.status_code == 500, response.text
        assert str(2**60) not in response.text
        assert "1152921504606847000" not in response.text  # nor what JavaScript makes of it
    # one component for input and output, as before: the check adds no "-Output" schema
    schemas = app.openapi()["components"]["schemas"]
    assert "Counter-Output" not in schemas
    schema = schemas["Counter"]["properties"]["count"]
    assert schema["anyOf"][0] == {"type": "integer", "minimum": 0, "maximum": MAX53}


@pytest.mark.parametrize("engine", ["rust-regex", "python-re"])
@pytest.mark.parametrize("bad", ["123\n", "123\r\n", "\n123", "١٢٣", "12\x003"])
def test_an_id_from_text_is_ascii_digits_only_whatever_the_regex_engine(
    engine: str, bad: str
) -> None:
    class Flake(BaseModel):
        model_config = ConfigDict(regex_engine=engine)  # type: ignore[typeddict-item]
        id: SnowflakeId
        page: JsSafeId

    with pytest.raises(ValidationError):
        Flake.model_validate({"id": bad, "page": 1})
    with pytest.raises(ValidationError):
        Flake.model_validate({"id": 1, "page": bad})
    assert Flake.model_validate({"id": "0123", "page": "9"}) == Flake(id=123, page=9)
