"""Each ``op.<name>(...)`` is a method written in its operation class, matching its fields."""

from __future__ import annotations

import inspect
from dataclasses import MISSING, fields

import pytest

from sqlalchemy_seqkeys.alembic import ops
from sqlalchemy_seqkeys.alembic import pooled_ops as pooled_ops
from sqlalchemy_seqkeys.alembic.ops import IMPLEMENTATIONS


@pytest.mark.parametrize("op_class", list(IMPLEMENTATIONS), ids=lambda c: c.op_name)
def test_the_op_method_takes_the_fields(op_class: type[ops.SeqKeysOp]) -> None:
    method = op_class.op_method().__func__
    parameters = list(inspect.signature(method).parameters.values())
    assert [p.name for p in parameters[:2]] == ["cls", "operations"]
    init_fields = [f for f in fields(op_class) if f.init]
    assert [p.name for p in parameters[2:]] == [f.name for f in init_fields]
    for parameter, f in zip(parameters[2:], init_fields, strict=True):
        expected = inspect.Parameter.empty if f.default is MISSING else f.default
        assert parameter.default == expected, f.name
        keyword_only = f.name in op_class.keyword_only
        assert (parameter.kind is inspect.Parameter.KEYWORD_ONLY) == keyword_only, f.name


@pytest.mark.parametrize(
    "op_class",
    [c for c in IMPLEMENTATIONS if c.__module__ == ops.__name__],
    ids=lambda c: c.op_name,
)
def test_the_op_method_is_ordinary_code(op_class: type[ops.SeqKeysOp]) -> None:
    # written in the class (no exec): what Alembic reads is the source a reader sees
    assert isinstance(op_class.__dict__.get(op_class.op_name), classmethod)
    assert inspect.getsourcefile(op_class.op_method().__func__) == ops.__file__


@pytest.mark.parametrize(
    "op_class",
    [ops.ResyncBitReversedSequenceOp, ops.ResyncBitReversedTableSequenceOp],
    ids=lambda c: c.op_name,
)
def test_the_bit_reversed_resyncs_take_a_keyword_only_skip_range(
    op_class: type[ops.SeqKeysOp],
) -> None:
    # the default's skip range, whose keys are no counter's; last, so positional calls stand
    parameters = inspect.signature(op_class.op_method().__func__).parameters
    skip_range = parameters["skip_range"]
    assert skip_range.kind is inspect.Parameter.KEYWORD_ONLY
    assert skip_range.default is None
    assert list(parameters)[-1] == "skip_range"
    assert list(parameters)[2:5] == ["name", "table_name", "column"]
