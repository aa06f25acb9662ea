"""Derivers about the trace and the rules that judged the attempt: comparison, revisions,
profile, semantic rule, origin, tool authority and remote cancellation.
"""

from __future__ import annotations

import json
from typing import Any

from tracestore.agent.codes import AGENT_API
from tracestore.events import CaptureStored, FrameReceived, SemanticJudged, StoredEvent, TaskRevised
from tracestore.projections import reasons as R
from tracestore.projections.profiles import PROFILES, Profile
from tracestore.review.context import Derived, ReviewContext, deriver
from tracestore.review.wording import MAX_LISTED, grouped, listed, plural, spread


def _profile(ctx: ReviewContext) -> Profile | None:
    return PROFILES.get(ctx.view.profile) if ctx.view.profile else None


def _profile_cites(ctx: ReviewContext) -> tuple[int | None, ...]:
    """The start event (api), plus trace.opened when the trace named the profile."""
    named = ctx.trace is not None and ctx.trace.profile is not None
    return ctx.start.position, ctx.trace_position if named else None


@deriver("comparison")
def comparison(ctx: ReviewContext) -> Derived | None:
    """The comparison pair/revision exactly as the trace recorded it."""
    if ctx.trace is None or not ctx.trace.comparison:
        return None
    return Derived.of(ctx.trace.comparison, ctx.trace_position)


