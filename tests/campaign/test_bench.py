"""``simkit bench campaign``: its measurement runs a real campaign on an embedded
cluster and counts its work (the figures themselves are never asserted)."""

from simkit.bench.campaign import campaign_for
from simkit.cli import BENCH_GROUPS


def test_the_campaign_bench_counts_the_work_of_a_short_campaign_on_one_worker():
    assert "campaign" in BENCH_GROUPS
    result = campaign_for(1, 2.0)
    assert result["chunks"] >= 1 and result["examples"] >= 1
    assert result["steps"] > 0 and result["seconds"] > 0
