"""Each object of an organization file is the arguments of the operation that makes it (#33).

The file's sections and the operations' typed models are written in two places; these checks fail
when one gains a field the other cannot carry, and show that every object of a full file passes its
operation's ``inputSchema``, the one every face validates by.
"""

from __future__ import annotations

from typing import Any

import pytest

from toolcrib.gateway.orgfile.arguments import SECTION_OPERATIONS, check_as_operation, operation_arguments
from toolcrib.gateway.orgfile.checks import Known, check_file
from toolcrib.gateway.orgfile.models import OrgFile
from toolcrib.operations import spec

FULL = """
connections:
  - {name: desk, connector: Helpdesk, url: "https://desk.example.com/mcp", pinning: review,
     oauth: {client_id: c1, client_secret: s1, scope: read, per_member: true}}
  - {name: clock, from_registry: io.github.example/time@1.0.0, inputs: {tz: UTC}}
  - {name: local, connector: Files, command: [mcp-server-files, --root, /srv]}
members:
  - {name: ada, role: admin}
restrictions:
  - {effect: block, role: member, account: desk, tool: "delete_*"}
  - {effect: allow, user: ada, connector: Helpdesk, account: desk}
frozen:
  - {account: desk, tool: create_ticket, parameter: queue, value: {id: 7}, secret: false}
approvals:
  - {risk: destructive, account: desk, role: member}
limits:
  - {member: ada, account: desk, tool: create_ticket, per_minute: 5, per_day: 100}
  - {role: member, per_day: 50}
"""

FILE_ONLY: dict[str, set[str]] = {
    "connections": {"env", "headers"},  # connections create on MCP and REST takes no secrets
}
"""Fields of a file section its operation does not take, with the reason beside each."""

OPERATION_ONLY: dict[str, set[str]] = {
    "approvals": {"required"},  # a rule in the file is required by being there; absent ones are unset
}
"""Fields of an operation the file does not need, with the reason beside each."""


def _org() -> OrgFile:
    return check_file(FULL, "full.yaml", Known(), environ={}).org


@pytest.mark.parametrize("section", sorted(SECTION_OPERATIONS))
def test_every_object_of_a_full_file_passes_its_operations_input_schema(section: str) -> None:
    items = getattr(_org(), section)
    assert items
    for item in items:
        check_as_operation(section, item)  # InvalidArguments if the operation would refuse it


@pytest.mark.parametrize("section", sorted(SECTION_OPERATIONS))
def test_a_file_section_and_its_operation_carry_the_same_fields(section: str) -> None:
    resource, operation = SECTION_OPERATIONS[section]
    model_fields = set(spec(resource, operation).arguments.model_fields)
    given: set[str] = set()
    for item in getattr(_org(), section):
        arguments: dict[str, Any] = operation_arguments(item)
        assert set(arguments) <= model_fields, f"{section}: {set(arguments) - model_fields}"
        given |= set(arguments)
    section_fields = set(OrgFile.model_fields[section].annotation.__args__[0].model_fields)  # type: ignore[union-attr]
    carried = given | FILE_ONLY.get(section, set())
    renamed = {"parameter", "role", "user", "oauth", "inputs"}  # carried under another name or shape
    assert section_fields - carried - renamed == set(), section
    assert model_fields - given - OPERATION_ONLY.get(section, set()) == set(), section
