"""Campaign throughput: honest steps per second on an embedded LocalCluster of 1
and of 2 worker processes, measured in the same run, and the scaling efficiency
(steps/s with 2 workers over twice those with 1; 1.0 is perfect scaling).

Each cluster is started and its workers have imported simkit before the clock
starts; the campaign's seconds are wall time from its first chunk to its last.
"""

from simkit.bench import BenchRow

WORKERS = (1, 2)


def campaign_for(workers: int, seconds: float) -> dict:
    from simkit.campaign import Plan, connect, run_campaign

    with connect(workers=workers) as client:
        client.run(__import__, "simkit.campaign.chunk")  # imports outside the measurement
        result = run_campaign(Plan(seconds, seed=1), client)
    return {
        "chunks": len(result.outcomes),
        "examples": result.examples,
        "steps": result.steps,
        "seconds": result.seconds,
    }


def run(quick: bool = False) -> list[BenchRow]:
    seconds = 20.0 if quick else 60.0
    rows, rates = [], {}
    for workers in WORKERS:
        result = campaign_for(workers, seconds)
        rates[workers] = result["steps"] / result["seconds"]
        note = (
            f"{result['chunks']} chunks, {result['examples']:,} examples, "
            f"{result['steps']:,} steps in {result['seconds']:.0f} s"
        )
        rows.append(
            BenchRow("campaign", f"honest steps/s, {workers} worker(s)", rates[workers], "/s", note)
        )
    efficiency = rates[2] / (2 * rates[1])
    note = "steps/s with 2 workers / (2 x steps/s with 1); noisy on a shared machine"
    rows.append(BenchRow("campaign", "scaling efficiency, 2 workers", efficiency, "x", note))
    return rows
