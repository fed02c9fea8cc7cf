"""TypeID against the TypeID specification's own test cases, and the value class's promises.

The vectors are copied, as data, from the specification's repository:
jetify-com/typeid, ``spec/valid.yml`` (last updated 2024-04-10) and
``spec/invalid.yml`` (last updated 2024-05-18), both for version 0.3.0 of the
specification, at commit be8ff0daf5dc1f6d40c62a03cfc89945263a69af.
"""

from __future__ import annotations

import pickle
import uuid

import pytest

from sqlalchemy_seqkeys import (
    InvalidTypeIDError,
    SeqKeysError,
    TypeID,
    TypeIDType,
    new_typeid,
    typeid_default,
)

# (name, typeid, prefix, uuid): jetify-com/typeid spec/valid.yml
VALID = [
    ("nil", "00000000000000000000000000", "", "00000000-0000-0000-0000-000000000000"),
    ("one", "00000000000000000000000001", "", "00000000-0000-0000-0000-000000000001"),
    ("ten", "0000000000000000000000000a", "", "00000000-0000-0000-0000-00000000000a"),
    ("sixteen", "0000000000000000000000000g", "", "00000000-0000-0000-0000-000000000010"),
    ("thirty-two", "00000000000000000000000010", "", "00000000-0000-0000-0000-000000000020"),
    ("max-valid", "7zzzzzzzzzzzzzzzzzzzzzzzzz", "", "ffffffff-ffff-ffff-ffff-ffffffffffff"),
    (
        "valid-alphabet",
        "prefix_0123456789abcdefghjkmnpqrs",
        "prefix",
        "0110c853-1d09-52d8-d73e-1194e95b5f19",
    ),
    (
        "valid-uuidv7",
        "prefix_01h455vb4pex5vsknk084sn02q",
        "prefix",
        "01890a5d-ac96-774b-bcce-b302099a8057",
    ),
    (
        "prefix-underscore",
        "pre_fix_00000000000000000000000000",
        "pre_fix",
        "00000000-0000-0000-0000-000000000000",
    ),
]

# (name, typeid): jetify-com/typeid spec/invalid.yml
INVALID = [
    ("prefix-uppercase", "PREFIX_00000000000000000000000000"),
    ("prefix-numeric", "12345_00000000000000000000000000"),
    ("prefix-period", "pre.fix_00000000000000000000000000"),
    ("prefix-non-ascii", "préfix_00000000000000000000000000"),
    ("prefix-spaces", "  prefix_00000000000000000000000000"),
    (
        "prefix-64-chars",
        "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl_00000000000000000000000000",
    ),
    ("separator-empty-prefix", "_00000000000000000000000000"),
    ("separator-empty", "_"),
    ("suffix-short", "prefix_1234567890123456789012345"),
    ("suffix-long", "prefix_123456789012345678901234567"),
    ("suffix-spaces", "prefix_1234567890123456789012345 "),
    ("suffix-uppercase", "prefix_0123456789ABCDEFGHJKMNPQRS"),
    ("suffix-hyphens", "prefix_123456789-123456789-123456"),
    ("suffix-wrong-alphabet", "prefix_ooooooiiiiiiuuuuuuulllllll"),
    ("suffix-ambiguous-crockford", "prefix_i23456789ol23456789oi23456"),
    ("suffix-hyphens-crockford", "prefix_123456789-0123456789-0123456"),
    ("suffix-overflow", "prefix_8zzzzzzzzzzzzzzzzzzzzzzzzz"),
    ("prefix-underscore-start", "_prefix_00000000000000000000000000"),
    ("prefix-underscore-end", "prefix__00000000000000000000000000"),
    ("empty", ""),
    ("prefix-empty", "prefix_"),
]


@pytest.mark.parametrize(("name", "text", "prefix", "uuid_text"), VALID, ids=[v[0] for v in VALID])
def test_the_specifications_valid_cases_decode_and_encode(
    name: str, text: str, prefix: str, uuid_text: str
) -> None:
    parsed = TypeID.parse(text)
    assert (parsed.prefix, str(parsed.uuid)) == (prefix, uuid_text)
    built = TypeID(prefix, uuid.UUID(uuid_text))
    assert str(built) == text
    assert built == parsed
    assert hash(built) == hash(parsed)
    assert TypeID.parse(text, prefix=prefix) == built


@pytest.mark.parametrize(("name", "text"), INVALID, ids=[v[0] for v in INVALID])
def test_the_specifications_invalid_cases_are_refused(name: str, text: str) -> None:
    with pytest.raises(InvalidTypeIDError):
        TypeID.parse(text)


