"""No gateway function acts without a principal, and none treats one as a bypass (#21, item 6).

"No actor" used to mean "the host operator: skip every check": any caller that forgot the
argument got full power. Every public gateway function that works on a ``Gateway`` now takes a
``Principal`` it cannot leave out; the command line passes the host's ``Operator``, an owner that
goes through the same checks as everyone. The few functions that take none are listed here by
name, each with why: they establish who is calling, or they are the gateway's own machinery that
no face reaches with arguments a caller chooses.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import toolcrib.gateway
from toolcrib.errors import PermissionRequired, ScopeRequired
from toolcrib.gateway.core import Gateway
from toolcrib.gateway.live_catalog import LiveCatalog
from toolcrib.gateway.policy_cache import PolicyCache
from toolcrib.gateway.storage import Storage
from toolcrib.policy.gates import Operator, Principal, permitted, require
from toolcrib.policy.scopes import SCOPES

ESTABLISH_WHO_CALLS: dict[tuple[str, str], str] = {
    ("identity.members", "init_owner"): "creates the first principal there is; refuses once an owner exists",
    ("identity.members", "operator_principal"): "makes the host operator's principal from the store",
    ("identity.idp", "complete_sign_in"): "the identity provider's answer becomes a signed-in member",
    ("identity.idp", "sign_in_member"): "verified claims become a member (created or re-mapped, R-7.8)",
    ("identity.idp", "mint_session"): "the session grant of a member who just signed in",
    ("identity.grants", "new_session_grant"): "the sign-in session of a person the sign-in just verified",
    ("identity.idp", "refresh_member"): "re-maps a member's role from the identity provider at refresh",
    (
        "connections.oauth_binding",
        "complete_callback",
    ): "a browser lands there from the provider; bound by state and cookie",
    (
        "connections.oauth_binding",
        "read_start",
    ): "the start page a browser opens; bound by its single-use link",
    (
        "connections.oauth_binding",
        "confirm_start",
    ): "the start page's confirmation; bound by its single-use link",
}
URL_HELPERS: dict[tuple[str, str], str] = {
    (
        "connections.shown",
        "secrets_of",
    ): "names the values a call's free text is redacted of; acts on nothing",
    ("connections.oauth_binding", "start_link"): "spells a link from a token; acts on nothing",
    ("connections.oauth_binding", "callback_cookie_path"): "reads a setting; acts on nothing",
}
BROWSER_PAGES = {k for k in ESTABLISH_WHO_CALLS if k[0] == "connections.oauth_binding"}
"""Pages a browser reaches without a grant: their ``signed_in`` is the console session if any
(``None``: none), never a principal to skip checks for."""
GATEWAY_MACHINERY: dict[tuple[str, str], str] = {
    (
        "connections.manage",
        "sync_connection",
    ): "a connection's catalog sync, started by the upstream or a checked act",
    ("audit.entries", "record_admin_act"): "writes the audit row of an act already decided, naming who acted",
    ("audit.retention", "prune_audit"): "housekeeping's retention round; takes no caller's input",
    (
        "connections.catalogs",
        "install_catalog",
    ): "makes a catalog a checked act or the follower stored live here",
    ("connections.catalogs", "reinstall"): "installs a connection as stored, after a checked act changed it",
    ("connections.catalogs", "forget_connection"): "takes a removed connection out of this process's memory",
    ("connections.catalogs", "sync_from_store"): "the follower's step: installs what other processes stored",
    (
        "connections.catalogs",
        "syncing",
    ): "marks a connection this process syncs, so the follower leaves it be",
    ("follower", "follow"): "the background follower of other processes' changes",
    (
        "connections.registry.adding",
        "reader_of",
    ): "binds the registries' reader to this gateway's settings, cache and address policy; reads nothing",
    ("follower", "on_change"): "reloads what another process announced it changed",
    ("follower", "poll_interval"): "reads the settings; acts on nothing",
    ("housekeeping", "heartbeat"): "the process's heartbeat loop",
    ("housekeeping", "housekeeping"): "the housekeeping loop",
    ("housekeeping", "housekeep"): "one housekeeping round under the lease; takes no caller's input",
    ("housekeeping", "recover_orphans"): "marks dead processes' calls unknown; takes no caller's input",
    ("housekeeping", "purge_expired"): "deletes what outlived its lifetime; takes no caller's input",
    (
        "identity.grants",
        "revoke_all",
    ): "revokes a member's grants when a checked act suspended or removed them",
    ("connections.upstream_oauth", "binding_of"): "how a checked call reaches its upstream grant",
    ("connections.upstream_oauth", "has_grant"): "whether the upstream grant exists, asked by the sync",
    (
        "connections.upstream_events",
        "on_tools_changed",
    ): "the upstream session's callback when its tools changed",
    ("connections.upstream_events", "on_auth_needed"): "the upstream session's callback when its grant died",
    (
        "connections.upstream_events",
        "on_offerings_changed",
    ): "the upstream session's callback when its prompts or resources changed (R-16.3)",
    ("connections.upstream_events", "on_authorized"): "the upstream flow's callback when it ended",
    (
        "connections.upstream_oauth",
        "wait_authorized",
    ): "the command line waits for the flow its checked act started",
}


def _gateway_functions() -> Iterator[tuple[str, str, Callable[..., Any]]]:
    prefix = "toolcrib.gateway."
    for info in pkgutil.walk_packages(toolcrib.gateway.__path__, prefix):
        if info.name.startswith(f"{prefix}orgfile."):
            continue  # the organization file's own modules: walked as one package, as before #33
        module = importlib.import_module(info.name)
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name)
            if inspect.isfunction(value):
                yield info.name.removeprefix(prefix), name, value


def _annotation(p: inspect.Parameter) -> str:
    """A parameter's annotation as written (the modules use ``from __future__ import annotations``)."""
    return p.annotation if isinstance(p.annotation, str) else getattr(p.annotation, "__name__", "")


