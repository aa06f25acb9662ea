"""``tracestore release ATTEMPT`` of a provider stream loads only the projections it judges
with (issue 25 item 4): no ingest fast path, no destination audit, no agent-run judge, no
contract models for a trace without a bound contract.  An agent run still finds its judge.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from clihelp import run
from test_startup import run_cli

ROOT = Path(__file__).resolve().parent.parent


def test_release_of_a_provider_attempt_loads_no_agent_audit_or_contract_code(tmp_path) -> None:
    db = tmp_path / "s.db"
    capture = ROOT / "fixtures/real/anthropic/text-basic.sse"
    # the store is written in-process; only the release under test runs in a fresh one
    assert run("ingest", str(capture), "--attempt", "a1", "--json", db=db)[0] == 0
    out, code, modules = run_cli("release", "a1", "--json", "--db", str(db))
    assert code == 0 and json.loads(out)["attempt_id"] == "a1"
    unwanted = ("tracestore.ingest.fast", "tracestore.projections.destinations",
                "tracestore.projections.agent_release", "tracestore.agent.admission",
                "tracestore.agent.run", "tracestore.contracts.model")
    assert [m for m in unwanted if m in modules] == []
    assert "tracestore.projections.release" in modules  # the probe sees what it loads


def test_an_agent_run_attempt_is_judged_by_the_agent_judge_loaded_on_first_use() -> None:
    probe = ("import sys; from tracestore.projections.release import JUDGES; "
             "before = 'tracestore.projections.agent_release' in sys.modules; "
             "judge = JUDGES.get('agent-run'); "
             "print(before, judge.__module__, JUDGES.get('anthropic-messages'))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, timeout=60)
    assert done.stdout.split() == ["False", "tracestore.projections.agent_release", "None"]


def test_the_projections_package_still_exports_its_names() -> None:
    import tracestore.projections as projections
    from tracestore.projections import audit, decide_all
    from tracestore.projections.destinations import audit as audit_home
    from tracestore.projections.release import decide_all as decide_home

    assert (audit, decide_all) == (audit_home, decide_home)
    assert all(getattr(projections, name) is not None for name in projections.__all__)
    assert projections.profiles.__name__ == "tracestore.projections.profiles"
