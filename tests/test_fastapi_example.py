"""examples/fastapi_app.py under concurrent requests, driven in-process through httpx.

The app's lifespan runs (AsyncWorkerLease claimed, the Snowflake bound, the
lease released at the end); 40 invoices (5 more that repeat a reference and
are refused) and 50 orders are posted at once through
``httpx.AsyncClient(transport=httpx.ASGITransport(app))``. Keys are unique,
invoice numbers gapless (a refused request gives its number back), every
record reads back as created, and the event loop is never blocked: in
asyncio's debug mode no step of any task holds it for 100 ms. (A ticker task
measures something else here: 90 requests whose client and server share one
loop keep it busy with CPU work, and a ticker waits its turn behind them for
a few hundred ms on a loaded 2-core machine, blocking call or not.)
tests/test_examples.py also runs the script's own demo on every engine.

As users run it: ``uvicorn fastapi_app:app --workers 2`` on a fresh database of
the shared PostgreSQL (and MariaDB) server, reached over TCP on a free
loopback port. Both workers start at once; the schema is created once (one
worker holds a database lock around it: concurrent ``create_all`` broke
PostgreSQL's catalog before), concurrent requests get distinct ids and
gapless invoice numbers across the two processes, and a graceful stop
releases both worker leases. The server's process group is killed at the end
and the database dropped, even after a failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib.util
import logging
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import sqlalchemy as sa

from sqlalchemy_seqkeys import workers_table
from tests._loopticker import BLOCKED_S
from tests.conftest import AsyncDatabase, _async_database, _Engines

pytestmark = pytest.mark.backend

EXAMPLE = Path(__file__).parent.parent / "examples" / "fastapi_app.py"
#: a step of a task that holds the loop this long is a blocking call (a gross bound)
BLOCKED = BLOCKED_S
#: while the test sets up (httpx reads its CA bundle, tables are created): not measured
SETUP = 60.0


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"fastapi_app_{uuid.uuid4().hex}", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic and the ORM resolve annotations through it
    spec.loader.exec_module(module)
    return module


@pytest.fixture(params=["postgresql+asyncpg", "mysql+asyncmy"])
def db(
    request: pytest.FixtureRequest, engines: Any, caplog: pytest.LogCaptureFixture
) -> Iterator[AsyncDatabase]:
    pytest.importorskip("fastapi", reason="the example needs fastapi (a test dependency)")
    pytest.importorskip("httpx", reason="the example's test needs httpx (a test dependency)")
    database = _async_database(request.param, engines)
    with caplog.at_level(logging.WARNING, logger="asyncio"):
        yield database
    records = [*caplog.get_records("setup"), *caplog.get_records("call"), *caplog.records]
    complaints = [r.getMessage() for r in records if r.name == "asyncio"]
    assert not complaints, complaints


def test_concurrent_requests_get_unique_keys_and_gapless_invoices(db: AsyncDatabase) -> None:
    import httpx

    example = load_example()
    url = db.url.render_as_string(hide_password=False)
    references = [f"INV-{i}" for i in range(40)]
    repeated = references[::8]  # posted twice: one of each pair is refused
    posts = [*references, *repeated]
    random.Random(7).shuffle(posts)

    async def main() -> dict[str, Any]:
        asyncio.get_running_loop().slow_callback_duration = SETUP
        await example.reset(url)
        app = example.create_app(url)
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as http,
        ):
            worker_id = (await http.get("/health")).json()["worker_id"]
            # first requests build what later ones reuse (mappers, compiled SQL, schemas):
            # one-off CPU work on the loop, not a blocking call; out of the measurement
            warm = [
                await http.post("/invoices", json={"reference": "WARM-UP", "customer": "c"}),
                await http.post("/orders", json={"item": "warm-up"}),
            ]
            # asyncio's debug mode logs every step of a task that holds the loop
            # longer than this (a blocking call); the fixture fails on any such log
            # (the cyclic garbage collector's pauses are not the code's: off meanwhile)
            loop = asyncio.get_running_loop()
            loop.slow_callback_duration = BLOCKED
            gc.disable()
            try:
                answers = await asyncio.gather(
                    *(
                        http.post("/invoices", json={"reference": r, "customer": "c"})
                        for r in posts
                    ),
                    *(http.post("/orders", json={"item": f"item {i}"}) for i in range(50)),
                )
            finally:
                gc.enable()
                loop.slow_callback_duration = SETUP
            invoice_answers, order_answers = answers[: len(posts)], answers[len(posts) :]
            created = [a.json() for a in [warm[0], *invoice_answers] if a.status_code == 201]
            read_back = [(await http.get(f"/invoices/{i['id']}")).json() for i in created]
            missing = await http.get("/invoices/999999")
            orders = (await http.get("/orders")).json()
        return {
            "worker_id": worker_id,
            "invoice_statuses": sorted(a.status_code for a in invoice_answers),
            "created": created,
            "read_back": read_back,
            "missing": missing.status_code,
            "order_statuses": {a.status_code for a in order_answers},
            "posted_orders": [a.json() for a in [warm[1], *order_answers]],
            "orders": orders,
        }

    out = asyncio.run(main(), debug=True)
    assert out["invoice_statuses"] == [201] * 40 + [409] * len(repeated)
    numbers = sorted(i["id"] for i in out["created"])
    assert numbers == list(range(1000, 1041))  # gapless: refused requests gave theirs back
    assert sorted(i["reference"] for i in out["created"]) == sorted([*references, "WARM-UP"])
    assert out["read_back"] == out["created"]
    assert out["missing"] == 404

    assert out["order_statuses"] == {201}
    orders = out["orders"]
    assert len({o["id"] for o in orders}) == len(orders) == 51
    assert len({o["public_id"] for o in orders}) == 51
    assert all(isinstance(o["public_id"], str) for o in orders)  # SnowflakeId: safe in JavaScript
    assert sorted(orders, key=lambda o: o["id"]) == sorted(
        out["posted_orders"], key=lambda o: o["id"]
    )
    decode = example.public_ids.decode
    assert {decode(int(o["public_id"])).worker_id for o in orders} == {out["worker_id"]}

    # the lifespan released the worker id at shutdown, keeping its high-water mark
    t = workers_table(sa.MetaData())
    with db.sync.connect() as conn:
        lease_row = conn.execute(sa.select(t).where(t.c.worker_id == out["worker_id"])).one()
    assert lease_row.expires_at == 0
    assert lease_row.high_water_ms >= max(
        int(decode(int(o["public_id"])).timestamp.timestamp() * 1000) for o in orders
    )


def test_minting_before_the_lifespan_says_how_to_bind() -> None:
    pytest.importorskip("fastapi", reason="the example needs fastapi (a test dependency)")
    from sqlalchemy_seqkeys import NoWorkerIdError

    example = load_example()
    with pytest.raises(NoWorkerIdError, match=r"ids\.bind\(lease\)"):
        example.public_ids()


#: the sync engine of the suite -> the async driver the served example uses
SERVED_DRIVERS = {"postgresql": "postgresql+asyncpg", "mysql": "mysql+asyncmy"}
#: how long two uvicorn workers may take to start on a loaded machine
STARTUP_S = 90.0


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Server:
    """``uvicorn fastapi_app:app --workers 2`` in a process group of its own, log collected."""

    def __init__(self, url: str, port: int) -> None:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
        env["SEQKEYS_DATABASE_URL"] = url
        self.port = port
        self.process = subprocess.Popen(
            [
                *(sys.executable, "-m", "uvicorn", "fastapi_app:app", "--workers", "2"),
                *("--host", "127.0.0.1", "--port", str(port)),
            ],
            cwd=EXAMPLE.parent,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # its workers share its group: one kill stops them all
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip())

    @property
    def log(self) -> str:
        return "\n".join(self.lines)

    def wait_started(self) -> None:
        deadline = time.monotonic() + STARTUP_S
        while self.log.count("Application startup complete.") < 2:
            failed = "Application startup failed" in self.log or "Traceback" in self.log
            if failed or self.process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"uvicorn did not start both workers:\n{self.log}")
            time.sleep(0.1)

    def stop(self) -> None:
        """SIGINT (a graceful shutdown: lifespans end), then SIGKILL to the whole group."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=30)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)  # stragglers of the group
        self.process.wait(timeout=30)
        self._reader.join(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()

    def group_gone(self, timeout: float = 15.0) -> bool:
        """No process of the server's group is left (killed workers are reaped by init)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                os.killpg(self.process.pid, 0)
            except ProcessLookupError:
                return True
            time.sleep(0.1)
        return False


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["postgresql", "mysql"])
def test_two_uvicorn_workers_on_a_fresh_database(backend: str, engines: _Engines) -> None:
    pytest.importorskip("uvicorn", reason="the test serves the example with uvicorn (test extra)")
    import httpx

    engines.get(backend)  # reachable (or skipped / failed as every backend test)
    references = [f"INV-{i}" for i in range(30)]
    repeated = references[::6]
    posts = [*references, *repeated]
    random.Random(25).shuffle(posts)

    async def load(port: int) -> tuple[list[httpx.Response], list[httpx.Response], Any]:
        limits = httpx.Limits(max_connections=40)
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", limits=limits, timeout=60
        ) as http:
            answers = await asyncio.gather(
                *(http.post("/invoices", json={"reference": r, "customer": "c"}) for r in posts),
                *(http.post("/orders", json={"item": f"item {i}"}) for i in range(60)),
            )
            orders = (await http.get("/orders")).json()
            workers = {(await http.get("/health")).json()["worker_id"] for _ in range(20)}
        return answers[: len(posts)], answers[len(posts) :], (orders, workers)

    with engines.fresh_database(backend, "uvicorn") as sync_url:
        url = sa.make_url(sync_url).set(drivername=SERVED_DRIVERS[backend])
        server = _Server(url.render_as_string(hide_password=False), _free_port())
        try:
            server.wait_started()
            invoices, posted_orders, (orders, workers) = asyncio.run(load(server.port))
        finally:
            server.stop()
        assert server.group_gone(), "a process of the server's group outlived it"

        log = server.log
        assert "Traceback" not in log, log
        assert log.count("Application startup complete.") == 2, log
        statuses = sorted(a.status_code for a in invoices)
        assert statuses == [201] * len(references) + [409] * len(repeated), log
        numbers = sorted(a.json()["id"] for a in invoices if a.status_code == 201)
        assert numbers == list(range(1000, 1000 + len(references)))  # gapless across workers
        assert {a.status_code for a in posted_orders} == {201}
        assert len({o["id"] for o in orders}) == len(orders) == 60
        assert len({o["public_id"] for o in orders}) == 60
        assert sorted(o["id"] for o in orders) == sorted(a.json()["id"] for a in posted_orders)

        # each worker leased its own worker id, and gave it back when it stopped
        t = workers_table(sa.MetaData())
        check = sa.create_engine(sync_url, poolclass=sa.pool.NullPool)
        try:
            with check.connect() as conn:
                leases = conn.execute(sa.select(t.c.worker_id, t.c.expires_at)).all()
        finally:
            check.dispose()
        assert len(leases) == 2, leases
        assert workers <= {row.worker_id for row in leases}
        assert {row.expires_at for row in leases} == {0}, leases
