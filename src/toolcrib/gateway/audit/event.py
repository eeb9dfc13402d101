"""An audit entry as a stream event (R-11.4): the JSON every sink carries.

The shape follows OCSF's *API Activity* class (6003) where its fields fit (``time``, ``actor.user``,
``api.operation``, ``api.service``, ``resources``, ``status``/``status_code``/``status_detail``,
``duration``, ``metadata.product``); toolcrib's own fields without an OCSF home sit under
``unmapped``, as OCSF does it. ``docs/audit-event.schema.json`` documents it, and a test validates
real events against it. ``id`` is the event's stable id: the same on every redelivery and for every
sink, so a receiver drops duplicates by it. Nothing beyond the audit entry (R-11.2) is in it: no
argument besides the target id, no result.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SCHEMA_VERSION", "event"]

SCHEMA_VERSION = "1.0"
"""The event format's version (``metadata.version``): a field added keeps it, a change bumps it."""

_STATUS = {"ok": ("Success", 1), "unknown": ("Unknown", 0)}


def _ms(seconds: float | None) -> int | None:
    return None if seconds is None else round(seconds * 1000)


def event(event_id: str, entry: dict[str, Any]) -> dict[str, Any]:
    """The stream event of the final audit ``entry`` (a row of the audit table)."""
    outcome = str(entry["outcome"])
    status, status_id = _STATUS.get(outcome, ("Failure", 2))
    target = entry.get("target_id")
    return {
        "id": event_id,
        "time": _ms(entry["started_at"]),
        "start_time": _ms(entry["started_at"]),
        "end_time": _ms(entry.get("finished_at")),
        "duration": entry.get("duration_ms"),
        "class_uid": 6003,
        "class_name": "API Activity",
        "category_uid": 6,
        "category_name": "Application Activity",
        "activity_name": entry.get("kind") or "call",
        "actor": {"user": {"name": entry["member"], "uid": entry["member"]}},
        "api": {
            "operation": entry["operation"],
            "service": {"name": entry["connector"], "uid": entry["account"]},
        },
        "resources": [{"uid": target, "type": "target"}] if target is not None else [],
        "status": status,
        "status_id": status_id,
        "status_code": outcome,
        "status_detail": entry.get("error_code"),
        "metadata": {
            "version": SCHEMA_VERSION,
            "product": {"name": "toolcrib", "vendor_name": "toolcrib"},
            "uid": event_id,
        },
        "unmapped": {
            "audit_id": entry["id"],
            "account": entry["account"],
            "grant_id": entry["grant_id"],
            "classification": entry["classification"],
            "approved": bool(entry["approved"]),
            "approved_by": entry.get("approved_by"),
            "instance": entry.get("instance"),
        },
    }
