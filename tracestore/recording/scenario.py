"""The scenario format as a published JSON Schema, and steps that reference capture bytes.

A scenario step may name a capture instead of inline native objects:

    {"reader": "r1", "capture": "fixtures/real/anthropic/text-basic.sse", "until_byte": 512}

is every frame of that capture that ends within its first 512 bytes and was not played by
an earlier step of the same reader and capture (without ``until_byte``: to the end), in
capture order, as ``event`` steps.  So an application's interleaving over real captures is
replayed without hand-copied JSON; the frames come from the same decoders and frame
interpretation as ``ingest`` (``providers.capture.read_capture``).

``SCENARIO_SCHEMA`` is the format (``tracestore scenario-schema`` prints it; it is also
``docs/scenario.schema.json``).  ``validate_scenario_json`` checks a decoded scenario
against it with ``jsonschema`` and turns the first error into one sentence naming where.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tracestore.errors import InputError

_AT = {"type": "string", "description": "Wall-clock time the application observed the step "
                                         "(never used to order)."}
_ID = {"type": "string", "minLength": 1}

_STEPS: list[dict[str, Any]] = [
    {"title": "open", "description": "Create a reader bound to a new attempt.",
     "type": "object", "required": ["open", "attempt", "api"], "additionalProperties": False,
     "properties": {"open": _ID, "attempt": _ID, "api": {"type": "string"},
                    "retry_of": {"type": ["string", "null"]},
                    "request": {"type": ["object", "null"]}, "at": _AT}},
    {"title": "event", "description": "One native event as the provider sent it (decoded).",
     "type": "object", "required": ["reader", "event"], "additionalProperties": False,
     "properties": {"reader": _ID, "event": {},
                    "event_name": {"type": ["string", "null"]}, "at": _AT}},
    {"title": "capture", "description": "The frames of a capture file up to a byte offset.",
     "type": "object", "required": ["reader", "capture"], "additionalProperties": False,
     "properties": {"reader": _ID, "capture": {"type": "string", "minLength": 1},
                    "until_byte": {"type": "integer", "minimum": 0},
                    "provider": {"type": "string"}, "at": _AT}},
    {"title": "stop", "description": "The local Stop.", "type": "object",
     "required": ["reader", "local"], "additionalProperties": False,
     "properties": {"reader": _ID, "local": {"const": "stop"},
                    "by": {"type": ["string", "null"]}, "at": _AT}},
    {"title": "drain", "description": "How the transport ended.", "type": "object",
     "required": ["reader", "local", "outcome"], "additionalProperties": False,
     "properties": {"reader": _ID, "local": {"const": "drain"},
                    "outcome": {"enum": ["clean", "eof", "error", "reset"]},
                    "detail": {"type": ["string", "null"]}, "at": _AT}},
    {"title": "destination", "description": "What a real application wrote to a destination.",
     "type": "object", "required": ["destination", "text"], "additionalProperties": False,
     "properties": {"destination": {"enum": ["progress", "ui", "history", "export", "copy"]},
                    "text": {"type": "string"}, "reader": _ID, "attempt": _ID, "at": _AT}},
]

_TASK = {"type": ["object", "null"], "additionalProperties": False, "properties": {
    "description": {"type": ["string", "null"]},
    "answer_patterns": {"type": "array", "items": {"type": "string"}},
    "forbidden_patterns": {"type": "array", "items": {"type": "string"}},
    # who decides acceptance (the patterns, or a reviewer's `tracestore judge`)
    "semantic": {"enum": ["regex", "reviewer", None]}}}

SCENARIO_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://tracestore.invalid/scenario.schema.json",
    "title": "tracestore scenario",
    "description": "One trace's attempts, driven reader by reader in the order they happened "
                   "(tracestore replay).",
    "type": "object",
    "required": ["trace", "steps"],
    "additionalProperties": False,
    "properties": {
        "trace": _ID, "task": _TASK, "profile": {"type": ["string", "null"]},
        "comparison": {"type": ["string", "null"]}, "origin": {"type": ["string", "null"]},
        "destinations": {"enum": ["harness", "application"]},
        "description": {"type": ["string", "null"]}, "source": {"type": ["string", "null"]},
        "expected": {"type": ["object", "null"]}, "contract": {"type": ["object", "null"]},
        "binding": {"type": ["object", "null"]},
        "steps": {"type": "array", "items": {"oneOf": _STEPS}},
    },
}


def validate_scenario_json(data: Any) -> None:
    """Raise ``InputError(invalid_scenario)`` naming the first place ``data`` breaks the schema."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(SCENARIO_SCHEMA)
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is None:
        return
    path = list(error.absolute_path)
    where = "/".join(str(p) for p in path) or "the scenario"
    message = error.message
    context: dict[str, Any] = {"path": where}
    if len(path) >= 2 and path[0] == "steps" and isinstance(path[1], int):
        where, message = f"steps/{path[1]}", _step_message(data["steps"][path[1]])
        context = {"path": where, "step": path[1]}
    raise InputError(f"{where}: {message[:300]}", code="invalid_scenario", **context)


def _shape_of(step: dict[str, Any]) -> dict[str, Any] | None:
    """The step shape a step means, by its deciding key (as ``replay`` reads steps)."""
    by_title = {shape["title"]: shape for shape in _STEPS}
    for key in ("open", "event", "capture", "destination"):
        if key in step:
            return by_title[key]
    local = step.get("local")
    return by_title.get(local) if isinstance(local, str) else None


