"""The campaign's parts without a cluster: the runner's example budget, chunk seeds,
chunks as JSON, failure keys, deduplication, and the known findings folder."""

from simkit.campaign.chunk import Chunk, chunk_seed, fuzz_chunk
from simkit.campaign.findings import Finding, Findings, Key, key_of
from simkit.fuzz import corpus
from simkit.fuzz.mutants import Mutant
from simkit.fuzz.reproducer import Reproducer
from simkit.fuzz.runner import fuzz
from simkit.fuzz.steps import WorldParams
from simkit.sim.variant import HONEST

LWW = "{} is stored at rev {} seq {}; the first write of the highest rev is rev {} seq {}"


def violation(invariant: str, detail: str) -> dict:
    return {"invariant": invariant, "detail": detail}


def repro_json(steps: int, *violations: dict, machine: str = "honest") -> dict:
    repro = Reproducer(machine, WorldParams(seed=1), tuple({"rule": "heal"} for _ in range(steps)))
    return {**repro.to_json(), "violations": list(violations)}


def test_the_search_stops_at_the_example_budget():
    result = fuzz(HONEST, seconds=600, seed=1, max_steps=3, examples=3)
    assert result.examples == 3 and result.failure is None and not result.interrupted
    assert result.shrinking is None


def test_a_chunk_ended_by_its_example_budget_says_so_with_its_behaviours():
    outcome = fuzz_chunk(Chunk(index=0, seed=5, seconds=600, examples=2, max_steps=3))
    assert outcome["ended"] == "examples" and outcome["examples"] == 2
    assert outcome["target"] == "honest" and outcome["failure"] is None
    assert sum(outcome["coverage"].values()) > 0


def test_chunk_seeds_come_from_the_campaign_seed_and_the_index_alone():
    seeds = [chunk_seed(7, i) for i in range(100)]
    assert seeds == [chunk_seed(7, i) for i in range(100)]
    assert len(set(seeds)) == 100 and all(0 <= s < 2**32 for s in seeds)
    assert set(seeds).isdisjoint(chunk_seed(8, i) for i in range(100))


def test_a_chunk_goes_to_json_and_back_unchanged():
    mutant = Mutant("m", "relay/records.py", "a", "b", "rule")
    chunk = Chunk(3, 42, 10.0, mutant=mutant, preload=("x:y", "z:w"), stop="event")
    assert Chunk.from_json(chunk.to_json()) == chunk


def test_failures_that_differ_only_in_ids_revs_and_seqs_share_a_key():
    a = key_of("v", "", repro_json(3, violation("lww", LWW.format("r0", 17, 4, 17, 3))))
    b = key_of("v", "", repro_json(9, violation("lww", LWW.format("x2-1", 99, 5, 99, 2))))
    assert a == b
    other = key_of("v", "", repro_json(3, violation("seq-and-log", "r0 logged twice")))
    adversary = key_of("v", "", repro_json(3, violation("lww", "r0"), machine="adversary"))
    assert len({a, other, adversary}) == 3
    crash = key_of("v", "KeyError: 'a1'\n    in device a1 at virtual time 3.0", None)
    assert crash.invariant == "crash" and crash.machine == "none"


def test_one_finding_keeps_its_shortest_reproducer_and_counts_every_hit_in_any_order():
    key = Key("v", "honest", "lww", "abc")

    def finding(steps: int, chunk: int, at: float) -> Finding:
        return Finding(key, "broke", repro_json(steps), chunk, at)

    runs = [finding(9, 0, 5.0), finding(3, 2, 9.0), finding(3, 1, 7.0), finding(12, 3, 1.0)]
    for order in (runs, runs[::-1]):
        findings = Findings()
        for run in order:
            findings.add(run)
        (kept,) = findings
        assert (kept.steps, kept.chunk, kept.hits, kept.found_at) == (3, 1, 4, 1.0)


def test_the_known_findings_folder_keeps_the_shortest_reproducer_of_a_name(tmp_path):
    long, short = (Reproducer.from_json(repro_json(n)) for n in (5, 2))
    corpus.add(tmp_path, long, "f")
    corpus.add(tmp_path, short, "f")
    corpus.add(tmp_path, long, "f")
    assert len(Reproducer.load(tmp_path / "f.json").steps) == 2
    (tmp_path / "junk.json").write_text("not json")
    assert [k.path.name for k in corpus.replayed(tmp_path, "some.module:variant")] == []
