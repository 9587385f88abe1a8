"""The conformance catalogue: every check passes on the reference relay in-process, a
check fails on a relay that breaks its rule, and each cites the spec line it tests."""

from pathlib import Path

import pytest
from click.testing import CliRunner

from simkit.cli import main
from simkit.wire.conform import CHECKS, conformance_directory, reference_target, run
from tests.wire import broken_relays as broken

SPEC = "shared/spec/relay-spec.md"


def _spec() -> Path | None:
    """relay-spec.md, found above the checkout (../shared/spec, as the README says)."""
    for folder in Path(__file__).resolve().parents:
        if (folder / SPEC).is_file():
            return folder / SPEC
    return None


def outcomes(relay_class=None) -> dict[str, tuple[str, str]]:
    results = run(reference_target(relay_class), conformance_directory())
    return {r.check.name: (r.outcome, r.detail) for r in results}


def test_conform_every_check_passes_against_the_reference_relay_in_process():
    results = outcomes()
    assert len(results) == len(CHECKS) >= 60
    assert {name: r for name, r in results.items() if r[0] != "pass"} == {}


@pytest.mark.parametrize(
    "relay_class, check",
    [
        (broken.NoSkewCheck, "push_rule_1_rev_too_far_ahead_is_rejected_and_the_push_continues"),
        (broken.LastOfEquals, "push_rule_2_stored_rev_at_least_op_rev_skips_silently"),
        (broken.LogsLosers, "push_rule_2_stored_rev_at_least_op_rev_skips_silently"),
        (broken.MaxSeqPlusOne,
         "push_reserves_its_seq_range_up_front_so_refused_ops_spend_numbers"),
        (broken.CursorAtLastOp,
         "pull_filtered_pull_that_exhausts_its_matches_moves_the_cursor_to_the_high_water_mark"),
        (broken.OverwritesOnGrant, "keys_grant_fills_a_gap_and_never_overwrites"),
        (broken.StrandingRotation, "keys_incomplete_rotation_is_400_naming_the_missing_devices"),
        (broken.NoCapabilities, "write_gates_push_blob_upload_and_blob_delete"),
        (broken.NeverDelivered, "blob_transport_is_forgotten_once_every_current_member_acked"),
    ],
    ids=lambda v: v.__name__ if isinstance(v, type) else "",
)  # fmt: skip
def test_conform_check_fails_on_a_relay_that_breaks_its_rule(relay_class, check):
    outcome, detail = outcomes(relay_class)[check]
    assert outcome == "fail", f"{check} did not catch {relay_class.__name__}"
    assert detail


def test_conform_checks_cite_a_line_of_the_spec_that_holds_their_quote():
    spec = _spec()
    if spec is None:
        here = Path(__file__).resolve().parents[2]
        pytest.skip(
            "this test holds each conformance check's quote to the spec line it cites, "
            f"and the spec is not found: copy relay-spec.md to {here.parent / SPEC} "
            "(the protocol's repository keeps it at shared/spec/, beside this checkout)"
        )
    lines = spec.read_text(encoding="utf-8").splitlines()
    for check in CHECKS:
        assert check.quote in lines[check.line - 1], (
            f"{check.name} cites spec:{check.line} for {check.quote!r}, which is not on it"
        )


def test_conform_check_names_are_unique_rule_names():
    names = [c.name for c in CHECKS]
    assert len(set(names)) == len(names)


@pytest.mark.parametrize(
    "url, message",
    [("ftp://example.org", "expected http://HOST"), ("http://127.0.0.1:99999", "port"),
     ("http://127.0.0.1:1", "cannot reach")],
)  # fmt: skip
def test_conform_bad_or_unreachable_url_is_a_usage_error_exit_2(url, message):
    result = CliRunner().invoke(main, ["conform", url])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output


def test_conform_auth_file_that_is_not_a_members_file_is_exit_2(tmp_path):
    auth = tmp_path / "auth.toml"
    auth.write_text('[tokens]\n"bad token" = { member = "alice", device = "a1" }\n')
    result = CliRunner().invoke(main, ["conform", "http://127.0.0.1:1", "--auth", str(auth)])
    assert result.exit_code == 2
    assert f"{auth}: tokens.'bad token': a token must match" in result.output