def _step_message(step: Any) -> str:
    """Why a step is not valid: its shape's first complaint."""
    import jsonschema

    if not isinstance(step, dict):
        return "a step must be a JSON object"
    shape = _shape_of(step)
    if shape is None:
        return "matches no step shape (open, event, capture, local stop/drain, destination)"
    first = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(shape).iter_errors(step))
    detail = first.message if first is not None else "not valid"
    where = "/".join(str(p) for p in first.absolute_path) if first is not None else ""
    return f"{shape['title']} step: {where + ': ' if where else ''}{detail}"


def expand_capture_steps(data: Any, load: Callable[[str], bytes],
                         origin: list[int] | None = None) -> Any:
    """``data`` with every capture step replaced by the event steps it stands for.

    ``load(path)`` returns a capture's bytes (the CLI resolves paths against the scenario's
    folder, then the working directory).  Scenarios without capture steps come back as given.
    ``origin``, when given, receives for each step of the result the index of the step it
    came from, so later errors can name the step as the author wrote it.

    A capture step is refused (``invalid_scenario``, naming the step) when its reader is not
    opened yet, its bytes are another provider's events than the reader was opened for, its
    ``until_byte`` is past the capture's end, or goes back before bytes the same reader
    already played from it: each would otherwise replay silently as something else.
    """
    if not isinstance(data, dict) or not isinstance(data.get("steps"), list):
        return data
    if not any(isinstance(s, dict) and "capture" in s for s in data["steps"]):
        if origin is not None:
            origin.extend(range(len(data["steps"])))
        return data
    readings: dict[str, tuple[Any, int]] = {}  # capture path → (reading, size in bytes)
    opened: dict[str, Any] = {}                # reader → the api it was opened for
    reached: dict[tuple[str, str], int] = {}   # (reader, capture) → byte played up to
    played: dict[tuple[str, str], int] = {}    # (reader, capture) → frames already played
    steps: list[Any] = []
    for index, step in enumerate(data["steps"]):
        if not (isinstance(step, dict) and "capture" in step):
            if isinstance(step, dict) and isinstance(step.get("open"), str):
                opened.setdefault(step["open"], step.get("api"))
            steps.append(step)
            if origin is not None:
                origin.append(index)
            continue
        reader, path = step["reader"], step["capture"]
        if reader not in opened:
            raise _bad_capture(index, f"reader {reader!r} is used before it is opened")
        if path not in readings:
            readings[path] = _read(index, path, load(path), step.get("provider", "auto"))
        reading, size = readings[path]
        _check_capture_step(index, step, reading.provider, opened[reader], size,
                            reached.get((reader, path), 0))
        key = (reader, path)
        until = step.get("until_byte")
        reached[key] = size if until is None else until
        start = played.get(key, 0)
        frames = [f for f in reading.frames[start:]
                  if until is None or f.offset + f.length <= until]
        played[key] = start + len(frames)
        for frame in frames:
            event: dict[str, Any] = {"reader": reader, "event": frame.native}
            if frame.event_name is not None:
                event["event_name"] = frame.event_name
            if "at" in step:
                event["at"] = step["at"]
            steps.append(event)
            if origin is not None:
                origin.append(index)
    return {**data, "steps": steps}


def _bad_capture(index: int, message: str) -> InputError:
    return InputError(f"steps/{index}: {message}", code="invalid_scenario", step=index)


def _read(index: int, path: str, raw: bytes, provider: str) -> tuple[Any, int]:
    from tracestore.providers.capture import read_capture

    try:
        return read_capture(raw, provider=provider, filename=path), len(raw)
    except InputError as exc:
        raise InputError(f"steps/{index}: capture {path}: {exc.message}",
                         code="invalid_scenario", step=index) from exc


def _check_capture_step(index: int, step: dict[str, Any], provider: str, api: Any,
                        size: int, reached: int) -> None:
    from tracestore.recording.stream import compatible_api

    path, reader, until = step["capture"], step["reader"], step.get("until_byte")
    if isinstance(api, str) and not compatible_api(provider, api):
        raise _bad_capture(index, f"capture {path} holds {provider} events, but reader "
                                  f"{reader!r} was opened for {api}")
    if until is not None and until > size:
        raise _bad_capture(index, f"until_byte {until} is past the end of capture {path} "
                                  f"({size} bytes)")
    if until is not None and until < reached:
        raise _bad_capture(index, f"until_byte {until} goes back: reader {reader!r} already "
                                  f"played capture {path} up to byte {reached}")


def capture_path(scenario: Path, name: str, *, cwd: Path | None = None) -> Path:
    """Where a capture step's file is: beside the scenario, else in the working directory,
    and never outside the folder it is found in.

    Refused (``capture_path_escapes``): an absolute path, a ``..`` component, and a name
    that resolves -- through symlinks -- outside that folder.  A scenario from elsewhere
    can therefore not make ``replay`` read (and store) ``/etc/shadow`` or ``~/.ssh/id_rsa``.
    """
    import os

    relative = Path(name)
    if relative.is_absolute() or ".." in relative.parts or "\x00" in name:
        raise InputError(f"capture path {name!r} must be relative to the scenario's folder, "
                         "without '..'", code="capture_path_escapes", capture=name)
    roots = [scenario.parent, cwd if cwd is not None else Path.cwd()]
    for root in roots:
        candidate = root / relative
        if not os.path.lexists(candidate):
            continue
        real_root = os.path.realpath(root)
        real = os.path.realpath(candidate)
        if os.path.commonpath([real_root, real]) != real_root:
            raise InputError(f"capture path {name!r} leads outside {root} (through a "
                             "symlink)", code="capture_path_escapes", capture=name)
        return candidate
    return scenario.parent / relative  # does not exist: the reader says file_not_found


__all__ = ["SCENARIO_SCHEMA", "capture_path", "expand_capture_steps",
           "validate_scenario_json"]
