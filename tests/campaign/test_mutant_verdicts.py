"""A mutant whose run hangs or whose process dies is a verdict (timed out, crashed), never
the end of the mutation run: every other verdict is kept, and written as it comes."""

import json

from simkit.campaign import Plan, run_campaign
from simkit.campaign import chunk as chunks
from simkit.campaign.cluster import local_pool
from simkit.campaign.mutation import scores
from simkit.fuzz.mutants import Mutant

REGISTER = '"""PUT /devices/:id: the one route open to an unregistered device; set-once keys."""'
HANGS = Mutant(
    "relay/devices.py:34 sleep-an-hour", "relay/devices.py", REGISTER,
    '__import__("time").sleep(3600)',
    "none: the relay sleeps an hour at every registration, a world's first request",
)  # fmt: skip
CRASHES = Mutant(
    "relay/records.py:10 exit-at-import", "relay/records.py", "from itertools import islice",
    "raise SystemExit(3)", "none: the relay's module exits as it is imported",
)  # fmt: skip
KILLED = Mutant(
    "client/keyops.py:1 key-unwrapped", "client/keyops.py",
    'wraps[entry["deviceId"]] = wrap_graph_key(key, entry["pubJwk"], entropy=device.entropy)',
    'wraps[entry["deviceId"]] = __import__("simkit.protocol.b64").protocol.b64'
    ".b64url_encode(key)",
    "Key wrapping: a new epoch's key reaches each device wrapped to its public key",
)  # fmt: skip


def test_a_hanging_and_a_crashing_mutant_get_their_verdicts_and_the_others_keep_theirs(
    monkeypatch,
):
    monkeypatch.setattr(chunks, "PROCESS_SLACK_S", 5.0)  # the hang is judged after 9 s
    plan = Plan(seconds=2, seed=1, mutants=(HANGS, CRASHES, KILLED), chunk_examples=None,
                max_steps=8, shrink=False)  # fmt: skip
    seen = []
    with local_pool(2) as pool:  # forked after the patch: the workers see it
        campaign = run_campaign(plan, pool, lambda state: seen.append(len(state.outcomes)))
    table = {s.name: s for s in scores(plan.mutants, campaign.outcomes)}
    assert table["relay/devices.py:34 sleep-an-hour"].verdict == "timed out"
    assert "ran past 9 s" in table["relay/devices.py:34 sleep-an-hour"].why
    assert table["relay/records.py:10 exit-at-import"].verdict == "crashed"
    assert "exited 3" in table["relay/records.py:10 exit-at-import"].why
    assert table["client/keyops.py:1 key-unwrapped"].verdict == "killed"
    assert sorted(set(seen)) == [0, 1, 2, 3]  # each verdict seen as it came


def test_simkit_mutate_writes_every_verdict_to_its_json_as_it_comes(tmp_path, monkeypatch):
    """The JSON is rewritten after each verdict: what a crash or Ctrl-C leaves behind."""
    from simkit.campaign import mutate

    written = []
    real = mutate.to_json

    def to_json(*args, **kwargs):
        data = real(*args, **kwargs)
        written.append((data["complete"], sum(data["verdicts"].values())))
        return data

    monkeypatch.setattr(mutate, "to_json", to_json)
    monkeypatch.setattr(mutate, "draw", lambda files, count, seed: [CRASHES, KILLED])
    from click.testing import CliRunner

    from simkit.cli import main

    out = tmp_path / "m.json"
    done = CliRunner().invoke(main, [
        "mutate", "--sample", "2", "--time", "2", "--seed", "1", "--workers", "1",
        "--json", str(out),
    ])  # fmt: skip
    assert done.exit_code == 0, done.output  # nothing survived: one crashed, one killed
    assert "1 killed, 1 crashed" in done.output
    data = json.loads(out.read_text())
    assert data["complete"] and data["verdicts"] == {"killed": 1, "crashed": 1}
    assert written[0][0] is False and written[-1] == (True, 2)
