"""Agent-run files into events (pure: bytes in, plan out).

Two shapes are recognised:

* **seed 001's live comparison report** — an object with ``trials``, each ``{id, case_id,
  split, repeat, mode, result, checks, elapsed_seconds, provider_usage}``;
* **a single run result** — ``{status, reason, answer, citations, question, version, mode,
  limits, usage, decisions, observations}``, bare or wrapped as a trial (``{"result": …}``).

Each run becomes its own trace and attempt (api ``agent-run``).  The events follow the order
the seed's controller works in: for the fixed path its search and reads first; then per
model call ``model.called``, the proposal, the application's verdict and the observation
the admitted tool call produced.  A result file does not log verdicts, but it says which
actions ran: every decision but the last was admitted, and the last one was refused when
the run ended on a refusal code.  Those verdicts are written with ``implied=True``; the
admission projection re-derives them and reports any disagreement.

Everything is validated before a single event is planned: a bad file writes nothing.
"""

from __future__ import annotations

import re

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tracestore.agent import codes as C
from tracestore.agent.run import LIMIT_NAMES, USAGE_NAMES
from tracestore.errors import InputError
from tracestore.events import (
    AttemptStarted, CaptureStored, ModelCalled, ModelDecision, NewEvent, RunFinished,
    RunGraded, RunOpened, TaskRule, ToolObserved, TraceOpened, attempt_stream, trace_stream,
)
from tracestore.ingest.plan import event_id
from tracestore.projections.semantics import validate_rule

REPORT_FORMAT = "agent-report"
RESULT_FORMAT = "agent-result"
FORMATS = (REPORT_FORMAT, RESULT_FORMAT)
#: Seed 001's ``Limits`` bounds: each limit is an int in 1..max.
LIMIT_MAX = {"model_calls": 12, "searches": 4, "reads": 6, "source_bytes": 8192, "seconds": 300}
STATUSES = ("answered", "incomplete", "failed")
_RESULT_KEYS = ("status", "reason", "question", "version", "mode", "limits", "decisions",
                "observations")
_SNIFF = (b'"trials"', b'"decisions"', b'"execution_mode"')
C_INVALID_LIMITS = "invalid_limits"


@dataclass(frozen=True)
class AgentIngestPlan:
    format: str
    sha256: str
    runs: tuple[tuple[str, str, str], ...]
    "(attempt_id, trace_id, label) per run, in file order."
    events: list[NewEvent]
    blob: bytes


def sniff(data: bytes, head: int = 64 * 1024) -> str | None:
    """``agent-report`` / ``agent-result`` when ``data`` looks like one, else None (cheap)."""
    start = data[:head].lstrip()
    if not start.startswith(b"{") or not any(key in start for key in _SNIFF):
        return None
    try:
        value = json.loads(data)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return shape_of(value)


def shape_of(value: Any) -> str | None:
    if not isinstance(value, Mapping):
        return None
    if isinstance(value.get("trials"), list):
        return REPORT_FORMAT
    if isinstance(value.get("result"), Mapping) or "decisions" in value:
        return RESULT_FORMAT
    return None


def _bad(message: str, code: str, **context: Any) -> InputError:
    return InputError(message, code=code, **context)


def _int_map(value: Any, names: Sequence[str], what: str, code: str) -> dict[str, int]:
    if not isinstance(value, Mapping) or any(type(value.get(n)) is not int for n in names):
        raise _bad(f"{what} must be an object of integers {', '.join(names)}", code)
    return {n: value[n] for n in names}


