"""Judges of attempt apis that are not provider streams, registered by their module.

``release.ReleaseJudge.for_attempt`` dispatches on data (``JUDGES``) instead of importing
the agent-run judge (which imports ``tracestore.agent``): no import circle, and judging a
provider stream -- ``tracestore release`` -- never loads the agent packages, because a
judge named in ``LAZY_JUDGES`` is imported the first time its api is asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracestore.projections.release import ReleaseJudge


class _Judges(dict):  # type: ignore[type-arg]
    """api -> judge class.  A judge whose module is named in ``LAZY_JUDGES`` is imported
    the first time its api is asked for (or the registry is listed), so judging a provider
    stream -- ``tracestore release`` -- never loads the agent packages."""

    def _load(self, api: str | None = None) -> None:
        import importlib

        for name, module in LAZY_JUDGES.items():
            if (api is None or api == name) and not dict.__contains__(self, name):
                importlib.import_module(module)  # registers itself (``register_judge``)

    def get(self, api: Any, default: Any = None) -> Any:
        if api in LAZY_JUDGES:
            self._load(api)
        return dict.get(self, api, default)

    def __getitem__(self, api: Any) -> Any:
        if api in LAZY_JUDGES:
            self._load(api)
        return dict.__getitem__(self, api)

    def __contains__(self, api: object) -> bool:
        if api in LAZY_JUDGES:
            self._load(str(api))
        return dict.__contains__(self, api)

    def items(self) -> Any:
        self._load()
        return dict.items(self)

    def keys(self) -> Any:
        self._load()
        return dict.keys(self)

    def values(self) -> Any:
        self._load()
        return dict.values(self)

    def __iter__(self) -> Any:
        self._load()
        return dict.__iter__(self)

    def __len__(self) -> int:
        self._load()
        return dict.__len__(self)


#: Judges of attempt apis that are not provider streams, registered by their module:
#: dispatch as data, no import circle.  ``LAZY_JUDGES`` names the module of each (it is
#: imported when its api is first judged); ``agent_release`` checks its api is named here.
JUDGES: dict[str, type[ReleaseJudge]] = _Judges()
LAZY_JUDGES: dict[str, str] = {"agent-run": "tracestore.projections.agent_release"}


def register_judge(api: str, judge_class: type[ReleaseJudge]) -> None:
    """Judge attempts started with ``api`` by ``judge_class`` (same interface)."""
    JUDGES[api] = judge_class