PARTS = {Gateway.__name__, Storage.__name__, PolicyCache.__name__, LiveCatalog.__name__}
"""What a use case takes first (#33): the gateway, or only the part of it it uses (the settings
alone are no use case: helpers that read them are named in ``URL_HELPERS`` or the machinery)."""


def _takes_gateway(fn: Callable[..., Any]) -> bool:
    params = list(inspect.signature(fn).parameters.values())
    return bool(params) and _annotation(params[0]) in PARTS


def _requires_principal(fn: Callable[..., Any]) -> bool:
    return any(
        _annotation(p) == Principal.__name__ and p.default is inspect.Parameter.empty
        for p in inspect.signature(fn).parameters.values()
    )


def test_r7_1_every_public_gateway_function_requires_a_principal() -> None:
    exempt = ESTABLISH_WHO_CALLS.keys() | GATEWAY_MACHINERY.keys() | URL_HELPERS.keys()
    walked = [(m, n, fn) for m, n, fn in _gateway_functions() if _takes_gateway(fn)]
    assert len(walked) > 40  # the walk reaches the use cases, not an empty package
    missing = [f"{m}.{n}" for m, n, fn in walked if (m, n) not in exempt and not _requires_principal(fn)]
    assert missing == []


def test_r7_1_the_exempt_list_names_only_functions_that_exist_and_take_no_principal() -> None:
    found = {(m, n): fn for m, n, fn in _gateway_functions()}
    for key in ESTABLISH_WHO_CALLS.keys() | GATEWAY_MACHINERY.keys() | URL_HELPERS.keys():
        assert key in found, key
        assert not _requires_principal(found[key]), f"{key} takes a principal now: drop it from the list"


def test_r7_1_no_public_gateway_function_lets_the_principal_default_to_none() -> None:
    lax = [
        f"{m}.{n}({p.name})"
        for m, n, fn in _gateway_functions()
        if (m, n) not in BROWSER_PAGES
        for p in inspect.signature(fn).parameters.values()
        if "Principal" in _annotation(p) and "None" in _annotation(p)
    ]
    assert lax == []


def _operator(role: str, scopes: frozenset[str] = SCOPES) -> Operator:
    return Operator(member="op", role=role, scopes=scopes, grant_id="cli")


def test_r7_1_the_operator_goes_through_the_same_check_as_everyone() -> None:
    require(_operator("owner"), "members:write", "write")
    with pytest.raises(PermissionRequired):
        require(_operator("guest"), "members:write", "write")
    with pytest.raises(ScopeRequired):
        require(_operator("owner", frozenset({"mcp:read"})), "members:write", "write")


@pytest.mark.parametrize(
    ("role", "scopes", "expected"),
    [
        ("auditor", {"mcp:read"}, True),
        ("billing_admin", {"mcp:read"}, True),
        ("auditor", {"mcp:tools"}, False),  # the role would do, the grant's scope would not
        ("member", {"mcp:read"}, False),  # the scope would do, the role would not
    ],
)
def test_r14_1_metrics_and_console_pages_use_the_one_check_roles_and_scopes_both(
    role: str, scopes: set[str], expected: bool
) -> None:
    from toolcrib.web.admin.render import allowed
    from toolcrib.web.metrics import METRICS_PERMISSIONS

    principal = Principal(member="x", role=role, scopes=frozenset(scopes), grant_id="grt_x")
    assert permitted(principal, METRICS_PERMISSIONS, "read") is expected
    page = "audit" if role == "auditor" else "savings" if role == "billing_admin" else "audit"
    assert allowed(principal, page) is expected
