"""Every error code the source raises or writes in a JSON error, found by reading the source
(``ast``), for tests/test_error_codes.py.

A code is *used* where

- an error class (a subclass of ``TracestoreError``) is built with ``code="…"``, or declares
  ``code = "…"`` in its body (the class default);
- a *forwarder* -- a function with a ``code`` parameter that builds an error (or an error
  dict) with ``code=code`` -- is called with a literal for that parameter, or declares a
  literal default for it;
- an error is built with ``code=code`` where ``code`` is assigned in the same function: every
  string literal in the assignment (``code = a if … else "invalid_json"``);
- a dict literal is a JSON error: ``{"error": "…"}``, or ``{"code": "…", "message": …}``;
- a stream truncation (``Truncation(…, code)``) or a strict-JSON failure kind
  (``StrictJSONError(…, "kind")``) is made, or a binding ``inconsistency`` returns its
  ``("code", message)``: these travel into errors as ``truncation.code``, ``exc.kind`` and
  ``problem[0]``.

Any other non-literal ``code=`` given to an error class is a *pass-through* and must be one
of ``PASS_THROUGH`` (the code of an error already raised, caught and re-raised or reported):
a new kind of indirection fails the test until it is looked at.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "tracestore"

#: ``code=`` expressions that carry the code of an error made elsewhere.
PASS_THROUGH = frozenset({
    "exc.code", "e.code", "failure.code", "truncation.code", "reading.truncation.code",
    "problem[0]", "getattr(exc, 'code', 'invalid_json')",
})

#: (class, position of the code argument) whose literals are codes that end in errors.
CODE_SOURCES = {"Truncation": 2, "StrictJSONError": 1}


@dataclass(frozen=True)
class Use:
    code: str
    path: str
    line: int
    exit_code: int | None  # the raising class's, None for JSON dicts and HTTP bodies


@functools.cache
def _parsed() -> tuple[tuple[str, ast.Module], ...]:
    return tuple((path.relative_to(ROOT).as_posix(), ast.parse(path.read_text(encoding="utf-8")))
                 for path in sorted(PACKAGE.rglob("*.py")))


def _modules() -> Iterator[tuple[str, ast.Module]]:
    yield from _parsed()


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _class_constant(stmt: ast.stmt, name: str) -> object:
    """The literal ``name = …`` / ``name: T = …`` of a class-body statement, else None."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target, value = stmt.targets[0], stmt.value
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        target, value = stmt.target, stmt.value
    else:
        return None
    if _name(target) == name and isinstance(value, ast.Constant):
        return value.value
    return None


def _error_classes(modules: list[tuple[str, ast.Module]]) -> dict[str, int]:
    """Error class name → exit code (``TracestoreError`` and every subclass)."""
    bases: dict[str, list[str]] = {}
    exits: dict[str, int] = {}
    for _, tree in modules:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases[node.name] = [n for b in node.bases if (n := _name(b))]
                for stmt in node.body:
                    value = _class_constant(stmt, "exit_code")
                    if isinstance(value, int):
                        exits[node.name] = value
    found = {"TracestoreError": exits["TracestoreError"]}
    changed = True
    while changed:
        changed = False
        for name, parents in bases.items():
            parent = next((p for p in parents if p in found), None)
            if name not in found and parent is not None:
                found[name] = exits.get(name, found[parent])
                changed = True
    return found


def _strings(node: ast.AST) -> Iterator[str]:
    """The string literals of an expression, but not getattr's attribute name."""
    if isinstance(node, ast.Call) and _name(node.func) == "getattr":
        for arg in node.args[2:]:
            yield from _strings(arg)
        return
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
        return
    for child in ast.iter_child_nodes(node):
        yield from _strings(child)


def _code_kw(call: ast.Call) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == "code"), None)


