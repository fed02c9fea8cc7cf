"""The range-partitioned store model of ``python -m benchmarks hotspots`` reproduces the articles.

- The TiDB snowflake-id article: snowflake ids land on one region; rotating the
  last decimal digit to the front spreads them over 10 regions, two digits over
  100, three over 1,000.
- Spanner's schema design best practices: a monotonic first key column is one
  hotspot; bit-reversed sequences, hash shards and UUIDv4 spread the writes.
- The COMB GUID article's time-ordered 128-bit keys (COMB, UUIDv7) are as hot
  as a counter.
- Spanner's sequence-generation guide: a BATCH table sequence hands out values
  close to each other under load.
"""

from __future__ import annotations

import random
import uuid
from datetime import datetime, timezone
from pathlib import Path

import pytest

from benchmarks.__main__ import main
from benchmarks.hotspots import (
    STRATEGIES,
    WRITES_PER_MS,
    HotspotResult,
    format_table,
    run,
    simulate,
)
from sqlalchemy_seqkeys import (
    CombLayout,
    Snowflake,
    comb_timestamp,
    rotate_digits,
)
from tests._helpers import without_package

ROOT = Path(__file__).resolve().parents[2]  # where `benchmarks` is importable

# Smaller than the default run (200,000 writes, ranges of up to 4,000 keys) for
# speed, with the same shape: ranges at the end of the key space hold 1,600 keys
# after a split, as many as the 8 x 200 values of table-batch's open blocks.
WRITES, SPLIT_KEYS, WINDOW = 80_000, 3_200, 5_000

HOT = ("monotonic", "table-batch", "snowflake", "comb", "uuid7")
EVEN = ("bit-reversed", "shard-hash", "uuid4", "snowflake-rot3")


@pytest.fixture(scope="module")
def results() -> dict[str, HotspotResult]:
    found = run(writes=WRITES, split_keys=SPLIT_KEYS, window=WINDOW)
    return {r.strategy: r for r in found}


def test_every_strategy_runs_with_the_sizes_asked_for(results: dict[str, HotspotResult]) -> None:
    assert list(results) == list(STRATEGIES)
    for r in results.values():
        assert r.writes == WRITES
        assert len(r.hottest) == len(r.ranges) == WRITES // WINDOW
        assert all(sum(row) == WINDOW for row in r.heatmap)
        assert 30 <= r.final_ranges <= 60