def _check_result(result: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(result, Mapping) or any(k not in result for k in _RESULT_KEYS):
        raise _bad(f"{where} is not a run result (it needs {', '.join(_RESULT_KEYS)})",
                   "unknown_run_shape")
    if result["status"] not in STATUSES:
        raise _bad(f"{where}: status {result['status']!r} is not one of "
                   f"{', '.join(STATUSES)}", "invalid_run")
    if result["mode"] not in ("agent", "fixed"):
        raise _bad(f"{where}: mode {result['mode']!r} is not agent or fixed", "invalid_run")
    for key in ("question", "version", "reason"):
        if not isinstance(result[key], str):
            raise _bad(f"{where}: {key} must be a string", "invalid_run")
    # seed 001's run() refuses these before anything happens
    if not result["question"].strip() or len(result["question"]) > 512:
        raise _bad(f"{where}: the question is blank or longer than 512 characters",
                   "invalid_question")
    if re.fullmatch(r"[0-9]+\.[0-9]+", result["version"]) is None:
        raise _bad(f"{where}: version {result['version'][:40]!r} is not MAJOR.MINOR",
                   "invalid_version")
    limits = _int_map(result["limits"], LIMIT_NAMES, f"{where}: limits", C_INVALID_LIMITS)
    for name, value in limits.items():
        if not 1 <= value <= LIMIT_MAX[name]:
            raise _bad(f"{where}: limit {name}={value} is outside 1..{LIMIT_MAX[name]}",
                       C_INVALID_LIMITS)
    if "usage" in result:
        _int_map(result["usage"], USAGE_NAMES, f"{where}: usage", "invalid_run")
    _check_list(result["decisions"], where, "decisions", "non_object_decision")
    _check_list(result.get("citations", []), where, "citations", "invalid_run")
    _check_list(result["observations"], where, "observations", "invalid_observation")
    for i, obs in enumerate(result["observations"]):
        if obs.get("tool") not in ("search", "read") or not isinstance(
                obs.get("arguments"), Mapping) or not isinstance(obs.get("result"), Mapping):
            raise _bad(f"{where}: observation {i} is not {{tool: search|read, arguments, "
                       "result}", "invalid_observation", index=i)
        if obs["tool"] == "read" and not all(isinstance(obs["result"].get(k), str) for k in (
                "source_id", "text", "url", "text_sha256")):
            raise _bad(f"{where}: read observation {i} lacks source_id, text, url or "
                       "text_sha256", "invalid_observation", index=i)
    return result


def _check_list(value: Any, where: str, name: str, code: str) -> None:
    if not isinstance(value, list):
        raise _bad(f"{where}: {name} must be a list", code)
    for i, item in enumerate(value):
        if not isinstance(item, Mapping):
            raise _bad(f"{where}: {name[:-1]} {i} is a {type(item).__name__}, not an object",
                       code, index=i)


def _trials(value: Any, fmt: str) -> list[Mapping[str, Any]]:
    """The runs of a file as trial-like objects ({id?, result, checks?, …})."""
    if fmt == REPORT_FORMAT:
        trials = value.get("trials") if isinstance(value, Mapping) else None
        if not isinstance(trials, list) or not trials:
            raise _bad("the report holds no trials", "unknown_run_shape")
        out = []
        for i, trial in enumerate(trials):
            if not isinstance(trial, Mapping) or not isinstance(trial.get("id"), str):
                raise _bad(f"trial {i} is not an object with an id", "unknown_run_shape",
                           index=i)
            _check_result(trial.get("result"), f"trial {trial['id']}")
            out.append(trial)
        if len({t["id"] for t in out}) != len(out):
            raise _bad("two trials share an id", "unknown_run_shape")
        return out
    if isinstance(value, Mapping) and isinstance(value.get("result"), Mapping):
        _check_result(value["result"], "the run")
        return [value]
    return [{"result": _check_result(value, "the run")}]


def parse_agent_file(data: bytes, fmt: str = "auto") -> tuple[str, Any]:
    try:
        value = json.loads(data)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _bad(f"the agent run file is not JSON: {type(exc).__name__}: "
                   f"{str(exc)[:200]}", "invalid_json") from exc
    shape = shape_of(value)
    if fmt == "auto":
        if shape is None:
            raise _bad("the file is neither seed 001's comparison report nor a run result",
                       "unknown_run_shape")
        fmt = shape
    elif fmt not in FORMATS:
        raise _bad(f"--format {fmt!r} is not one of {', '.join(FORMATS)}", "unknown_format")
    return fmt, value


def plan_agent_ingest(data: bytes, *, filename: str | None = None, fmt: str = "auto",
                      trace_prefix: str | None = None, attempt_id: str | None = None,
                      cases: Mapping[str, Any] | None = None) -> AgentIngestPlan:
    """Plan every run of an agent file; ``cases`` (id → case) attach each trace's task rule."""
    fmt, value = parse_agent_file(data, fmt)
    trials = _trials(value, fmt)
    sha = hashlib.sha256(data).hexdigest()
    header = value if fmt == REPORT_FORMAT else {}
    stem = (filename or "run").rsplit("/", 1)[-1].split(".", 1)[0] or "run"
    events: list[NewEvent] = []
    runs = []
    for trial in trials:
        label = _opt(trial.get("id"), str) or f"{stem}-{sha[:8]}"
        run_id = attempt_id if attempt_id and len(trials) == 1 else label
        if trace_prefix:
            run_id = f"{trace_prefix}.{run_id}"
        case = (cases or {}).get(_opt(trial.get("case_id"), str) or "")
        events += _plan_run(trial, header, run_id, sha, len(data), filename, fmt, case)
        runs.append((run_id, run_id, label))
    return AgentIngestPlan(fmt, sha, tuple(runs), events, data)


def _plan_run(trial: Mapping[str, Any], header: Mapping[str, Any], run_id: str, sha: str,
              size: int, filename: str | None, fmt: str, case: Mapping[str, Any] | None
              ) -> list[NewEvent]:
    result = trial["result"]
    model, config = header.get("model"), header.get("config")
    task = case_rule(case) if case is not None else None
    trace = TraceOpened(trace_id=run_id, task=task, origin="recorded agent run",
                        comparison=f"seed 001 fixed vs agent: case {trial.get('case_id')}, "
                                   f"repeat {trial.get('repeat')}, {result['mode']} path")
    started = AttemptStarted(attempt_id=run_id, trace_id=run_id, api=C.AGENT_API,
                             reader="ingest",
                             request={k: v for k, v in (("model", model), ("config", config),
                                                        ("endpoint", header.get("endpoint")))
                                      if v is not None} or None)
    capture = CaptureStored(attempt_id=run_id, sha256=sha, size=size, framing=fmt,
                            filename=filename)
    body: list[Any] = [RunOpened(attempt_id=run_id, question=result["question"],
                      version=result["version"], mode=result["mode"],
                      limits={n: result["limits"][n] for n in LIMIT_NAMES},
                      model=model if isinstance(model, str) else None,
                      config=dict(config) if isinstance(config, Mapping) else None,
                      trial_id=_opt(trial.get("id"), str),
                      case_id=_opt(trial.get("case_id"), str),
                      split=_opt(trial.get("split"), str), repeat=_opt(trial.get("repeat"), int))]
    body += _run_body(run_id, result, trial.get("provider_usage"))
    body.append(RunFinished(
        attempt_id=run_id, status=result["status"], reason=result["reason"],
        answer=result.get("answer") if isinstance(result.get("answer"), str) else "",
        citations=tuple(result.get("citations", ())),
        usage={n: result["usage"][n] for n in USAGE_NAMES} if "usage" in result else None,
        elapsed_seconds=_opt(trial.get("elapsed_seconds"), (int, float))))
    if isinstance(trial.get("checks"), Mapping):
        body.append(RunGraded(attempt_id=run_id, checks=dict(trial["checks"])))
    head = [(trace_stream(run_id), event_id(run_id, "", "trace"), trace),
            (attempt_stream(run_id), event_id(run_id, sha, "started"), started),
            (attempt_stream(run_id), event_id(run_id, sha, "capture"), capture)]
    out = [NewEvent(stream, e, id=eid, trace_id=run_id) for stream, eid, e in head]
    out += [NewEvent(attempt_stream(run_id), e, id=event_id(run_id, sha, "body", i),
                     trace_id=run_id) for i, e in enumerate(body)]
    return out


def _opt(value: Any, kind: Any) -> Any:
    return value if isinstance(value, kind) and not isinstance(value, bool) else None


def implied_verdict(decision: Mapping[str, Any], last: bool, status: str, reason: str,
                    observed: bool) -> tuple[Literal["admitted", "refused"], str | None]:
    """The verdict a run result implies for one of its decisions (see the module doc)."""
    if not last:
        return "admitted", None
    if status == "failed" and reason in C.REFUSAL_CODES:
        return "refused", reason
    action = decision.get("action")
    if status == "incomplete" and reason in (C.SEARCH_LIMIT, C.READ_OR_BYTE_LIMIT) and \
            action in ("search", "read") and not observed:
        return "refused", reason
    if status == "incomplete" and reason == C.DEADLINE and not observed:
        return "refused", reason
    return "admitted", None


def _run_body(run_id: str, result: Mapping[str, Any], provider_usage: Any) -> list[Any]:
    decisions: list[Mapping[str, Any]] = result["decisions"]
    observations: list[Mapping[str, Any]] = result["observations"]
    usages = provider_usage if isinstance(provider_usage, list) else []
    recorded_calls = result.get("usage", {}).get("model_calls", len(decisions))
    calls = max(len(decisions), len(usages), min(recorded_calls, len(decisions) + 1))
    body: list[Any] = []
    cursor = 0

    def observe() -> None:
        nonlocal cursor
        obs = observations[cursor]
        body.append(ToolObserved(attempt_id=run_id, index=cursor, tool=obs["tool"],
                                 arguments=dict(obs["arguments"]), result=dict(obs["result"])))
        cursor += 1

    if result["mode"] == "fixed":  # the fixed path retrieves before the model is asked
        while cursor < len(observations):
            observe()
    for i in range(calls):
        usage = usages[i] if i < len(usages) and isinstance(usages[i], Mapping) else None
        body.append(ModelCalled(attempt_id=run_id, index=i,
                                usage=dict(usage) if usage is not None else None))
        if i >= len(decisions):
            continue
        decision = decisions[i]
        action = decision.get("action")
        observed = (action in ("search", "read") and cursor < len(observations)
                    and observations[cursor].get("tool") == action)
        stage, code = implied_verdict(decision, i == len(decisions) - 1, result["status"],
                                      result["reason"], observed)
        body.append(ModelDecision(attempt_id=run_id, stage="proposed", decision=dict(decision),
                                  index=i))
        body.append(ModelDecision(attempt_id=run_id, stage=stage, decision=dict(decision),
                                  reason=code, index=i, implied=True))
        if stage == "admitted" and observed:
            observe()
    while cursor < len(observations):  # observations no decision accounts for stay visible
        observe()
    return body


def load_cases(data: bytes) -> dict[str, Mapping[str, Any]]:
    """A cases file: ``{"cases": [{id, sources, answer_patterns, forbidden_patterns …}]}``."""
    try:
        value = json.loads(data)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _bad(f"the cases file is not JSON: {type(exc).__name__}: {str(exc)[:200]}",
                   "invalid_cases") from exc
    cases = value.get("cases") if isinstance(value, Mapping) else value
    if not isinstance(cases, list):
        raise _bad("the cases file holds no list of cases", "invalid_cases")
    out: dict[str, Mapping[str, Any]] = {}
    for i, case in enumerate(cases):
        if not isinstance(case, Mapping) or not isinstance(case.get("id"), str) or not all(
                isinstance(case.get(k, []), list) and all(isinstance(x, str) for x in case.get(k, []))
                for k in ("sources", "answer_patterns", "forbidden_patterns")):
            raise _bad(f"case {i} needs an id and string lists sources, answer_patterns, "
                       "forbidden_patterns", "invalid_cases", index=i)
        validate_rule(case_rule(case))  # a bad or unsafe pattern fails before anything runs
        out[case["id"]] = case
    return out


def case_rule(case: Mapping[str, Any]) -> TaskRule:
    """The semantic rule a case implies: its answer and forbidden patterns."""
    return TaskRule(description=case.get("question"),
                    answer_patterns=tuple(case.get("answer_patterns", ())),
                    forbidden_patterns=tuple(case.get("forbidden_patterns", ())))


def simulate(events: Sequence[NewEvent], head: int = 0) -> list[Any]:
    """The planned events as the log will hold them (positions from ``head`` + 1, no hash):
    run any projection on them without a database (tests, dry runs)."""
    import datetime as dt

    from tracestore.events import StoredEvent

    at = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    versions: dict[str, int] = {}
    out = []
    for offset, new in enumerate(events, start=head + 1):
        versions[new.stream] = versions.get(new.stream, 0) + 1
        out.append(StoredEvent(position=offset, id=new.id, stream=new.stream,
                               version=versions[new.stream], type=new.event.type,
                               schema_version=1, recorded_at=at, trace_id=new.trace_id,
                               event=new.event, hash=""))
    return out
