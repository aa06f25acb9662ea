"""What every event kind's model shares (``models`` and ``more_models`` both build on it)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Destination = Literal["progress", "ui", "history", "export", "copy"]


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