@pytest.mark.parametrize("name", HOT)
def test_ordered_keys_put_a_late_window_on_one_range(
    results: dict[str, HotspotResult], name: str
) -> None:
    r = results[name]
    assert r.late_hottest >= 0.9
    assert min(r.hottest[len(r.hottest) // 2 :]) >= 0.9
    assert r.verdict == "one hot range"


def test_one_rotated_digit_spreads_writes_over_about_ten_ranges(
    results: dict[str, HotspotResult],
) -> None:
    # The second digit of a rotated id is the id's last digit: 10 sub-spaces,
    # each growing at its own end, so 10 tail ranges take a tenth of the writes each.
    r = results["snowflake-rot1"]
    assert 0.05 <= r.late_hottest <= 0.25
    assert 8 <= r.late_effective <= 11
    assert r.verdict == "~10 hot ranges"


@pytest.mark.parametrize("name", EVEN)
def test_spread_keys_give_no_range_more_than_twice_its_even_share(
    results: dict[str, HotspotResult], name: str
) -> None:
    r = results[name]
    assert r.late_hottest <= 2 / r.late_ranges
    assert r.times_uniform <= 2
    assert r.verdict == "uniform"


def test_two_rotated_digits_are_even_when_there_are_fewer_ranges_than_tails(
    results: dict[str, HotspotResult],
) -> None:
    # 100 tails over ~32 ranges: every range holds a few of them.
    r = results["snowflake-rot2"]
    assert r.times_uniform <= 2
    assert r.late_hottest < results["snowflake-rot1"].late_hottest / 2


def test_rotation_makes_10_100_1000_tails_when_ranges_outnumber_them() -> None:
    found = run(
        ["snowflake-rot1", "snowflake-rot2", "snowflake-rot3"],
        writes=100_000,
        split_keys=100,
        window=10_000,
    )
    hot = {r.strategy: r.late_effective for r in found}
    assert 8 <= hot["snowflake-rot1"] <= 11
    assert 80 <= hot["snowflake-rot2"] <= 110
    assert hot["snowflake-rot3"] >= 400  # 1,000 tails, ~7 writes each per window: noise


def test_batch_blocks_spread_over_a_few_ranges_only_when_ranges_are_smaller() -> None:
    # Ranges of 400-800 keys against 8 open blocks of 200: two or three hot ranges,
    # all at the end of the key space.
    [r] = run(["table-batch"], writes=40_000, split_keys=800, window=4_000)
    assert 0.4 <= r.late_hottest < 0.9
    assert 1.5 <= r.late_effective <= 4
    # The last window's 4,000 writes are 6.4 of the 64 rows' worth of keys; blocks fetched
    # a little earlier add a few rows below, and nothing lands lower.
    last = r.heatmap[-1]
    assert sum(last[-10:]) == sum(last)


def test_the_heatmap_shows_a_diagonal_for_monotonic_and_a_flat_field_for_uuid4(
    results: dict[str, HotspotResult],
) -> None:
    rows = len(results["monotonic"].heatmap[0])
    for w, counts in enumerate(results["monotonic"].heatmap):
        lit = [row for row, c in enumerate(counts) if c]
        assert lit[0] >= w * rows * WINDOW // WRITES - 1
        assert lit[-1] <= (w + 1) * rows * WINDOW // WRITES
    late = results["uuid4"].heatmap[-1]
    assert min(late) > 0
    assert max(late) < 2 * WINDOW / rows


def test_runs_repeat_for_a_seed_and_differ_across_seeds() -> None:
    a = run(["uuid4", "table-batch"], writes=20_000, split_keys=500, window=2_000, seed=3)
    b = run(["uuid4", "table-batch"], writes=20_000, split_keys=500, window=2_000, seed=3)
    c = run(["uuid4"], writes=20_000, split_keys=500, window=2_000, seed=4)
    assert a == b
    assert a[0].heatmap != c[0].heatmap


def test_key_streams_sort_as_the_store_does() -> None:
    ms0 = 1_704_067_200_000
    combs = list(STRATEGIES["comb"](40, 0))
    assert all(c == str(uuid.UUID(c)) for c in combs)  # the text form of a UUID
    stamps = [comb_timestamp(uuid.UUID(c), CombLayout.AS_STRING) for c in combs]
    assert stamps[0] == datetime.fromtimestamp(ms0 / 1000, timezone.utc)
    assert stamps[-1] == datetime.fromtimestamp((ms0 + 39 // WRITES_PER_MS) / 1000, timezone.utc)
    v7 = [uuid.UUID(bytes=b) for b in STRATEGIES["uuid7"](40, 0)]
    assert {u.version for u in v7} == {7}
    assert all(u.variant == uuid.RFC_4122 for u in v7)
    assert [u.int >> 80 for u in v7] == [ms0 + i // WRITES_PER_MS for i in range(40)]
    v4 = [uuid.UUID(bytes=b) for b in STRATEGIES["uuid4"](40, 0)]
    assert {u.version for u in v4} == {4}
    # (ShardId, LastAccess) as one int that sorts like the tuple, negative shards first
    composite = list(STRATEGIES["shard-hash"](2_000, 0))
    pairs = [((k >> 64) - 2048, k & (2**64 - 1)) for k in composite]
    assert sorted(composite) == [((s + 2048) << 64) | t for s, t in sorted(pairs)]
    assert min(s for s, _ in pairs) < 0 < max(s for s, _ in pairs)
    assert all(-2047 <= s <= 2047 for s, _ in pairs)


def test_snowflake_streams_are_one_set_of_ids_rotated() -> None:
    plain = list(STRATEGIES["snowflake"](500, 0))
    rot2 = list(STRATEGIES["snowflake-rot2"](500, 0))
    millis = [v >> 22 for v in plain]  # ordered by millisecond, not within one
    assert millis == sorted(millis)
    assert plain != sorted(plain)
    assert rot2 == [rotate_digits(v, 2) for v in plain]
    decoded = [Snowflake(1).decode(v) for v in plain]
    assert {d.worker_id for d in decoded} == {1, 2, 3, 4}
    assert decoded[-1].timestamp.year == 2024


def test_simulate_splits_at_the_median_and_keeps_the_load_with_the_written_half() -> None:
    r = simulate([5, 1, 4, 2, 3, 6], split_keys=2, window=3)
    # 5,1,4: [1,4,5] splits at 4; the write of 4 is in the upper half, which keeps 3
    assert r.ranges == [2, 4]
    assert r.hottest == [1.0, 2 / 3]
    # a falling key keeps the lower half hot
    down = simulate(range(1_000, 0, -1), split_keys=50, window=100)
    assert down.hottest == [1.0] * 10


def test_random_keys_fill_ranges_in_waves() -> None:
    # Evenly spread keys fill every range at the same pace, so the number of ranges
    # doubles in waves (32, 64, 128): measured against the 128 ranges at the end, the
    # late windows (mostly with 64-100 ranges) would look twice as hot as they are.
    rng = random.Random(1)
    keys = (rng.getrandbits(64) for _ in range(40_000))
    r = simulate(keys, split_keys=500, window=4_000)
    assert r.ranges.count(64) >= 2
    assert r.final_ranges == 128
    assert r.times_uniform <= 2 < r.late_hottest * r.final_ranges


def test_format_table_lists_each_strategy_and_its_verdict(
    results: dict[str, HotspotResult],
) -> None:
    text = format_table(list(results.values()))
    lines = {line.split()[0]: line for line in text.splitlines()[2:13]}
    assert set(lines) == set(STRATEGIES)
    assert lines["monotonic"].endswith("one hot range")
    assert lines["snowflake-rot1"].endswith("~10 hot ranges")
    assert lines["uuid4"].endswith("uniform")
    assert "hottest share" in text.splitlines()[0]


def test_unknown_strategy_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown strategy"):
        run(["nope"])


def test_cli_prints_the_table_and_draws_the_png(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    png = tmp_path / "hot.png"
    args = ["hotspots", "--writes", "20000", "--split-keys", "800", "--window", "2000"]
    args += ["--strategies", "monotonic,snowflake-rot1,uuid4", "--plot", str(png)]
    assert main(args) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line for line in out.splitlines()[2:5]}
    assert list(rows) == ["monotonic", "snowflake-rot1", "uuid4"]
    assert rows["monotonic"].endswith("one hot range")
    assert rows["uuid4"].endswith("uniform")
    assert f"wrote {png}" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_refuses_unknown_strategies(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hotspots", "--strategies", "monotonic,nope"]) == 2
    assert "unknown strategy(ies) nope" in capsys.readouterr().err


def test_plot_without_matplotlib_names_the_extra(tmp_path: Path) -> None:
    png = tmp_path / "x.png"
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
        "from benchmarks.hotspots import plot, run\n"
        "from sqlalchemy_seqkeys import MissingExtraError\n"
        "[r] = run(['monotonic'], writes=1_000, split_keys=100, window=250)\n"
        "try:\n"
        f"    plot([r], {str(png)!r})\n"
        "except MissingExtraError as exc:\n"
        "    print(exc)\n"
    )
    assert "pip install 'sqlalchemy-seqkeys[plot]'" in without_package("matplotlib", code)
    assert not png.exists()
