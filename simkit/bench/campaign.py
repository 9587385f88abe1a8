"""Campaign throughput: honest steps per second on an embedded LocalCluster of 1, 2,
... worker processes, up to the cores this machine lets the process use, measured in
the same run, and the scaling efficiency of each count (steps/s with N workers over N
times those with 1; 1.0 is perfect scaling).

Each cluster is started and its workers have imported simkit before the clock
starts; the campaign's seconds are wall time from its first chunk to its last.
"""

from simkit.bench import BenchRow


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
    from simkit.campaign.cluster import cores

    seconds = 20.0 if quick else 60.0
    rows, rates = [], {}
    for workers in range(1, max(cores(), 1) + 1):
        result = campaign_for(workers, seconds)
        rates[workers] = result["steps"] / result["seconds"]
        note = (
            f"{result['chunks']} chunks, {result['examples']:,} examples, "
            f"{result['steps']:,} steps in {result['seconds']:.0f} s"
        )
        rows.append(
            BenchRow("campaign", f"honest steps/s, {workers} worker(s)", rates[workers], "/s", note)
        )
    note = "steps/s with N workers / (N x steps/s with 1); noisy on a shared machine"
    for workers in sorted(rates)[1:]:
        efficiency = rates[workers] / (workers * rates[1])
        name = f"scaling efficiency, {workers} workers"
        rows.append(BenchRow("campaign", name, efficiency, "x", note))
    return rows
