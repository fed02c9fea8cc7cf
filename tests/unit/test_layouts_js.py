"""The 53-bit preset's ids survive JavaScript: Node.js ``JSON.parse``s them as numbers and
writes back the same digits; a 63-bit layout's ids do not (so the test can fail).
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from datetime import datetime, timedelta, timezone

import pytest

from sqlalchemy_seqkeys import Snowflake, SnowflakeLayout

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="Node.js is not installed")


def through_javascript(values: list[int]) -> list[str]:
    """Each number as JavaScript holds it after ``JSON.parse``, written with ``String()``."""
    assert NODE is not None
    script = (
        "const v = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "process.stdout.write(JSON.stringify(v.map(x => [typeof x, String(x)])));"
    )
    result = subprocess.run(
        [NODE, "-e", script],
        input=json.dumps(values),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    seen = json.loads(result.stdout)
    assert all(kind == "number" for kind, _ in seen)
    return [text for _, text in seen]


def ids_of(layout: SnowflakeLayout, count: int) -> list[int]:
    """Ids across the layout's whole life: its extremes, random fields, and minted ones."""
    rng = random.Random(53)
    top = layout.tick_limit - 1
    values = [
        0,
        layout.max_id,
        layout.compose(top, layout.max_worker_id, layout.max_sequence - 1),
        layout.compose(top, 0, 0),
    ]
    values += [
        layout.compose(
            rng.randint(0, top),
            rng.randint(0, layout.max_worker_id),
            rng.randint(0, layout.max_sequence),
        )
        for _ in range(count)
    ]
    # minted by a generator, with its clock 60 years after the epoch
    late = layout.epoch + timedelta(days=60 * 365)
    now_ns = (late - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(microseconds=1) * 1000
    minted = Snowflake(worker_id=layout.max_worker_id, layout=layout, clock=lambda: now_ns)
    values += [minted() for _ in range(layout.max_sequence + 1)]
    return values


def test_the_js_safe_preset_s_ids_round_trip_through_json_parse() -> None:
    layout = SnowflakeLayout.js_safe()
    values = ids_of(layout, 3000)
    assert max(values) == 2**53 - 1
    assert through_javascript(values) == [str(v) for v in values]


def test_a_63_bit_layout_s_ids_do_not() -> None:
    values = ids_of(SnowflakeLayout.twitter(), 300)
    back = through_javascript(values)
    wrong = [v for v, text in zip(values, back, strict=True) if text != str(v)]
    assert len(wrong) > len(values) * 0.9  # nearly all of them are rounded
    assert through_javascript([SnowflakeLayout.twitter().max_id]) == ["9223372036854776000"]
