"""The exact record: an upstream tool as it is, the source of truth for execution (SPEC R-4.1)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["ExactRecord", "canonical_json", "schema_hash"]


def canonical_json(value: Any) -> str:
    """Sorted keys, no spaces: the canonical form hashed by R-4.3."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def schema_hash(schema: Any) -> str:
    """SHA-256 of the canonical JSON of an input schema (R-4.3)."""
    return hashlib.sha256(canonical_json(schema).encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class ExactRecord:
    """One upstream tool, exactly as its server listed it, plus what toolcrib derived from it.

    ``aliases`` maps each model-facing alias to the exact provider field name (R-4.4); it is
    private and never shown to the model. ``refused`` holds the reason a tool is kept out of
    search and execution (R-4.2), or ``None``.
    """

    account: str
    connector: str
    name: str
    description: str
    input_schema: dict[str, Any]
    schema_hash: str
    aliases: dict[str, str]
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] = field(default_factory=dict)
    refused: str | None = None

    @property
    def public_name(self) -> str:
        """``{account}__{tool}``: the name the model uses (SPEC section 1)."""
        return f"{self.account}__{self.name}"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ExactRecord:
        return cls(**data)
