"""A GUID's text is read strictly: a malformed one is refused, never read as another UUID.

``uuid.UUID(text)`` drops ``urn:`` and ``uuid:`` wherever they are, strips
braces and hyphens wherever they are and hands the rest to ``int(..., 16)``,
which takes a sign, underscores, surrounding whitespace and any Unicode digit.
So ``'0190b6a8-6c3e-7d4a-9f1e-2b5c8d7e6f1 '`` (a digit missing, a space) was
bound to a ``CombGuid`` column as ``00190b6a-86c3-...``, an unrelated UUID.
``_validate.parse_uuid`` (CombGuid's binds and literals, UuidV47's encode and
decode) and CombGuid's reading of stored text now take exactly the forms
Python documents for ``uuid.UUID``'s hex argument, written properly: 32 hex
digits with the four hyphens of 8-4-4-4-12 or none, alone, in braces or after
``urn:uuid:`` (hex and prefix in any case).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy.dialects import mysql, postgresql, sqlite

from sqlalchemy_seqkeys import CombGuid, InvalidGuidError, InvalidOpaqueIdError, UuidV47
from sqlalchemy_seqkeys._validate import parse_uuid

GUID = uuid.UUID("0190b6a8-6c3e-7d4a-9f1e-2b5c8d7e6f10")
TEXT = str(GUID)

ACCEPTED = [
    TEXT,
    TEXT.upper(),
    "0190B6A8-6c3e-7D4A-9f1e-2B5C8d7e6f10",
    GUID.hex,
    GUID.hex.upper(),
    "{" + TEXT + "}",
    "{" + GUID.hex.upper() + "}",
    "urn:uuid:" + TEXT,
    "URN:UUID:" + TEXT.upper(),
    "Urn:Uuid:" + GUID.hex,
]

REFUSED = {
    "trailing space, a digit missing": "0190b6a8-6c3e-7d4a-9f1e-2b5c8d7e6f1 ",
    "trailing space": TEXT + " ",
    "leading space": " " + TEXT,
    "trailing newline": TEXT + "\n",
    "tab inside": GUID.hex[:16] + "\t" + GUID.hex[17:],
    "plus sign": "+190b6a8-6c3e-7d4a-9f1e-2b5c8d7e6f10",
    "minus sign": "-" + GUID.hex[1:],
    "underscore for a digit": "0_90b6a8-6c3e-7d4a-9f1e-2b5c8d7e6f10",
    "underscore between digits": GUID.hex[:16] + "_" + GUID.hex[17:],
    "uuid: inside": "0190b6a86c3e7d4a-uuid:-9f1e2b5c8d7e6f10",
    "urn: inside": "0190b6a8-urn:6c3e-7d4a-9f1e-2b5c8d7e6f10",
    "uuid: prefix alone": "uuid:" + TEXT,
    "urn: prefix alone": "urn:" + TEXT,
    "urn:uuid: and braces": "urn:uuid:{" + TEXT + "}",
    "urn:uuid: twice": "urn:uuid:urn:uuid:" + TEXT,
    "prefix after": TEXT + "urn:uuid:",
    "dotless i in the prefix": "urn:uu\u0131d:" + TEXT,
    "Kelvin sign": "\u212a" + TEXT[1:],
    "opening brace only": "{" + TEXT,
    "closing brace only": TEXT + "}",
    "braces twice": "{{" + TEXT + "}}",
    "braces inside": "0190b6a8-{6c3e-7d4a-9f1e}-2b5c8d7e6f10",
    "hyphen misplaced": "0190b6a-86c3e-7d4a-9f1e-2b5c8d7e6f10",
    "three hyphens": "0190b6a86c3e-7d4a-9f1e-2b5c8d7e6f10",
    "five hyphens": "0190b6a8-6c3e-7d4a-9f1e-2b5c-8d7e6f10",
    "doubled hyphen": "0190b6a8--6c3e7d4a-9f1e-2b5c8d7e6f10",
    "hyphens only at the ends": "-" + GUID.hex + "-",
    "31 digits": GUID.hex[:-1],
    "33 digits": GUID.hex + "0",
    "37 characters": TEXT + "0",
    "0x prefix": "0x" + GUID.hex[2:],
    "Arabic-Indic digit": "\u0660" + TEXT[1:],
    "full-width digit": "\uff10" + TEXT[1:],
    "Devanagari digit": TEXT[:-1] + "\u0966",
    "full-width letter": TEXT[:-2] + "\uff41" + TEXT[-1],
    "g": TEXT[:-1] + "g",
    "NUL": TEXT[:-1] + "\x00",
    "empty": "",
    "nil word": "nil",
}


@pytest.mark.parametrize("text", ACCEPTED)
def test_the_documented_forms_are_read(text: str) -> None:
    assert parse_uuid(text) == GUID


@pytest.mark.parametrize("text", list(REFUSED.values()), ids=list(REFUSED))
def test_anything_else_is_no_guid(text: str) -> None:
    assert parse_uuid(text) is None


def test_a_uuid_object_is_passed_through_as_it_is() -> None:
    assert parse_uuid(GUID) is GUID
    assert parse_uuid(None) is None
    assert parse_uuid(GUID.bytes) is None
    assert parse_uuid(GUID.int) is None


def _forms(guid: uuid.UUID) -> set[str]:
    bodies = (str(guid), guid.hex)
    return {*bodies, *("{" + b + "}" for b in bodies), *("urn:uuid:" + b for b in bodies)}


def _mutated(text: str, data: st.DataObject) -> str:
    noise = st.sampled_from(
        [*"-{}:_+ \t\n0aAfFgG\u0660\uff10\u0966\u212a", "urn:", "uuid:", "urn:uuid:"]
    )
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(text)))
        how = data.draw(st.sampled_from(["insert", "delete", "replace"]))
        piece = data.draw(noise)
        if how == "insert":
            text = text[:at] + piece + text[at:]
        elif how == "delete":
            text = text[:at] + text[at + 1 :]
        else:
            text = text[:at] + piece + text[at + 1 :]
    return text


@given(st.uuids(), st.data())
def test_text_is_read_only_in_a_documented_form(guid: uuid.UUID, data: st.DataObject) -> None:
    text = data.draw(st.sampled_from(sorted(_forms(guid))))
    if data.draw(st.booleans()):
        text = text.upper()
    assert parse_uuid(text) == guid
    mutated = _mutated(text, data)
    read = parse_uuid(mutated)
    # a change either breaks the text or spells another UUID in a documented form
    assert read is None or mutated.lower() in _forms(read)


@given(st.text(max_size=50))
def test_arbitrary_text_is_read_only_in_a_documented_form(text: str) -> None:
    read = parse_uuid(text)
    assert read is None or text.lower() in _forms(read)


# -- where the text is read ----------------------------------------------------------

DIALECTS: dict[str, Any] = {
    "sqlite text": (sqlite.dialect(), {}),
    "sqlite bytes": (sqlite.dialect(), {"binary": True}),
    "postgresql native": (postgresql.dialect(), {}),
    "mariadb native_uuid": (mysql.dialect(is_mariadb=True), {"native_uuid": True}),
}
BAD = "0190b6a8-6c3e-7d4a-9f1e-2b5c8d7e6f1 "


@pytest.mark.parametrize(("dialect", "kw"), list(DIALECTS.values()), ids=list(DIALECTS))
@pytest.mark.parametrize("text", [BAD, "+190b6a8-6c3e-7d4a-9f1e-2b5c8d7e6f10", " " + TEXT])
def test_a_bind_refuses_malformed_text(dialect: Any, kw: dict[str, bool], text: str) -> None:
    guid_type = CombGuid(**kw)
    bind = guid_type.dialect_impl(dialect).bind_processor(dialect)
    assert bind is not None
    with pytest.raises(InvalidGuidError, match="is not a GUID"):
        bind(text)
    with pytest.raises(InvalidGuidError, match="is not a GUID"):
        guid_type.process_bind_param(text, dialect)
    with pytest.raises(InvalidGuidError, match="is not a GUID"):
        guid_type.process_literal_param(text, dialect)
    # the documented forms still bind as the UUID they spell
    for good in ACCEPTED:
        assert bind(good) == bind(GUID)


def test_malformed_text_is_not_stored_as_another_uuid() -> None:
    engine = sa.create_engine("sqlite://")
    table = sa.Table("t", sa.MetaData(), sa.Column("id", CombGuid(), primary_key=True))
    table.create(engine)
    malformed = (
        BAD,
        "0_90b6a8-6c3e-7d4a-9f1e-2b5c8d7e6f10",
        "0190b6a86c3e7d4a-uuid:-9f1e2b5c8d7e6f10",
    )
    for text in malformed:
        with pytest.raises(sa.exc.StatementError) as raised, engine.begin() as conn:
            conn.execute(table.insert(), {"id": text})
        assert isinstance(raised.value.orig, InvalidGuidError)
        with engine.connect() as conn:
            assert conn.execute(sa.select(sa.func.count()).select_from(table)).scalar() == 0
            where = sa.select(table.c.id).where(table.c.id == text)
            with pytest.raises(sa.exc.StatementError):
                conn.execute(where)
    with engine.begin() as conn:
        conn.execute(table.insert(), {"id": "{" + TEXT.upper() + "}"})
        assert conn.execute(sa.select(table.c.id)).scalar_one() == GUID
    engine.dispose()


@pytest.mark.parametrize("text", [TEXT.upper(), "{" + TEXT + "}", "urn:uuid:" + GUID.hex])
def test_stored_text_in_a_documented_form_is_read(text: str) -> None:
    assert CombGuid().process_result_value(text, sqlite.dialect()) == GUID


@pytest.mark.parametrize("text", ["+190b6a8-6c3e-7d4a-9f1e-2b5c8d7e6f10", " " + TEXT, TEXT + "\n"])
def test_stored_text_that_is_malformed_is_no_guid(text: str) -> None:
    # uuid.UUID read these as 0190b6a8-...: a value written past the type looked fine
    with pytest.raises(InvalidGuidError, match="not a GUID"):
        CombGuid().process_result_value(text, sqlite.dialect())


def test_uuidv47_refuses_malformed_text() -> None:
    mapping = UuidV47(bytes(range(16)))
    public = mapping.encode(GUID)
    assert mapping.decode(str(public).upper()) == GUID
    assert mapping.decode("{" + public.hex + "}") == GUID
    assert mapping.encode("urn:uuid:" + TEXT) == public  # type: ignore[arg-type]
    for bad in (" " + str(public), "+" + str(public)[1:], str(public)[:-1] + " "):
        with pytest.raises(InvalidOpaqueIdError, match=r"takes a uuid\.UUID or its text form"):
            mapping.decode(bad)
    with pytest.raises(InvalidOpaqueIdError, match=r"takes a uuid\.UUID or its text form"):
        mapping.encode(TEXT[:-1] + "_")  # type: ignore[arg-type]