def test_the_prefix_rules_of_the_specification_apply_to_new_ids() -> None:
    assert TypeID("a" * 63, uuid.UUID(int=0)).prefix == "a" * 63
    for bad in ("a" * 64, "_a", "a_", "A", "a1", "a-b", "é"):
        with pytest.raises(InvalidTypeIDError):
            new_typeid(bad)
        with pytest.raises(InvalidTypeIDError):
            typeid_default(bad)


def test_a_random_id_survives_decode_and_encode() -> None:
    # the property the specification asks implementations to test
    for _ in range(2000):
        tid = TypeID("user", uuid.uuid4())
        assert TypeID.parse(str(tid)) == tid
        assert str(TypeID.parse(str(tid))) == str(tid)


def test_new_ids_are_uuidv7_and_sort_by_creation_as_objects_and_as_text() -> None:
    minted = [new_typeid("order") for _ in range(500)]
    assert all(t.uuid.version == 7 and t.prefix == "order" for t in minted)
    assert minted == sorted(minted)
    assert [str(t) for t in minted] == sorted(str(t) for t in minted)
    assert len(set(minted)) == 500
    mint = typeid_default("order")
    a, b = mint(), mint()
    assert a < b
    assert a.prefix == "order"


def test_the_expected_prefix_is_checked() -> None:
    with pytest.raises(InvalidTypeIDError, match="of type 'user', not 'order'"):
        TypeID.parse("user_00000000000000000000000000", prefix="order")
    with pytest.raises(InvalidTypeIDError):
        TypeID.parse("00000000000000000000000000", prefix="order")


@pytest.mark.parametrize("bad", [None, 12, b"user_00000000000000000000000000", uuid.UUID(int=1)])
def test_parse_refuses_what_is_not_text(bad: object) -> None:
    with pytest.raises(SeqKeysError):
        TypeID.parse(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [None, "00000000-0000-0000-0000-000000000000", 0, b"x" * 16])
def test_the_constructor_takes_a_uuid(bad: object) -> None:
    with pytest.raises(InvalidTypeIDError):
        TypeID("user", bad)  # type: ignore[arg-type]


def test_ids_are_immutable_values() -> None:
    tid = new_typeid("user")
    with pytest.raises(AttributeError):
        tid.prefix = "order"
    assert pickle.loads(pickle.dumps(tid)) == tid
    assert tid != str(tid)
    assert TypeID("a", tid.uuid) < TypeID("b", tid.uuid)
    assert repr(tid) == f"TypeID({str(tid)!r})"


# -- the column type, without a database: its arguments and its DDL on every dialect ---------


@pytest.mark.parametrize(
    ("dialect", "ddl"),
    [
        ("postgresql", "UUID"),
        ("mysql", "BINARY(16)"),
        ("sqlite", "BLOB"),
        ("mssql", "UNIQUEIDENTIFIER"),
        ("oracle", "RAW(16)"),
    ],
)
def test_the_column_is_16_bytes_on_every_dialect(dialect: str, ddl: str) -> None:
    import sqlalchemy as sa
    from sqlalchemy.dialects import registry

    engine_dialect = registry.load(dialect)()
    table = sa.Table("t", sa.MetaData(), sa.Column("id", TypeIDType("user"), primary_key=True))
    assert f"id {ddl} NOT NULL" in str(sa.schema.CreateTable(table).compile(dialect=engine_dialect))
    tid = TypeID.parse("user_01h455vb4pex5vsknk084sn02q")
    literal = str(
        sa.select(table)
        .where(table.c.id == tid)
        .compile(dialect=engine_dialect, compile_kwargs={"literal_binds": True})
    )
    assert "01890a5d" in literal.lower().replace("-", "")


def test_the_column_type_refuses_bad_arguments_and_values() -> None:
    from sqlalchemy.dialects import sqlite

    for bad in ("User", "a1", "", None, 5):
        if bad == "":
            assert TypeIDType(bad).prefix == ""  # no prefix is allowed by the specification
            continue
        with pytest.raises(InvalidTypeIDError):
            TypeIDType(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeIDError):
        TypeIDType("user", native_uuid="yes")  # type: ignore[arg-type]
    column = TypeIDType("user")
    dialect = sqlite.dialect()
    for bad_value in (new_typeid("order"), "order_01h455vb4pex5vsknk084sn02q", 5, b"x" * 16):
        with pytest.raises(InvalidTypeIDError):
            column.process_bind_param(bad_value, dialect)
    plain = uuid.uuid4()  # a bare UUID carries no type: the column gives it its own
    assert column.process_bind_param(plain, dialect) == plain.bytes
    assert column.process_result_value(plain.bytes, dialect) == TypeID("user", plain)
    with pytest.raises(SeqKeysError):
        column.process_result_value(b"\x01" * 3, dialect)
    assert (
        repr(TypeIDType("user", native_uuid=True)) == "TypeIDType(prefix='user', native_uuid=True)"
    )
