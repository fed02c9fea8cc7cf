"""OpaqueBigint's docstring example reads the public id from text strictly.

Before, it taught ``public.decode(int(request_id))``; ``int()`` also reads
"+n", " n ", "2_6" and other scripts' digits, so many spellings of a public id
named one row. The example now checks ``request_id.isascii() and
request_id.isdigit()`` first; this test runs that check on such spellings.
"""

from __future__ import annotations

import re

import pytest

from sqlalchemy_seqkeys import OpaqueBigint


def _example() -> str:
    doc = OpaqueBigint.__doc__ or ""
    return doc[doc.index("Example::") :]


def test_the_example_checks_the_text_before_int() -> None:
    example = _example()
    assert "request_id.isascii() and request_id.isdigit()" in example
    check = example.index("request_id.isdigit()")
    # every int(request_id) comes after the check
    assert all(m.start() > check for m in re.finditer(r"int\(request_id\)", example))


@pytest.mark.parametrize(
    "spelling",
    ["+42", " 42", "42\n", "4_2", "\uff14\uff12", "\u0664\u0662", "", "-42"],
)
def test_the_check_refuses_what_int_reads_besides_digits(spelling: str) -> None:
    assert not (spelling.isascii() and spelling.isdigit())


def test_the_check_takes_the_ids_encode_writes() -> None:
    public = OpaqueBigint(bytes(32))
    text = str(public.encode(1234567890123456789))
    assert text.isascii()
    assert text.isdigit()
    assert public.decode(int(text)) == 1234567890123456789
