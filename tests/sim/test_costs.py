"""What a run costs (docs/lab/performance.md, "What a run costs"): every request the relay
served, per route, the bytes each way, the records pulled, and the writes and the
fleet's device-hours it was for."""

from simkit.invariants import Monitor
from simkit.sim import spec as S
from simkit.sim.world import run_world
from tests.sim.worlds import events

TEAM = {"alice": ("a1", "a2"), "bob": ("b1",)}


def world(**changes):
    fields = {"workload": S.Workload(interval_s=10), **changes}
    spec = S.WorldSpec(
        seed=5,
        devices=TEAM,
        groups={"team": ("alice", "bob")},
        graphs=("g:team", "u:alice"),
        duration_s=240,
        drain_s=120,
        **fields,
    )
    return run_world(spec, monitor=Monitor(honest=True))


def test_costs_count_what_the_relay_served_and_what_it_was_for():
    w = world()
    costs = w.cost().to_json()
    served = [e for e in w.trace if e.kind == "delivery" and e.fields.get("applied")]
    assert costs["requests"] == len(served) == sum(r["requests"] for r in costs["routes"].values())
    assert costs["bytes_down"] == sum(e.fields["size"] for e in served)
    assert costs["app_writes"] == len(events(w, "app.write")) > 0
    assert costs["checkpoint_records"] == len(events(w, "checkpoint.published"))
    applied = len(events(w, "record.applied"))
    assert costs["records_pulled"] >= applied > 0  # an op is applied only once pulled
    assert costs["per_app_write"]["requests"] == round(costs["requests"] / costs["app_writes"], 2)
    assert costs["device_hours"] == round(3 * w.now() / 3600, 3)


def test_costs_per_device_hour_grow_with_the_polling_rate():
    """An idle fleet whose client polls twice as often costs about twice the pulls per
    device-hour (the key rechecks keep their own pace), and passes every check (what a
    cost table is for)."""
    idle = S.Workload(writers=())
    slow = world(workload=idle, client_settings={"poll_interval_s": 10.0})
    fast = world(workload=idle, client_settings={"poll_interval_s": 5.0})
    assert slow.violations == fast.violations == []
    pulls = "GET /graphs/:gid/pull"
    per_hour = [w.cost().to_json() for w in (slow, fast)]
    ratio = [c["routes"][pulls]["requests"] / c["device_hours"] for c in per_hour]
    assert 1.7 < ratio[1] / ratio[0] < 2.3, ratio
    assert (
        per_hour[1]["per_device_hour"]["requests"]
        > 1.3 * per_hour[0]["per_device_hour"]["requests"]
    )
    assert fast.cost().to_json()["per_app_write"] is None  # no write to divide by


def test_costs_time_each_write_until_every_unfiltered_follower_holds_it():
    w = world()
    converge = w.cost().to_json()["converge_s"]
    assert converge["writes"] == len(events(w, "app.write"))
    assert 0 < converge["converged"] <= converge["writes"]
    assert 0 < converge["p50"] <= converge["p99"] < 120  # a settled world, seconds apart


def test_a_report_shows_the_cost_per_route_and_the_requests_over_time(tmp_path):
    from simkit.report import render_report
    from simkit.report.summary import summary_from_trace

    w = world()
    summary = {**summary_from_trace(w.trace, "costs"), "costs": w.cost().to_json()}
    files = render_report(w.trace, summary, tmp_path / "report")
    text = files["report.md"].read_text()
    costs = summary["costs"]
    assert (
        "## Cost" in text and f"{costs['per_app_write']['requests']:g} requests per write" in text
    )
    assert f"| all routes | {costs['requests']:,} |" in text
    html = files["report.html"].read_text()
    plot = html[html.index('id="plot-requests"') :]
    plot = plot[: plot.index("</svg>")]
    assert 2 <= plot.count("<polyline") <= 6 and "…/pull" in plot


def test_a_report_without_costs_in_its_summary_shows_none(tmp_path):
    from simkit.report import render_report
    from simkit.report.summary import summary_from_trace

    w = world()
    files = render_report(w.trace, summary_from_trace(w.trace, "x"), tmp_path / "r")
    assert "## Cost" not in files["report.md"].read_text()