def _error_dict_code(node: ast.Dict) -> ast.expr | None:
    keys = {k.value: v for k, v in zip(node.keys, node.values)
            if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    if "message" not in keys:  # (a JSON error always says what went wrong)
        return None
    if "error" in keys and not isinstance(keys["error"], ast.Dict):
        return keys["error"]
    return keys.get("code")


@dataclass
class _Forwarder:
    index: int  # position of ``code`` among the call's positional arguments
    exit_code: int | None


def _functions(tree: ast.Module) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def _forwarders(modules: list[tuple[str, ast.Module]], classes: dict[str, int],
                ) -> dict[tuple[str, str], _Forwarder]:
    """(module path, function name) → forwarder, to a fixed point (forwarders of
    forwarders)."""
    found: dict[tuple[str, str], _Forwarder] = {}
    changed = True
    while changed:
        changed = False
        for path, tree in modules:
            for fn in _functions(tree):
                params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
                if (path, fn.name) in found or "code" not in params + [
                        a.arg for a in fn.args.kwonlyargs]:
                    continue
                exit_code: int | None = None
                forwards = False
                for node in ast.walk(fn):
                    if isinstance(node, ast.Call):
                        callee = _name(node.func) or ""
                        value = _code_kw(node)
                        if callee in classes and isinstance(value, ast.Name) and value.id == "code":
                            forwards, exit_code = True, classes[callee]
                        elif value is not None and _name(value) == "code" and (
                                fwd := _forwarder(found, path, callee)) is not None:
                            forwards, exit_code = True, fwd.exit_code
                    elif isinstance(node, ast.Dict):
                        value = _error_dict_code(node)
                        if isinstance(value, ast.Name) and value.id == "code":
                            forwards = True
                if forwards:
                    index = params.index("code") if "code" in params else -1
                    if params and params[0] in ("self", "cls"):
                        index -= 1
                    found[(path, fn.name)] = _Forwarder(index, exit_code)
                    changed = True
    return found


def _forwarder(found: dict[tuple[str, str], _Forwarder], path: str, name: str,
               ) -> _Forwarder | None:
    """The forwarder a call of ``name`` in module ``path`` reaches: the module's own, else
    the one of that name elsewhere when there is exactly one."""
    if (path, name) in found:
        return found[(path, name)]
    others = [f for (p, n), f in found.items() if n == name]
    return others[0] if len(others) == 1 else None


def uses() -> list[Use]:
    """Every place a code is raised or written in a JSON error, with its exit code."""
    modules = list(_modules())
    classes = _error_classes(modules)
    forwarders = _forwarders(modules, classes)
    out: list[Use] = []
    for path, tree in modules:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name in classes:
                for stmt in node.body:
                    value = _class_constant(stmt, "code")
                    if isinstance(value, str):
                        out.append(Use(value, path, stmt.lineno, classes[node.name]))
        for fn in _functions(tree):
            if (path, fn.name) in forwarders:  # a literal default of the code parameter
                args = fn.args
                pos = [*args.posonlyargs, *args.args]
                pairs = list(zip(pos[len(pos) - len(args.defaults):], args.defaults))
                pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d]
                for arg, default in pairs:
                    if arg.arg == "code" and isinstance(default, ast.Constant):
                        out.append(Use(default.value, path, fn.lineno,
                                       forwarders[(path, fn.name)].exit_code))
            assigned = [n.value for n in ast.walk(fn) if isinstance(n, ast.Assign)
                        and any(_name(t) == "code" for t in n.targets)]
            for node in ast.walk(fn):
                if isinstance(node, ast.Call) and _name(node.func) in classes:
                    value = _code_kw(node)
                    if isinstance(value, ast.Name) and value.id == "code" and assigned:
                        for rhs in assigned:
                            out += [Use(s, path, node.lineno, classes[_name(node.func) or ""])
                                    for s in _strings(rhs)]
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                callee = _name(node.func) or ""
                value = _code_kw(node)
                if callee in classes:
                    if isinstance(value, ast.Constant):
                        out.append(Use(value.value, path, node.lineno, classes[callee]))
                elif (fwd := _forwarder(forwarders, path, callee)) is not None:
                    if value is None and 0 <= fwd.index < len(node.args):
                        value = node.args[fwd.index]
                    if isinstance(value, ast.Constant):
                        out.append(Use(value.value, path, node.lineno, fwd.exit_code))
                elif callee in CODE_SOURCES and len(node.args) > CODE_SOURCES[callee]:
                    arg = node.args[CODE_SOURCES[callee]]
                    if isinstance(arg, ast.Constant):
                        out.append(Use(arg.value, path, node.lineno, None))
            elif isinstance(node, ast.Dict):
                value = _error_dict_code(node)
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    out.append(Use(value.value, path, node.lineno, None))
            elif (isinstance(node, ast.FunctionDef) and node.name == "inconsistency"):
                for ret in ast.walk(node):
                    if (isinstance(ret, ast.Return) and isinstance(ret.value, ast.Tuple)
                            and isinstance(ret.value.elts[0], ast.Constant)):
                        out.append(Use(ret.value.elts[0].value, path, ret.lineno, None))
    # Module constants named in code sources (``Truncation(..., TRUNCATED_FRAME)``).
    constants = {t.id: n.value.value for _, tree in modules for n in tree.body
                 if isinstance(n, (ast.Assign, ast.AnnAssign))
                 for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                 if isinstance(t, ast.Name) and isinstance(n.value, ast.Constant)
                 and isinstance(n.value.value, str)}
    for path, tree in modules:
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and (_name(node.func) or "") in CODE_SOURCES:
                index = CODE_SOURCES[_name(node.func) or ""]
                if len(node.args) > index and isinstance(node.args[index], ast.Name):
                    name = node.args[index].id  # type: ignore[attr-defined]
                    if name in constants:
                        out.append(Use(constants[name], path, node.lineno, None))
            if isinstance(node, ast.FunctionDef) and node.name == "tail_code":
                for ret in ast.walk(node):
                    if isinstance(ret, ast.Return) and ret.value is not None:
                        out += [Use(constants[n.id], path, ret.lineno, None)
                                for n in ast.walk(ret.value)
                                if isinstance(n, ast.Name) and n.id in constants]
    return out


def unresolved() -> list[str]:
    """``code=`` expressions given to an error class that are neither literals, a
    forwarder's ``code`` parameter, a local ``code`` variable, nor a known pass-through."""
    modules = list(_modules())
    classes = _error_classes(modules)
    forwarders = _forwarders(modules, classes)
    bad = []
    for path, tree in modules:
        for fn in [*_functions(tree)]:
            params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
            assigned = any(isinstance(n, ast.Assign) and any(_name(t) == "code" for t in n.targets)
                           for n in ast.walk(fn))
            for node in ast.walk(fn):
                if not isinstance(node, ast.Call):
                    continue
                callee = _name(node.func) or ""
                value = _code_kw(node)
                if value is None or isinstance(value, ast.Constant):
                    continue
                if callee not in classes and _forwarder(forwarders, path, callee) is None:
                    continue
                if isinstance(value, ast.Name) and value.id == "code" and (
                        "code" in params or assigned):
                    continue
                if ast.unparse(value) not in PASS_THROUGH:
                    bad.append(f"{path}:{node.lineno}: code={ast.unparse(value)}")
    return sorted(set(bad))
