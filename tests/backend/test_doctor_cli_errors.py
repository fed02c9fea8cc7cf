"""seqkeys doctor refuses a --url it cannot use with exit 2 and a message, no traceback.

A URL whose port is no number (ValueError from the URL parser), and the URL of
an async driver (doctor runs outside an event loop: MissingGreenlet).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sqlalchemy_seqkeys.cli import main
from tests.backend.test_doctor import MODELS_SOURCE, write_models

pytestmark = pytest.mark.backend


@pytest.fixture
def models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    return write_models(tmp_path, monkeypatch, MODELS_SOURCE)


def test_a_port_that_is_no_number(models: str, capsys: pytest.CaptureFixture[str]) -> None:
    url = "mysql+pymysql://root@127.0.0.1:abc/x"
    assert main(["doctor", "--url", url, "--models", models]) == 2
    err = capsys.readouterr().err
    assert err.startswith("seqkeys doctor: cannot use --url:"), err
    assert "abc" in err, err
    assert "check the port" in err, err


@pytest.mark.parametrize(
    "url",
    [
        "sqlite+aiosqlite:///{db}",
        "postgresql+asyncpg://postgres@127.0.0.1:5432/postgres",
        "mysql+aiomysql://root@127.0.0.1:3306/mysql",
    ],
)
def test_an_async_driver(
    url: str, models: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "async.db"
    db.touch()
    url = url.format(db=db)
    pytest.importorskip(url.partition("+")[2].partition(":")[0])
    assert main(["doctor", "--url", url, "--models", models]) == 2
    err = capsys.readouterr().err
    assert "async driver" in err, err
    assert "sync driver" in err, err
    assert "Traceback" not in err, err
