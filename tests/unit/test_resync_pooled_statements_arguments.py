"""resync_pooled_statements checks the sequence's schema, and the tenant's schema a
connection's schema_translate_map puts in its place, before it builds a statement:
a SeqKeysError naming the argument, never a raw error or SQL naming another sequence."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy.dialects import postgresql

from sqlalchemy_seqkeys import InvalidSequenceError
from sqlalchemy_seqkeys.pooled import resync_pooled_statements


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"sequence_schema": 5}, "sequence_schema"),
        ({"sequence_schema": "\ud800"}, "sequence_schema"),
        ({"sequence_schema": ""}, "sequence_schema"),
        ({"sequence_schema": "a\x00b"}, "sequence_schema"),
        ({"sequence_schema": "t", "schema_translate_map": {"t": 5}}, "schema_translate_map"),
        ({"sequence_schema": "t", "schema_translate_map": {"t": ""}}, "schema_translate_map"),
        ({"sequence_schema": "t", "schema_translate_map": {"t": "x" * 64}}, "schema_translate_map"),
    ],
)
def test_a_bad_sequence_schema_is_refused_by_name(kwargs: dict[str, Any], named: str) -> None:
    with pytest.raises(InvalidSequenceError, match=named):
        resync_pooled_statements(postgresql.dialect(), "order_id", "orders", "id", **kwargs)


def test_a_tenant_schema_is_the_value_the_statement_names() -> None:
    dialect = postgresql.dialect()
    _, move = resync_pooled_statements(
        dialect,
        "order_id",
        "orders",
        "id",
        sequence_schema="t",
        schema_translate_map={"t": "tenant_7"},
    )
    assert move.compile(dialect=dialect).params["param_1"] == "tenant_7.order_id"
