"""A FastAPI service on an AsyncEngine: invoice numbers, order ids and snowflake public ids.

    pip install 'sqlalchemy-seqkeys[asyncio,pydantic]' fastapi uvicorn httpx
    export SEQKEYS_DATABASE_URL=postgresql+asyncpg://postgres@localhost/app
    uvicorn fastapi_app:app --workers 2                     # from examples/
    python examples/fastapi_app.py                          # a demo on SQLite (aiosqlite)
    python examples/fastapi_app.py postgresql://postgres@127.0.0.1/test

Invoices take gapless numbers in the request's own transaction
(``in_transaction``: a request that rolls back gives its number back); orders
take ids from blocks that a task on the event loop reserves ahead
(``async_batch``), and a public id from a ``Snowflake`` declared with the
models and bound in the lifespan to a worker id leased from the database
(``AsyncWorkerLease``: renewed by a task, released at shutdown). Nothing here
blocks the event loop. The demo (``python examples/fastapi_app.py [URL]``)
starts the app in-process and sends it concurrent requests through
``httpx.ASGITransport``; a sync URL is run with its engine's async driver.

Every uvicorn worker runs the lifespan, so with ``--workers 2`` two processes
create the schema at once on a fresh database: one would fail (PostgreSQL:
``duplicate key value violates unique constraint "pg_type_typname_nsp_index"``;
MariaDB: ``Table ... already exists``). ``create_schema_once`` takes a database
lock around it (PostgreSQL's advisory lock, MariaDB's ``GET_LOCK``): the first
worker creates, the others wait and find it done. With Alembic, run the
migrations before starting the workers instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import zlib
from collections.abc import AsyncIterator
from typing import Annotated

import sqlalchemy as sa
from fastapi import Depends, FastAPI, HTTPException, Request
from pydantic import BaseModel
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from sqlalchemy_seqkeys import Snowflake, TableSequence, sequences_table, workers_table
from sqlalchemy_seqkeys.pydantic import SnowflakeId
from sqlalchemy_seqkeys.workers import AsyncWorkerLease

# -- models: declared before the application has a database ---------------------------


class Base(DeclarativeBase):
    pass


sequences_table(Base.metadata)
workers_table(Base.metadata)
invoice_no = TableSequence("fastapi_invoice_no", mode="in_transaction", start=1000)
order_id = TableSequence("fastapi_order_id", mode="async_batch", batch_size=50, low_watermark=10)
public_ids = Snowflake()  # bound to a leased worker id in the lifespan


class Invoice(Base):
    __tablename__ = "fastapi_invoices"
    id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, default=invoice_no)
    reference: Mapped[str] = mapped_column(sa.String(40), unique=True)  # idempotency key
    customer: Mapped[str] = mapped_column(sa.String(50))


class Order(Base):
    __tablename__ = "fastapi_orders"
    id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, default=order_id)
    public_id: Mapped[int] = mapped_column(sa.BigInteger, unique=True, default=public_ids)
    item: Mapped[str] = mapped_column(sa.String(50))


# -- the API ------------------------------------------------------------------------


class NewInvoice(BaseModel):
    reference: str
    customer: str


class InvoiceOut(BaseModel):
    id: int
    reference: str
    customer: str


class NewOrder(BaseModel):
    item: str


class OrderOut(BaseModel):
    id: int
    public_id: SnowflakeId  # an int here, a string in JSON: 63 bits pass what JavaScript holds
    item: str


def _order_out(order: Order) -> OrderOut:
    return OrderOut(id=order.id, public_id=order.public_id, item=order.item)


async def session(request: Request) -> AsyncIterator[AsyncSession]:
    async with request.app.state.sessions() as s:
        yield s


Session = Annotated[AsyncSession, Depends(session)]  # a request's session


#: the lock the workers take around creating the schema (a name, and its 63-bit number)
SCHEMA_LOCK = "seqkeys_fastapi_example_schema"
SCHEMA_LOCK_KEY = zlib.crc32(SCHEMA_LOCK.encode())
#: how long a worker waits for another one that is creating the schema
SCHEMA_LOCK_TIMEOUT_S = 60


async def create_schema_once(engine: AsyncEngine) -> None:
    """Create the missing tables and sequence rows, one process at a time.

    PostgreSQL: a transaction-scoped advisory lock (DDL is transactional there:
    the lock and the tables commit together). MariaDB/MySQL: ``GET_LOCK``, held
    by the connection until released (DDL commits on its own). SQLite has
    neither: serve it with one worker.
    """
    async with engine.connect() as conn:
        backend = conn.dialect.name
        if backend == "postgresql":
            await conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": SCHEMA_LOCK_KEY})
        elif backend in ("mysql", "mariadb"):
            lock = {"name": SCHEMA_LOCK, "timeout": SCHEMA_LOCK_TIMEOUT_S}
            if await conn.scalar(sa.text("SELECT GET_LOCK(:name, :timeout)"), lock) != 1:
                raise RuntimeError(f"another worker held {SCHEMA_LOCK!r} for too long")
            await conn.commit()
        try:
            await conn.run_sync(Base.metadata.create_all)
            await invoice_no.create_async(conn, checkfirst=True)
            await order_id.create_async(conn, checkfirst=True)
            await conn.commit()
        finally:
            if backend in ("mysql", "mariadb"):
                await conn.rollback()
                await conn.execute(sa.text("SELECT RELEASE_LOCK(:name)"), {"name": SCHEMA_LOCK})
                await conn.commit()


def create_app(url: str, *, create_schema: bool = True) -> FastAPI:
    """The service on database ``url`` (an async driver's URL). No I/O until it starts.

    ``create_schema`` creates missing tables and sequences at startup, one
    worker at a time (with Alembic, migrations do that: pass False).
    """

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        engine = create_async_engine(url)
        try:
            if create_schema:
                await create_schema_once(engine)  # with --workers N: once, not N times at once
            async with AsyncWorkerLease(engine, ttl=30) as lease:
                public_ids.bind(lease)  # minting before this raises NoWorkerIdError
                app.state.sessions = async_sessionmaker(engine, expire_on_commit=False)
                app.state.worker_id = lease.worker_id
                yield
        finally:
            await engine.dispose()

    app = FastAPI(title="seqkeys example", lifespan=lifespan)

    @app.post("/invoices", status_code=201)
    async def create_invoice(body: NewInvoice, s: Session) -> InvoiceOut:
        invoice = Invoice(reference=body.reference, customer=body.customer)
        s.add(invoice)
        try:
            await s.commit()
        except sa.exc.IntegrityError:
            # rolled back: the invoice number goes back to the sequence
            raise HTTPException(409, f"invoice {body.reference!r} exists") from None
        return InvoiceOut(id=invoice.id, reference=invoice.reference, customer=invoice.customer)

    @app.get("/invoices/{number}")
    async def read_invoice(number: int, s: Session) -> InvoiceOut:
        invoice = await s.get(Invoice, number)
        if invoice is None:
            raise HTTPException(404, f"no invoice {number}")
        return InvoiceOut(id=invoice.id, reference=invoice.reference, customer=invoice.customer)

    @app.post("/orders", status_code=201)
    async def create_order(body: NewOrder, s: Session) -> OrderOut:
        order = Order(item=body.item)
        s.add(order)
        await s.commit()
        return _order_out(order)

    @app.get("/orders")
    async def list_orders(s: Session) -> list[OrderOut]:
        orders = await s.scalars(sa.select(Order).order_by(Order.id))
        return [_order_out(order) for order in orders]

    @app.get("/health")
    async def health(request: Request) -> dict[str, int]:
        return {"worker_id": request.app.state.worker_id}

    return app


app = create_app(os.environ.get("SEQKEYS_DATABASE_URL", "sqlite+aiosqlite:///fastapi_app.db"))


# -- the demo: the app in-process, concurrent requests ----------------------------------

#: a sync URL's backend -> the async driver the demo runs it with
ASYNC_DRIVERS = {
    "sqlite": "sqlite+aiosqlite",
    "postgresql": "postgresql+asyncpg",
    "mysql": "mysql+asyncmy",
    "mariadb": "mysql+asyncmy",
}


def async_url(url: str) -> str | None:
    """``url`` with its backend's async driver (None where SQLAlchemy has none)."""
    parsed = sa.make_url(url)
    if parsed.get_dialect().is_async:
        return url
    driver = ASYNC_DRIVERS.get(parsed.get_backend_name())
    if driver is None:
        return None
    return parsed.set(drivername=driver).render_as_string(hide_password=False)


async def reset(url: str) -> None:
    """Start the demo from empty tables and sequences."""
    engine = create_async_engine(url)
    try:
        tables = [Invoice.__table__, Order.__table__]
        async with engine.begin() as conn:
            await conn.run_sync(lambda c: Base.metadata.drop_all(c, tables=tables))
        async with engine.begin() as conn:
            await conn.run_sync(Base.metadata.create_all)
        for sequence in (invoice_no, order_id):
            await sequence.drop_async(engine, checkfirst=True)
    finally:
        await engine.dispose()


async def demo(url: str) -> None:
    import httpx

    await reset(url)
    service = create_app(url)
    async with (
        service.router.lifespan_context(service),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=service), base_url="http://x") as http,
    ):
        print("worker id:", (await http.get("/health")).json()["worker_id"])
        references = ["INV-1", "INV-2", "INV-3", "INV-2", "INV-4"]  # one duplicate
        answers = await asyncio.gather(
            *(http.post("/invoices", json={"reference": r, "customer": "ada"}) for r in references),
            *(http.post("/orders", json={"item": f"item {i}"}) for i in range(8)),
        )
        created = sorted(a.json()["id"] for a in answers[: len(references)] if a.status_code == 201)
        print("invoice numbers:", created, f"({len(references) - len(created)} refused)")
        for order in (await http.get("/orders")).json():
            print(f"order {order['id']}: public id {order['public_id']}, {order['item']}")


def main(url: str) -> int:
    target = async_url(url)
    if target is None:
        print(
            f"{sa.make_url(url).get_backend_name()} has no asyncio driver for SQLAlchemy, "
            "which this FastAPI example needs; examples/table_sequences.py shows the same "
            "keys with a sync engine"
        )
        return 0
    asyncio.run(demo(target))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "sqlite+aiosqlite:///fastapi_app.db"))
