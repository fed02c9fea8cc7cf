"""A ``--url`` whose query arguments the driver refuses when it connects (PyMySQL: a TypeError;
psycopg: "invalid connection option", a ProgrammingError; PyMySQL on an unknown charset: an
AttributeError): ``doctor``, ``resync`` and ``demo``
exit 2 with "cannot use --url" on stderr, as for any URL they cannot use, never a traceback.
Through the real command line, on PostgreSQL and MariaDB.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.backend

MODELS = """\
import sqlalchemy as sa
from sqlalchemy_seqkeys import TableSequence, sequences_table

metadata = sa.MetaData()
sequences_table(metadata)
invoice_no = TableSequence("invoice_no", mode="batch", metadata=metadata)
sa.Table("invoices", metadata, sa.Column("id", sa.BigInteger, primary_key=True, default=invoice_no))
"""

COMMANDS = {
    "doctor": ["--models", "url_models:metadata"],
    "resync": ["--sequence", "invoice_no", "--table", "invoices", "--column", "id"],
    "demo": ["--rows", "1"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize(
    ("engine_name", "query", "why"),
    [
        ("mysql", "foo=bar", "unexpected keyword argument 'foo'"),
        ("postgresql", "foo=bar", 'invalid connection option "foo"'),
        # PyMySQL fails on a charset it does not know with an AttributeError of its own
        ("mysql", "charset=nope", "AttributeError"),
    ],
)
def test_a_query_argument_the_driver_refuses_exits_2(
    command: str, engine_name: str, query: str, why: str, engines: Any, tmp_path: Path
) -> None:
    engines.get(engine_name)
    url = f"{engines.url(engine_name)}?{query}"
    (tmp_path / "url_models.py").write_text(MODELS)
    result = subprocess.run(
        [sys.executable, "-m", "sqlalchemy_seqkeys", command, "--url", url, *COMMANDS[command]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    said = "seqkeys doctor: " if command == "doctor" else "seqkeys: "  # as each says the others
    assert result.stderr.startswith(
        f"{said}cannot use --url: the driver refuses its arguments: "
    ), result.stderr
    assert why in result.stderr, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
