"""Recording an agent run live, with the verdicts the application actually logged.

    rec = Recorder("sqlite:///app.db")
    run = AgentRunRecorder(rec, "q42-agent", question="…", version="3.12", mode="agent",
                           limits={"model_calls": 9, "searches": 3, "reads": 4,
                                   "source_bytes": 4096, "seconds": 180},
                           task={"answer_patterns": ["overwrit"]})
    run.model_called(usage=response["usageMetadata"], request=body)
    i = run.proposed(decision)                 # the structured reply, exactly
    run.admitted(i)  /  run.refused(i, "unissued_source")
    run.observed("read", {"source_id": "path-write"}, visible_result)
    run.finished("answered", "citation_contract_passed", answer, citations, usage).status

Each call is one small transaction through the ``Recorder``'s store and lock, so a process
that dies mid-run leaves a ``pending`` attempt.  Unlike an ingested result file, every
verdict here is logged (``implied=False``); the release judge still re-derives them all.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from tracestore.agent import codes as C
from tracestore.ingest.agent import LIMIT_MAX, STATUSES
from tracestore.agent.run import LIMIT_NAMES, USAGE_NAMES
from tracestore.errors import InputError
from tracestore.events import (
    AttemptStarted, ModelCalled, ModelDecision, NewEvent, RunFinished, RunOpened,
    ToolObserved, attempt_stream,
)


def _json(value: Any, what: str) -> Any:
    try:
        return json.loads(json.dumps(value))  # JSON values only: they are stored forever
    except (TypeError, ValueError) as exc:
        raise InputError(f"{what} must be JSON values: {exc}", code="invalid_run") from exc


def _limits(limits: Mapping[str, Any]) -> dict[str, int]:
    out = {}
    for name in LIMIT_NAMES:
        value = limits.get(name)
        if type(value) is not int or not 1 <= value <= LIMIT_MAX[name]:
            raise InputError(f"limit {name}={value!r} is not an integer in "
                             f"1..{LIMIT_MAX[name]}", code="invalid_limits")
        out[name] = value
    return out


class AgentRunRecorder:
    """One agent run as one attempt (api ``agent-run``) of its own trace."""

    def __init__(self, recorder: Any, run_id: str, *, question: str, version: str,
                 limits: Mapping[str, Any], mode: Literal["agent", "fixed"] = "agent", model: str | None = None,
                 config: Mapping[str, Any] | None = None, task: Any = None,
                 trace_id: str | None = None) -> None:
        if mode not in ("agent", "fixed"):
            raise InputError(f"mode {mode!r} is not agent or fixed", code="invalid_run")
        opened = RunOpened(attempt_id=run_id, question=question, version=version, mode=mode,
                           limits=_limits(limits), model=model,
                           config=_json(dict(config), "config") if config else None)
        self.recorder = recorder
        self.run_id = run_id
        self.trace_id = trace_id or run_id
        self.calls = 0
        self.proposals: list[dict[str, Any]] = []
        self.observations = 0
        recorder.trace(self.trace_id, task=task, origin="live agent run",
                       comparison=f"agent run ({mode} path)")
        started = AttemptStarted(attempt_id=run_id, trace_id=self.trace_id, api=C.AGENT_API,
                                 reader="recorder",
                                 request={"model": model} if model else None)

        def build(view: Any) -> tuple[list[NewEvent], list[bytes]]:
            if view.read(stream=attempt_stream(run_id), limit=1):
                raise InputError(f"attempt {run_id!r} already exists; a run is recorded once",
                                 code="attempt_exists", attempt_id=run_id)
            return [self._new(started), self._new(opened)], []

        with recorder.lock:
            recorder.store.append_with(build)

    def _new(self, event: Any) -> NewEvent:
        return NewEvent(attempt_stream(self.run_id), event, trace_id=self.trace_id)

    def _append(self, *events: Any) -> None:
        with self.recorder.lock:
            self.recorder.store.append_with(lambda view: ([self._new(e) for e in events], []))

    def model_called(self, usage: Mapping[str, Any] | None = None,
                     request: Any = None) -> int:
        """A model request; ``usage`` as the provider reported it (None: absent, not 0)."""
        digest = None
        if request is not None:
            body = json.dumps(_json(request, "request"), sort_keys=True).encode()
            digest = hashlib.sha256(body).hexdigest()
        index, self.calls = self.calls, self.calls + 1
        self._append(ModelCalled(attempt_id=self.run_id, index=index, request_sha256=digest,
                                 usage=_json(dict(usage), "usage") if usage is not None
                                 else None))
        return index

    def proposed(self, decision: Any) -> int:
        """The model's structured reply, kept exactly; returns its index for the verdict."""
        if not isinstance(decision, Mapping):
            raise InputError(f"a decision must be an object, not a {type(decision).__name__}; "
                             "record the refusal with finished(\"failed\", \"invalid_decision\")",
                             code="non_object_decision")
        value = _json(dict(decision), "decision")
        index = len(self.proposals)
        self.proposals.append(value)
        self._append(ModelDecision(attempt_id=self.run_id, stage="proposed", decision=value,
                                   index=index))
        return index

    def _verdict(self, index: int, stage: str, code: str | None) -> None:
        if not 0 <= index < len(self.proposals):
            raise InputError(f"no proposal {index} in run {self.run_id!r}",
                             code="unknown_proposal")
        self._append(ModelDecision(attempt_id=self.run_id, stage=stage,  # type: ignore[arg-type]
                                   decision=self.proposals[index], reason=code, index=index))

    def admitted(self, index: int) -> None:
        self._verdict(index, "admitted", None)

    def refused(self, index: int, code: str) -> None:
        self._verdict(index, "refused", code)

    def observed(self, tool: str, arguments: Mapping[str, Any],
                 result: Mapping[str, Any]) -> None:
        """A tool result the application accepted (search metadata, or a read passage)."""
        if tool not in ("search", "read"):
            raise InputError(f"tool {tool!r} is not search or read", code="invalid_observation")
        index, self.observations = self.observations, self.observations + 1
        self._append(ToolObserved(attempt_id=self.run_id, index=index, tool=tool,  # type: ignore[arg-type]
                                  arguments=_json(dict(arguments), "arguments"),
                                  result=_json(dict(result), "result")))

    def finished(self, status: str, reason: str, answer: str = "",
                 citations: Sequence[Mapping[str, Any]] = (),
                 usage: Mapping[str, int] | None = None,
                 elapsed_seconds: float | None = None) -> Any:
        """How the run ended; returns the release decision re-derived from the log."""
        from tracestore.projections.release import decide_release
        from tracestore.ingest.decisions import record_decisions

        if status not in STATUSES:
            raise InputError(f"status {status!r} is not one of {', '.join(STATUSES)}",
                             code="invalid_run")
        if usage is not None and any(type(usage.get(n)) is not int for n in USAGE_NAMES):
            raise InputError(f"usage must hold integers {', '.join(USAGE_NAMES)}",
                             code="invalid_run")
        counters = None if usage is None else {n: usage[n] for n in USAGE_NAMES}
        self._append(RunFinished(attempt_id=self.run_id, status=status,  # type: ignore[arg-type]
                                 reason=reason, answer=answer,
                                 citations=tuple(_json([dict(c) for c in citations],
                                                       "citations")),
                                 usage=counters, elapsed_seconds=elapsed_seconds))
        with self.recorder.lock:  # the decision is final now: record it, as streams do
            record_decisions(self.recorder.store, self.trace_id)
            events = self.recorder.store.read(trace_id=self.trace_id)
        return decide_release(events, self.run_id)
