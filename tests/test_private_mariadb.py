"""The suite's private MariaDB server (tests/_servers.py) starts even when its port is taken."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from . import _procs, _servers


def test_a_port_taken_before_the_server_binds_it_is_replaced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Another process binds the picked port between the pick and mariadbd's bind.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = int(taken.getsockname()[1])
        free = _procs.free_port
        picks: Iterator[int] = iter([busy])
        monkeypatch.setattr(_servers, "free_port", lambda: next(picks, 0) or free())
        try:
            with _servers.private_mariadb() as url:
                port = sa.make_url(url).port
                engine = sa.create_engine(url)
                try:
                    with engine.connect() as conn:
                        assert conn.scalar(sa.text("SELECT 1")) == 1
                finally:
                    engine.dispose()
        except _servers.MariaDBUnavailableError as exc:
            _servers.unavailable(exc)
    assert port not in (None, busy)