def _setting(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


#: Where providers name the model inside a native event: top-level keys, then the same
#: keys one level down in the envelopes that nest the response (Responses, Messages).
_MODEL_KEYS = ("model", "modelVersion")
_MODEL_ENVELOPES = ("response", "message", "interaction")


def _model_in(native: object) -> str | None:
    if not isinstance(native, dict):
        return None
    for holder in (native, *(native.get(e) for e in _MODEL_ENVELOPES)):
        if isinstance(holder, dict):
            for key in _MODEL_KEYS:
                if isinstance(holder.get(key), str) and holder[key]:
                    return str(holder[key])
    return None


def observed_model(ctx: ReviewContext) -> tuple[str, int] | None:
    """The model the attempt's own bytes name first, and the position of that frame."""
    for stored in ctx.attempt_events():
        if isinstance(stored.event, FrameReceived):
            model = _model_in(stored.event.native)
            if model is not None:
                return model, stored.position
    return None


def _model_part(ctx: ReviewContext) -> tuple[str, int | None]:
    seen = observed_model(ctx)
    if seen is None:
        return "model UNKNOWN (the bytes do not name it)", None
    return f"model {seen[0]} (named by the bytes at #{seen[1]})", seen[1]


def _request_part(ctx: ReviewContext) -> str:
    request = "; ".join(f"{k}={_setting(v)}" for k, v in (ctx.started.request or {}).items())
    return f"request settings: {request}" if request else (
        "request settings UNKNOWN (not recorded, not in the bytes)")


@deriver("attempt_profile")
def attempt_profile(ctx: ReviewContext) -> Derived:
    """API, profile, the model the bytes name, and the request settings recorded."""
    s = ctx.started
    model, model_at = _model_part(ctx)
    return Derived.of(f"api {s.api}; profile {ctx.view.profile or 'none fits'}; {model}; "
                      f"{_request_part(ctx)}", *_profile_cites(ctx), model_at)


@deriver("source_settings")
def source_settings(ctx: ReviewContext) -> Derived | None:
    """The comparison as recorded, else the API and the model the bytes name; UNKNOWN when
    neither the trace nor the bytes say anything about the source."""
    recorded = comparison(ctx)
    if recorded is not None:
        return recorded
    seen = observed_model(ctx)
    if seen is None and not ctx.started.request:
        return None
    model, model_at = _model_part(ctx)
    return Derived.of(f"api {ctx.started.api}; {model}; {_request_part(ctx)}",
                      ctx.start.position, model_at)


def _application_reader(ctx: ReviewContext) -> str:
    """What the log says about the APPLICATION's reader/parser (seed 003: NOT PROVIDED when
    none was recorded).  tracestore's own reader re-derives, it is not the application's."""
    request = ctx.started.request or {}
    for key in ("reader_revision", "client", "sdk"):
        if isinstance(request.get(key), str) and request[key]:
            return f"application {key.replace('_', ' ')} {request[key]} (recorded at start)"
    ran = any(e.event.type == "destination.written" and e.event.source == "application"
              for e in ctx.attempt_events()) or any(
        isinstance(e.event, CaptureStored) and e.event.framing != "projection"
        or e.event.type == "capture.segment" for e in ctx.attempt_events())
    if ran:
        return "NOT PROVIDED; the application's reader/parser revision is not in the log"
    return ("NOT PROVIDED; no integration executed (no application capture, reader or "
            "destination write recorded)")


@deriver("reader_revision", reads_version=True)
def reader_revision(ctx: ReviewContext) -> Derived:
    """The application's reader revision (NOT PROVIDED unless recorded), then the running
    tracestore and policy that re-derived the record and the reader the events name.

    The version is the running one (passed in as data), not whichever version ingested the
    events; a recorded decision under another policy is named so the difference shows.
    """
    s = ctx.started
    parts = [_application_reader(ctx),
             f"tracestore {ctx.version} (release policy {R.POLICY_VERSION}) re-derived this "
             f"record", f"reader {s.reader or 'unnamed'} ({s.api} normalizer)"]
    recorded = ctx.recorded_decision()
    if recorded is not None:
        parts.append(f"decision recorded at #{recorded.position} under policy "
                     f"{recorded.event.policy_version}")
    return Derived.of("; ".join(parts), ctx.start.position,
                      recorded.position if recorded else None)


def _terminal_rules(profile: Profile) -> str:
    groups: dict[str, list[str]] = {}
    for rule in profile.terminals:
        label = rule.stop_reason or f"status {rule.status}"
        groups.setdefault(rule.outcome, []).append(label)
    return "; ".join(f"{outcome}: {', '.join(labels)}" for outcome, labels in groups.items())


@deriver("output_profile")
def output_profile(ctx: ReviewContext) -> Derived:
    """What the profile accepts and what it excludes (held for review)."""
    p = _profile(ctx)
    if p is None:
        return Derived.of(f"No release profile fits api {ctx.started.api}: nothing can be "
                          "released", *_profile_cites(ctx))
    blocks = plural(p.max_text_blocks, "text block")
    tools = "allowed" if p.tools_allowed else "excluded"
    reasoning = "allowed" if p.reasoning_allowed else "excluded"
    value = (f"{p.name} ({p.api}): up to {blocks}; tools {tools}; reasoning {reasoning}; "
             f"terminals {_terminal_rules(p)}; unknown forms and stop reasons held for review; "
             f"metadata {'required' if p.metadata_required else 'not required (absence noted)'}")
    return Derived.of(value, *_profile_cites(ctx))


@deriver("semantic_rule")
def semantic_rule(ctx: ReviewContext) -> Derived | None:
    """The task's acceptance rule (data) and the verdict, if one was reached."""
    if ctx.trace is None:
        return None
    task = ctx.trace.task
    cited: list[int | None] = [ctx.trace_position]
    if task is not None and task.semantic == "reviewer":
        rule = (f"{task.description or 'rule without description'} — acceptance decided by "
                "a reviewer's recorded verdict (tracestore judge), not by patterns")
    elif (task is None or not (task.answer_patterns or task.forbidden_patterns)) \
            and ctx.decision.contract is not None:
        rule = "No semantic rule: the output contract is the acceptance rule"
    elif task is None or not (task.answer_patterns or task.forbidden_patterns):
        rule = "No semantic rule: no answer can be accepted"
    else:
        rule = (f"{task.description or 'rule without description'} — "
                f"{len(task.answer_patterns)} required and {len(task.forbidden_patterns)} "
                "forbidden patterns, case-insensitive on NFC text; no exact-string equality")
    revised = [e for e in ctx.events if isinstance(e.event, TaskRevised)
               and e.event.trace_id == ctx.started.trace_id]
    if revised:  # the decision uses the newest rule; the record says which and cites it
        last = revised[-1]
        rule += (f"; rule revised to v{last.event.version} at #{last.position}"
                 + (f" by {last.event.by}" if last.event.by else ""))
        cited.append(last.position)
    judged = next((e for e in ctx.attempt_events() if isinstance(e.event, SemanticJudged)), None)
    j = ctx.decision.judgement
    if judged is not None:
        failed = judged.event.failed_patterns
        verdict = f"verdict {judged.event.verdict} at #{judged.position}" + (
            f" ({len(failed)} patterns failed)" if failed else "")
        cited.append(judged.position)
    elif j is not None:
        verdict = f"verdict {j.verdict} (recomputed, not recorded)"
    elif ctx.decision.decided_at_position is not None:
        verdict = (f"not judged: the attempt was {ctx.decision.status} at "
                   f"#{ctx.decision.decided_at_position}, before acceptance")
        cited.append(ctx.decision.decided_at_position)
    elif task is not None and task.semantic == "reviewer":
        verdict = "awaiting a reviewer's verdict"
    else:
        verdict = "not judged yet"
    if judged is not None and judged.event.by != "rule":
        verdict += f" by {judged.event.by}" + (" (unsigned)" if judged.event.key_id is None
                                               else f" (key {judged.event.key_id})")
    from tracestore.review.derive_attempt import contract_summary

    contract = contract_summary(ctx)
    if contract is not None:
        verdict += f"; {contract}"
        cited.append(ctx.decision.decided_at_position)
    return Derived.of(f"{rule}; {verdict}", *cited)


@deriver("trace_origin")
def trace_origin(ctx: ReviewContext) -> Derived | None:
    """Where the events came from: the recorded origin and any stored capture bytes."""
    captures = [e for e in ctx.attempt_events() if isinstance(e.event, CaptureStored)]
    segments = [e for e in ctx.attempt_events() if e.event.type == "capture.segment"]
    if ctx.trace is None and not captures and not segments:
        return None
    origin = ctx.trace.origin if ctx.trace else None
    if origin is None and any(c.event.framing == "projection" for c in captures):
        # A decoded JSON array may be synthetic or a real capture someone decoded: only
        # ``ingest --origin`` can say which, and nothing here guesses.
        origin = ("origin not stated: a decoded JSON array, synthetic projection or decoded "
                  "capture (ingest --origin says which)")
    parts = [origin or "origin not recorded"]
    for c in captures:
        ev = c.event
        parts.append(f"capture {ev.filename or 'unnamed'} ({ev.framing}, {ev.size} bytes, "
                     f"sha256 {ev.sha256}) at #{c.position}")
    cited = [c.position for c in captures]
    if segments:
        parts.append(_live_segments(segments))
        cited.append(segments[-1].position)
    if not captures and not segments:
        parts.append("no raw capture bytes stored")
    return Derived.of("; ".join(parts), ctx.trace_position, *cited)


def _live_segments(segments: list) -> str:
    """A live recording's bytes: segments, size, and the whole stream's hash once drained."""
    total = sum(s.event.size for s in segments)
    final = next((s for s in segments if s.event.final), None)
    ending = (f"stream sha256 {final.event.stream_sha256} (final segment at #{final.position})"
              if final is not None else "no final segment: the stream did not drain")
    return f"live recording: {len(segments)} capture segments, {total} bytes, {ending}"


@deriver("authority")
def authority(ctx: ReviewContext) -> Derived | None:
    """Whether any tool or effect was configured, proposed, admitted or refused."""
    if ctx.started.api == AGENT_API:  # an agent run: its decisions, admitted or refused
        from tracestore.review.agent import authority as agent_authority

        return agent_authority(ctx)
    p = _profile(ctx)
    if p is None:
        return None
    tools = [a for a in ctx.view.anomalies if a.code == R.TOOL_USE_NOT_ALLOWED]
    decisions = [e for e in ctx.attempt_events() if e.event.type == "model.decision"]
    parts = [f"Profile {p.name} {'allows' if p.tools_allowed else 'configures no'} tools"]
    if not (p.tools_allowed or tools or decisions):
        # Seed 003's summary, when each of its three parts is shown by the events.
        parts.insert(0, "No tool configured, proposed or authorized")
    groups = grouped(("tool", "", a.detail or a.native_type, a.position) for a in tools)
    if tools:
        parts.append("tool use observed and held, never dispatched: " + listed(
            [f"{name} at {spread(ps)}" for (_, _, name), ps in groups.items()]))
    else:
        parts.append(f"no tool use observed in {ctx.view.frames} frames")
    if decisions:
        parts.append("model decisions: " + listed(
            [f"{e.event.stage} at #{e.position}" for e in decisions]))
    else:
        parts.append("no model decision proposed, admitted or refused")
    return Derived.of("; ".join(parts), *_profile_cites(ctx),
                      *(p for ps in groups.values() for p in (ps[0], ps[-1])),
                      *(e.position for e in decisions[:MAX_LISTED]))


#: The receipt kinds that speak for the provider's side of a Stop (the templates'
#: ``pass_evidence`` for remote cancellation).
RECEIPT_KINDS = ("cancellation_receipt", "provider_receipt")


def receipts(ctx: ReviewContext) -> list[StoredEvent]:
    """The provider-side receipts attached to the attempt (``tracestore evidence``).  Told
    apart by the type string first: reading a record without one defines no evidence model."""
    return [e for e in ctx.attempt_events() if e.type == "evidence.attached"
            and getattr(e.event, "kind", None) in RECEIPT_KINDS]


@deriver("remote_cancellation")
def remote_cancellation(ctx: ReviewContext) -> Derived | None:
    """The provider-side receipts attached to the attempt, as attached: a local Stop is
    not a receipt, so without one the field stays UNKNOWN.

    The value names each receipt (kind, file, size, sha256, its note) and cites its
    ``evidence.attached`` event; what the receipt proves is the reviewer's to judge.
    """
    found = receipts(ctx)
    if not found:
        return None
    items = []
    for stored in found:
        e: Any = stored.event
        name = f" {e.filename}" if e.filename else ""
        note = f": {e.note}" if e.note else ""
        items.append(f"{e.kind}{name} ({plural(e.size, 'byte')}, sha256 {e.sha256[:16]}) "
                     f"at #{stored.position}{note}")
    return Derived.of(f"Receipt attached: {listed(items)}", *(e.position for e in found))
