"""The ``tenants`` fixture of the sequence tests under a ``schema_translate_map``: two
PostgreSQL schemas or two MariaDB databases of this run. A test module takes it by
importing it (``from tests.backend._tenants import two_tenants``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from tests._helpers import tenant_engines, tenant_schemas

#: the engine, the two schemas (MariaDB: databases), the engine under a
#: schema_translate_map to each
Tenants = tuple[Engine, list[str], list[Engine]]


@pytest.fixture(name="tenants", params=["postgresql", "mysql"])
def two_tenants(request: pytest.FixtureRequest, engines: Any) -> Iterator[Tenants]:
    """An engine and two schemas (MariaDB: databases) of this run, dropped afterwards."""
    engine: Engine = engines.get(request.param)
    if request.param == "mysql":
        with (
            engines.fresh_database("mysql", "tenant_a") as a,
            engines.fresh_database("mysql", "tenant_b") as b,
        ):
            databases = [str(sa.make_url(a).database), str(sa.make_url(b).database)]
            yield engine, databases, tenant_engines(engine, databases)
        return
    schemas = ["seqkeys_tenants_a", "seqkeys_tenants_b"]
    with tenant_schemas(engine, *schemas) as translated:
        yield engine, schemas, translated
