"""Instagram's and Mastodon's own id functions, run on PostgreSQL, decoded by the presets.

Both references are PL/pgSQL: Instagram's ``next_id()`` from the Instagram Engineering post
"Sharding & IDs at Instagram", Mastodon's ``timestamp_id()`` from
``lib/mastodon/snowflake.rb`` (its ``define_timestamp_id``), with a fixed salt here where
Mastodon puts ``SecureRandom.hex(16)``. The ids they mint decode to the fields they were
made of; and what the presets' generators mint, their decoding SQL reads back the same.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sqlalchemy_seqkeys import Snowflake, SnowflakeLayout

pytestmark = pytest.mark.backend

# The post's function, for its shard 5 ("insta5"); only the names differ (no schema here).
# `%%` as in the post: the driver's escape of `%`.
INSTAGRAM_NEXT_ID = """
CREATE OR REPLACE FUNCTION seqkeys_insta5_next_id(OUT result bigint) AS $$
DECLARE
    our_epoch bigint := 1314220021721;
    seq_id bigint;
    now_millis bigint;
    shard_id int := 5;
BEGIN
    SELECT nextval('seqkeys_insta5_table_id_seq') %% 1024 INTO seq_id;
    SELECT FLOOR(EXTRACT(EPOCH FROM clock_timestamp()) * 1000) INTO now_millis;
    result := (now_millis - our_epoch) << 23;
    result := result | (shard_id << 10);
    result := result | (seq_id);
END;
$$ LANGUAGE PLPGSQL
"""

SALT = "0123456789abcdef0123456789abcdef"

# Mastodon's function as define_timestamp_id writes it, with SALT for the secret.
MASTODON_TIMESTAMP_ID = f"""
CREATE OR REPLACE FUNCTION seqkeys_timestamp_id(table_name text)
RETURNS bigint AS
$$
  DECLARE
    time_part bigint;
    sequence_base bigint;
    tail bigint;
  BEGIN
    time_part := (
      ((date_part('epoch', now()) * 1000))::bigint
      << 16);
    sequence_base := (
      'x' ||
      substr(
        md5(table_name || '{SALT}' || time_part::text),
        1, 4
      )
    )::bit(16)::bigint;
    tail := (
      (sequence_base + nextval(table_name || '_id_seq'))
      & 65535);
    RETURN time_part | tail;
  END
$$ LANGUAGE plpgsql VOLATILE
"""


@pytest.fixture
def pg(pg_engine: Engine) -> Iterator[Engine]:
    def drop(conn: sa.Connection) -> None:
        conn.exec_driver_sql("DROP FUNCTION IF EXISTS seqkeys_insta5_next_id()")
        conn.exec_driver_sql("DROP FUNCTION IF EXISTS seqkeys_timestamp_id(text)")
        conn.exec_driver_sql("DROP SEQUENCE IF EXISTS seqkeys_insta5_table_id_seq")
        conn.exec_driver_sql("DROP SEQUENCE IF EXISTS seqkeys_statuses_id_seq")

    with pg_engine.begin() as conn:
        drop(conn)
        conn.exec_driver_sql("CREATE SEQUENCE seqkeys_insta5_table_id_seq")
        conn.exec_driver_sql("CREATE SEQUENCE seqkeys_statuses_id_seq")
        conn.exec_driver_sql(INSTAGRAM_NEXT_ID)
        conn.exec_driver_sql(MASTODON_TIMESTAMP_ID)
    yield pg_engine
    with pg_engine.begin() as conn:
        drop(conn)


NOW_MS = "SELECT FLOOR(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint"


def test_the_instagram_preset_decodes_ids_of_instagram_s_next_id(pg: Engine) -> None:
    layout = SnowflakeLayout.instagram()
    with pg.connect() as conn:
        before = conn.exec_driver_sql(NOW_MS).scalar_one()
        ids = [
            conn.exec_driver_sql("SELECT seqkeys_insta5_next_id()").scalar_one()
            for _ in range(1100)
        ]
        after = conn.exec_driver_sql(NOW_MS).scalar_one()
    for n, value in enumerate(ids, start=1):  # the sequence starts at 1
        parts = layout.parts(value)
        assert before <= parts["ticks"] + 1314220021721 <= after
        assert (parts["shard"], parts["sequence"]) == (5, n % 1024)


def test_the_mastodon_preset_decodes_ids_of_mastodon_s_timestamp_id(pg: Engine) -> None:
    layout = SnowflakeLayout.mastodon()
    with pg.begin() as conn:  # one transaction: now() is its start, for every call
        start_ms = conn.exec_driver_sql(
            "SELECT ((date_part('epoch', now()) * 1000))::bigint"
        ).scalar_one()
        ids = [
            conn.exec_driver_sql("SELECT seqkeys_timestamp_id('seqkeys_statuses')").scalar_one()
            for _ in range(5)
        ]
    time_part = start_ms << 16
    base = int(hashlib.md5(f"seqkeys_statuses{SALT}{time_part}".encode()).hexdigest()[:4], 16)
    for n, value in enumerate(ids, start=1):
        assert layout.parts(value) == {"ticks": start_ms, "sequence": (base + n) & 0xFFFF}
        assert layout.decode(value).timestamp == layout.instant_of(start_ms)


def test_instagram_s_decoding_sql_reads_what_the_preset_mints(pg: Engine) -> None:
    layout = SnowflakeLayout.instagram()
    ids = Snowflake(worker_id=1341, layout=layout)
    minted = [ids() for _ in range(50)]
    with pg.connect() as conn:
        now_ms = conn.exec_driver_sql(NOW_MS).scalar_one()
        rows = conn.execute(
            sa.text(
                "SELECT (v >> 23) + 1314220021721, (v >> 10) & 8191, v & 1023 "
                "FROM unnest(CAST(:ids AS bigint[])) AS v"
            ),
            {"ids": minted},
        ).all()
    assert [(shard, seq) for _, shard, seq in rows] == [
        (1341, layout.decompose(v)[2]) for v in minted
    ]
    for (ms, _, _), value in zip(rows, minted, strict=True):
        assert layout.instant_of(ms - 1314220021721) == layout.decode(value).timestamp
        assert abs(ms - now_ms) < 60_000  # minted just now
