"""Administration commands: connections, members, tokens, restrictions, frozen, tools, audit."""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

import typer

from toolcrib.cli.common import (
    DatabaseOption,
    JsonOption,
    console,
    emit,
    err_console,
    escape,
    fail,
    read_as_operator,
    run_as_operator,
)
from toolcrib.errors import ConfigError, ConnectionInactive, InBandError, InvalidArguments

if TYPE_CHECKING:  # each command imports the gateway itself, so that `--help` does not (#13)
    from toolcrib.gateway.audit.entries import AuditFilter
    from toolcrib.gateway.core import Gateway
    from toolcrib.gateway.reading import Reading
    from toolcrib.policy.gates import Principal

__all__ = [
    "audit_app",
    "connections_app",
    "frozen_app",
    "members_app",
    "restrictions_app",
    "tokens_app",
    "tools_app",
]

connections_app = typer.Typer(no_args_is_help=True, help="Upstream MCP servers.")
members_app = typer.Typer(no_args_is_help=True, help="Members and roles.")
tokens_app = typer.Typer(no_args_is_help=True, help="Personal access tokens.")
restrictions_app = typer.Typer(no_args_is_help=True, help="Allow/block rules.")
frozen_app = typer.Typer(no_args_is_help=True, help="Frozen parameters.")
tools_app = typer.Typer(no_args_is_help=True, help="Connected tools.")
audit_app = typer.Typer(no_args_is_help=True, help="The audit trail.")


def _check(resource: str, op: str, **arguments: Any) -> None:
    """Validate by the operation's ``inputSchema``, the one the MCP and REST faces use (R-10.2)."""
    from toolcrib.gateway.operation_input import check_operation_input

    try:
        check_operation_input(resource, op, {k: v for k, v in arguments.items() if v is not None})
    except InBandError as exc:
        fail(exc)


def _pairs(items: list[str] | None, flag: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"{flag} takes KEY=VALUE, not {item!r}")
        out[key] = value
    return out


@connections_app.command("add")
def connections_add(
    name: str,
    connector: str | None = typer.Option(
        None, "--connector", help="Connector label, e.g. Notion (from a registry: its title)."
    ),
    from_registry: str | None = typer.Option(
        None, "--from-registry", help="A registry entry SERVER[@VERSION] (R-13.9), e.g. io.github.x/time."
    ),
    input_: list[str] | None = typer.Option(
        None, "--input", help="KEY=VALUE an entry asks for (secret ones are sealed)."
    ),
    command: str | None = typer.Option(
        None, "--command", help='Stdio server command, e.g. "mcp-server-time".'
    ),
    url: str | None = typer.Option(None, "--url", help="Streamable HTTP URL."),
    env: list[str] | None = typer.Option(None, "--env", help="KEY=VALUE for a stdio server (secret)."),
    header: list[str] | None = typer.Option(None, "--header", help="KEY=VALUE HTTP header (secret)."),
    oauth: bool = typer.Option(False, "--oauth", help="Authorize at the server with OAuth 2.1."),
    client_id: str | None = typer.Option(None, "--client-id", help="OAuth client registered by hand."),
    client_secret: str | None = typer.Option(None, "--client-secret", help="Its secret (secret)."),
    scope: str | None = typer.Option(None, "--scope", help="OAuth scopes to ask for."),
    per_member: bool = typer.Option(
        False, "--per-member", help="With --oauth, each member authorizes their own account."
    ),
    new_tools: str = typer.Option(
        "accept", "--new-tools", help="A tool new to it at a later sync: accept, or hold for review."
    ),
    pin: bool = typer.Option(
        True, "--pinning/--no-pinning", help="Hold a tool whose definition changed until accepted."
    ),
    database: str | None = DatabaseOption,
    as_json: bool = JsonOption,
) -> None:
    """Connect an MCP server and sync its catalog.

    Its tools' definitions are pinned as they are now: a later sync that changes one holds it
    until `toolcrib tools accept` (R-13.4); ``--no-pinning`` installs changes as they come.

    With ``--oauth`` the authorize URL is printed (on stderr; under ``--json`` also in the JSON):
    open it, authorize, and the provider sends you to the serving gateway's ``/oauth/callback``;
    this command waits for that (up to the link's lifetime) and prints the connection.
    """
    from toolcrib.gateway.connections import manage as connections

    if new_tools not in ("accept", "review"):
        fail(
            InvalidArguments(
                "--new-tools takes accept or review", [{"pointer": "/pinning", "message": "unknown"}]
            )
        )
    pinning = new_tools if pin else "off"
    if from_registry is not None:
        client = {
            "client_id": client_id,
            "client_secret": client_secret,
            "scope": scope,
            "per_member": per_member,
        }
        oauth_value = connections.oauth_option(oauth, client)
        given = {"--command": command, "--url": url, "--env": env, "--header": header}
        _add_from_registry(
            name, from_registry, input_, connector, pinning, given, oauth_value, database, as_json
        )
        return
    if connector is None:
        fail(InvalidArguments("--connector is required", [{"pointer": "/connector", "message": "required"}]))
    _check("connections", "create", name=name, connector=connector, command=command, url=url, pinning=pinning)
    env_map, header_map = _pairs(env, "--env"), _pairs(header, "--header")
    client = {
        "client_id": client_id,
        "client_secret": client_secret,
        "scope": scope,
        "per_member": per_member,
    }
    oauth_value = connections.oauth_option(oauth, client)

    async def add(gw: Gateway, op: Principal) -> Any:
        return await connections.add_connection(
            gw,
            name,
            connector=connector,
            command=command,
            url=url,
            env=env_map,
            headers=header_map,
            oauth=oauth_value,
            actor=op,
            pinning=pinning,
        )

    _connect(database, as_json, add)


def _add_from_registry(
    name: str,
    reference: str,
    inputs: list[str] | None,
    connector: str | None,
    pinning: str,
    given: dict[str, Any],
    oauth_value: bool | dict[str, Any] | None,
    database: str | None,
    as_json: bool,
) -> None:
    """``connections add NAME --from-registry SERVER[@VERSION] --input KEY=VALUE ...`` (R-13.9): the
    gateway function MCP's and REST's ``connections create`` with ``from_registry`` call; with
    ``--oauth`` the authorization is waited for here, as for any URL (the flow lives in this
    process). A ``--command``, ``--url``, ``--env`` or ``--header`` beside it is refused."""
    from toolcrib.gateway.connections.registry import adding

    extra = [flag for flag, value in given.items() if value]
    if extra:
        errors = [
            {"pointer": "/" + f.removeprefix("--"), "message": "not with --from-registry"} for f in extra
        ]
        fail(InvalidArguments(f"--from-registry defines the connection: not with {', '.join(extra)}", errors))
    arguments = {"name": name, "from_registry": reference, "inputs": inputs, "connector": connector}
    _check("connections", "create", **arguments, pinning=pinning)

    async def add(gw: Gateway, op: Principal) -> Any:
        return await adding.add_from_registry(
            gw,
            name,
            reference,
            inputs=adding.parse_inputs(inputs),
            actor=op,
            connector=connector,
            pinning=pinning,
            oauth=oauth_value,
        )

    _connect(database, as_json, add)


def _connect(
    database: str | None, as_json: bool, add: Callable[[Gateway, Principal], Awaitable[Any]]
) -> None:
    """Run ``add`` as the operator, print the connection (after its authorization, if it waits for
    one) and exit non-zero unless it ended active: ``connections add`` with or without a registry."""

    async def work(gw: Gateway, op: Principal) -> dict[str, Any]:
        return await _authorized(gw, await add(gw, op))

    view = run_as_operator(database, work)
    emit(view, as_json)
    _exit_unless_active(view, as_json)


async def _authorized(gw: Gateway, row: Any) -> dict[str, Any]:
    """The connection's view; for one waiting for its authorization, the operator's own start link
    printed first (R-13.6: it is the gateway's page, never the provider's URL) and the view once
    the authorization ended (#14). The flow lives in this process (it holds the PKCE verifier), so
    the command stays until it ends: a link it left behind could not be used."""
    from toolcrib.gateway.connections import manage as connections
    from toolcrib.gateway.connections import upstream_oauth as oauth

    view = connections.connection_view(row)
    url = view.get("authorize_url")
    if not url:
        return view
    err_console.print(f"Authorize {escape(row.name)} at its provider: {escape(url)}", soft_wrap=True)
    err_console.print(
        "Waiting for the authorization to complete (Ctrl-C gives up; the link then stops working)..."
    )
    return connections.connection_view(await oauth.wait_authorized(gw, row.name))


def _exit_unless_active(view: dict[str, Any], as_json: bool) -> None:
    """A connection left in error is a failed command: exit 1, the reason on stderr (#13)."""
    if view.get("status") == "active":
        return
    if not as_json:  # the JSON printed already carries the status and the reason
        reason = view.get("reason") or "no reason recorded"
        err_console.print(
            f"[red]{ConnectionInactive.code}[/red]: {escape(str(view.get('name')))} is "
            f"{escape(str(view.get('status')))}: {escape(str(reason))}"
        )
    raise typer.Exit(1)


@connections_app.command("list")
def connections_list(database: str | None = DatabaseOption, as_json: bool = JsonOption) -> None:
    """Connections with status, reason and tool count."""
    from toolcrib.gateway.connections import shown

    async def work(reading: Reading, op: Principal) -> list[dict[str, Any]]:
        return [shown.connection_view(r) for r in await shown.read_connections(reading, op)]

    emit(
        read_as_operator(database, work),
        as_json,
        columns=["name", "connector", "status", "tools", "reason", "target"],
    )


@connections_app.command("refresh")
def connections_refresh(
    name: str,
    database: str | None = DatabaseOption,
    as_json: bool = JsonOption,
) -> None:
    """Re-read a connection's catalog (an OAuth connection needing it: print a link to authorize)."""
    from toolcrib.gateway.connections import manage as connections

    _check("connections", "refresh", name=name)

    async def work(gw: Gateway, op: Principal) -> dict[str, Any]:
        return await _authorized(gw, await connections.refresh_connection(gw, name, op))

    view = run_as_operator(database, work)
    emit(view, as_json)
    _exit_unless_active(view, as_json)


@connections_app.command("remove")
def connections_remove(name: str, database: str | None = DatabaseOption) -> None:
    """Remove a connection and its catalog."""
    from toolcrib.gateway.connections import manage as connections

    _check("connections", "delete", name=name)
    run_as_operator(database, lambda gw, op: connections.remove_connection(gw, name, op))
    console.print(f"removed {name}")


@members_app.command("add")
def members_add(
    name: str,
    role: str = typer.Option(..., "--role"),
    database: str | None = DatabaseOption,
    as_json: bool = JsonOption,
) -> None:
    """Add a member with a role."""
    from toolcrib.gateway.identity import members

    _check("members", "invite", name=name, role=role)

    async def work(gw: Gateway, op: Principal) -> dict[str, Any]:
        return members.member_view(await members.add_member(gw.store, name, role, op))

    emit(run_as_operator(database, work), as_json)


@members_app.command("list")
def members_list(database: str | None = DatabaseOption, as_json: bool = JsonOption) -> None:
    """Members with role and status."""
    from toolcrib.gateway.identity import members

    async def work(reading: Reading, op: Principal) -> list[dict[str, Any]]:
        return [members.member_view(m) for m in await members.list_members(reading.store, op)]

    emit(read_as_operator(database, work), as_json, columns=["name", "role", "status"])


@members_app.command("set-role")
def members_set_role(
    name: str,
    role: str,
    unpin: bool = typer.Option(False, "--unpin", help="Let the identity provider's groups re-map it."),
    database: str | None = DatabaseOption,
) -> None:
    """Change a member's role (takes effect within the policy cache time). The role is pinned
    against the identity provider's groups unless --unpin."""
    from toolcrib.gateway.identity import members

    _check("members", "update_role", name=name, role=role)

    run_as_operator(database, lambda gw, op: members.set_role(gw.store, name, role, op, pinned=not unpin))
    console.print(f"{name} is now {role}" + ("" if unpin else " (pinned)"))


@members_app.command("suspend")
def members_suspend(name: str, database: str | None = DatabaseOption) -> None:
    """Suspend a member (their next call fails)."""
    from toolcrib.gateway.identity import members

    _check("members", "suspend", name=name)
    run_as_operator(database, lambda gw, op: members.suspend_member(gw.store, name, op))
    console.print(f"suspended {name}")


@members_app.command("remove")
def members_remove(name: str, database: str | None = DatabaseOption) -> None:
    """Remove a member and revoke their grants."""
    from toolcrib.gateway.identity import members

    _check("members", "remove", name=name)
    run_as_operator(database, lambda gw, op: members.remove_member(gw.store, name, op))
    console.print(f"removed {name}")


@tokens_app.command("create")
def tokens_create(
    member: str = typer.Option(..., "--member"),
    scopes: str | None = typer.Option(
        None, "--scopes", help="Comma-separated (default: mcp:tools,mcp:read,mcp:write)."
    ),
    expires: float | None = typer.Option(None, "--expires", help="Days until it expires."),
    database: str | None = DatabaseOption,
    as_json: bool = JsonOption,
) -> None:
    """Create a personal access token; it is printed once."""
    from toolcrib.gateway.identity import members

    scopes = scopes or members.DEFAULT_SCOPES.replace(" ", ",")
    _check("grants", "create", member=member, scopes=scopes)

    async def work(gw: Gateway, op: Principal) -> dict[str, Any]:
        grant, token = await members.create_token(gw.store, member, str(scopes), expires, actor=op)
        return {"id": grant.id, "token": token}

    out = run_as_operator(database, work)
    if as_json:
        emit(out, True)
    else:
        console.print(f"token {out['id']} (shown once):\n{out['token']}")


@tokens_app.command("list")
def tokens_list(
    member: str | None = typer.Option(None, "--member"),
    database: str | None = DatabaseOption,
    as_json: bool = JsonOption,
) -> None:
    """Grants (never the tokens themselves)."""
    from toolcrib.gateway.identity import members

    _check("grants", "list", member=member)

    async def work(reading: Reading, op: Principal) -> list[dict[str, Any]]:
        return [members.grant_view(g) for g in await members.list_tokens(reading.store, member, actor=op)]

    emit(
        read_as_operator(database, work),
        as_json,
        columns=["id", "member", "scopes", "expires_at", "revoked"],
    )


@tokens_app.command("revoke")
def tokens_revoke(grant_id: str, database: str | None = DatabaseOption) -> None:
    """Revoke a grant (its next call fails)."""
    from toolcrib.gateway.identity import members

    _check("grants", "revoke", id=grant_id)
    run_as_operator(database, lambda gw, op: members.revoke_token(gw.store, grant_id, op))
    console.print(f"revoked {grant_id}")


@restrictions_app.command("add")
def restrictions_add(
    effect: str = typer.Option(..., "--effect", help="allow or block"),
    role: str | None = typer.Option(None, "--role"),
    user: str | None = typer.Option(None, "--user"),
    connector: str | None = typer.Option(None, "--connector"),
    account: str | None = typer.Option(None, "--account"),
    tool: str | None = typer.Option(
        None,
        "--tool",
        help="Exact name (allow) or glob (block) of a tool; it names prompts and resources alike.",
    ),
    database: str | None = DatabaseOption,
    as_json: bool = JsonOption,
) -> None:
    """Add an allow or block rule for a role or a user."""
    from toolcrib.gateway.governance import restrictions

    if (role is None) == (user is None):
        raise typer.BadParameter("give exactly one of --role or --user")
    target_kind, target = ("role", role) if role else ("user", user)
    _check(
        "restrictions",
        "create",
        effect=effect,
        target_kind=target_kind,
        target=target,
        connector=connector,
        account=account,
        tool=tool,
    )

    async def work(gw: Gateway, op: Principal) -> dict[str, Any]:
        rule = await restrictions.add_restriction(
            gw.store,
            effect=effect,
            target_kind=target_kind,
            target=target or "",
            connector=connector,
            account=account,
            tool=tool,
            actor=op,
        )
        return restrictions.rule_view(rule, gw.catalog.tools)

    emit(run_as_operator(database, work), as_json)


@restrictions_app.command("list")
def restrictions_list(database: str | None = DatabaseOption, as_json: bool = JsonOption) -> None:
    """Every rule, in words."""
    from toolcrib.gateway.governance import restrictions

    async def work(gw: Gateway, op: Principal) -> list[dict[str, Any]]:
        return [
            restrictions.rule_view(r, gw.catalog.tools)
            for r in await restrictions.list_restrictions(gw.policy, op)
        ]

    emit(run_as_operator(database, work), as_json, columns=["id", "description", "status"])


@restrictions_app.command("remove")
def restrictions_remove(rule_id: str, database: str | None = DatabaseOption) -> None:
    """Delete a rule."""
    from toolcrib.gateway.governance import restrictions

    _check("restrictions", "delete", id=rule_id)
    run_as_operator(database, lambda gw, op: restrictions.remove_restriction(gw.store, rule_id, op))
    console.print(f"removed {rule_id}")


@restrictions_app.command("explain")
def restrictions_explain(
    tool: str,
    user: str | None = typer.Option(None, "--user"),
    role: str | None = typer.Option(None, "--role"),
    database: str | None = DatabaseOption,
    as_json: bool = JsonOption,
) -> None:
    """Which rules decide whether a user (or role) reaches ``account__tool``."""
    from toolcrib.gateway.governance import restrictions

    _check("restrictions", "explain", tool=tool, user=user, role=role)

    async def work(gw: Gateway, op: Principal) -> list[str]:
        return await restrictions.explain_restriction(gw, user=user, role=role, tool=tool, actor=op)

    lines = run_as_operator(database, work)
    if as_json:
        emit(lines, True)
    else:
        for line in lines:
            console.print(line)


@frozen_app.command("set")
def frozen_set(
    account: str,
    tool: str,
    param: str,
    json_value: str,
    secret: bool | None = typer.Option(
        None,
        "--secret/--no-secret",
        help="Keep the value secret: sealed, never shown again, redacted from results. "
        "Default: secret when PARAM's name says credential (key, token, password, ...).",
    ),
    database: str | None = DatabaseOption,
) -> None:
    """Freeze PARAM of ACCOUNT's TOOL to JSON_VALUE."""
    from toolcrib.gateway.governance import restrictions
    from toolcrib.policy.frozen import ACTIVE

    _check("frozen", "set", account=account, tool=tool, param=param, value=json_value, secret=secret)
    try:
        value = json.loads(json_value)
    except (ValueError, RecursionError):
        fail(
            InvalidArguments("`value` must be JSON text", [{"pointer": "/value", "message": "not JSON text"}])
        )

    async def work(gw: Gateway, op: Principal) -> tuple[bool, str]:
        kept = await restrictions.set_frozen(gw, op, account, tool, param, value, secret)
        return kept, restrictions.frozen_state(gw.catalog.tools, account, tool, param)

    kept_secret, status = run_as_operator(database, work)
    notes = [n for n, on in (("secret", kept_secret), (status, status != ACTIVE)) if on]
    console.print(f"froze {account}__{tool}.{param}" + (f" ({', '.join(notes)})" if notes else ""))


@frozen_app.command("unset")
def frozen_unset(account: str, tool: str, param: str, database: str | None = DatabaseOption) -> None:
    """Unfreeze a parameter."""
    from toolcrib.gateway.governance import restrictions

    _check("frozen", "unset", account=account, tool=tool, param=param)

    async def work(gw: Gateway, op: Principal) -> None:
        await restrictions.unset_frozen(gw, op, account, tool, param)

    run_as_operator(database, work)
    console.print(f"unfroze {account}__{tool}.{param}")


@frozen_app.command("list")
def frozen_list(database: str | None = DatabaseOption, as_json: bool = JsonOption) -> None:
    """Every frozen parameter; a secret one shows as "secret, set", never its value; each with its
    status: active, waiting for the tool (not listed yet), or held (the tool lacks the parameter)."""
    from toolcrib.gateway.governance import restrictions
    from toolcrib.policy.frozen import SECRET_SHOWN

    async def work(gw: Gateway, op: Principal) -> list[dict[str, Any]]:
        return await restrictions.list_frozen(gw, op)

    rows = run_as_operator(database, work)
    if not as_json:
        rows = [{**r, "value": SECRET_SHOWN if r["secret"] else r["value"]} for r in rows]
    emit(rows, as_json, columns=["account", "tool", "param", "value", "status"])


@tools_app.command("list")
def tools_list(
    connection: str | None = typer.Option(None, "--connection", help="Only this connection's tools."),
    database: str | None = DatabaseOption,
    as_json: bool = JsonOption,
) -> None:
    """The connected tools (models find them with search; they are never listed to a model)."""
    from toolcrib.gateway.discovery.tools import list_tools

    rows = run_as_operator(database, lambda gw, op: list_tools(gw, op, connection))
    emit(rows, as_json, columns=["name", "connection", "status", "risk", "description"])


@tools_app.command("changes")
def tools_changes(
    connection: str | None = typer.Option(None, "--connection", help="Only this connection's changes."),
    database: str | None = DatabaseOption,
    as_json: bool = JsonOption,
) -> None:
    """Tools held because their server changed them since they were accepted, with the diff (R-13.4)."""
    from toolcrib.gateway.connections import pins

    _check("tools", "changes", account=connection)

    async def work(gw: Gateway, op: Principal) -> list[dict[str, Any]]:
        return await pins.list_changes(gw, op, connection)

    changes = run_as_operator(database, work)
    if as_json:
        emit(changes, True)
        return
    if not changes:
        console.print("No changes waiting: every tool runs as it was accepted.")
    for change in changes:
        name = f"{change['account']}__{change['tool']}"
        console.print(f"{change['kind']}: {name}  (sha256 {change['sha256']})", markup=False, highlight=False)
        console.print(change["diff"], markup=False, highlight=False, end="")
        console.print(f"accept: toolcrib tools accept {change['account']} {change['tool']}\n", markup=False)


@tools_app.command("accept")
def tools_accept(
    account: str,
    tool: str,
    sha256: str | None = typer.Option(None, "--sha256", help="Only if it still offers this definition."),
    database: str | None = DatabaseOption,
    as_json: bool = JsonOption,
) -> None:
    """Accept the definition a held tool offers now: it is searchable and runs again."""
    from toolcrib.gateway.connections import pins

    _check("tools", "accept", account=account, tool=tool, sha256=sha256)

    async def work(gw: Gateway, op: Principal) -> dict[str, Any]:
        return await pins.accept_change(gw, op, account, tool, sha256)

    emit(run_as_operator(database, work), as_json)


@tools_app.command("reject")
def tools_reject(
    account: str, tool: str, database: str | None = DatabaseOption, as_json: bool = JsonOption
) -> None:
    """Keep a held tool held; it leaves `tools changes` until its server offers another definition."""
    from toolcrib.gateway.connections import pins

    _check("tools", "reject", account=account, tool=tool)

    async def work(gw: Gateway, op: Principal) -> dict[str, Any]:
        return await pins.reject_change(gw, op, account, tool)

    emit(run_as_operator(database, work), as_json)


@tools_app.command("classify")
def tools_classify(account: str, tool: str, risk: str, database: str | None = DatabaseOption) -> None:
    """Override a tool's classification: read, write, destructive or forbidden."""
    from toolcrib.gateway.governance import restrictions
    from toolcrib.policy.frozen import ACTIVE

    async def work(gw: Gateway, op: Principal) -> str:
        await restrictions.classify_tool(gw, account, tool, risk, op)
        return restrictions.tool_status(gw.catalog.tools, account, tool)

    status = run_as_operator(database, work)
    console.print(f"{account}__{tool} is {risk}" + (f" ({status})" if status != ACTIVE else ""))


def _time(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError as exc:
        raise typer.BadParameter(f"{text!r} is not an ISO date/time") from exc


def _filter(
    member: str | None,
    account: str | None,
    operation: str | None,
    outcome: str | None,
    since: str | None,
    until: str | None,
    limit: int,
) -> AuditFilter:
    from toolcrib.gateway.audit.entries import AuditFilter

    return AuditFilter(member, account, operation, outcome, _time(since), _time(until), limit)


@audit_app.command("search")
def audit_search(
    member: str | None = typer.Option(None, "--member"),
    account: str | None = typer.Option(None, "--account"),
    operation: str | None = typer.Option(None, "--operation"),
    outcome: str | None = typer.Option(None, "--outcome"),
    since: str | None = typer.Option(None, "--since", help="ISO date/time"),
    until: str | None = typer.Option(None, "--until", help="ISO date/time"),
    limit: int = typer.Option(100, "--limit"),
    database: str | None = DatabaseOption,
    as_json: bool = JsonOption,
) -> None:
    """Audit entries, newest first."""
    from toolcrib.gateway.audit import entries as audit

    f = _filter(member, account, operation, outcome, since, until, limit)
    _check(
        "audit",
        "search",
        member=member,
        account=account,
        operation=operation,
        outcome=outcome,
        since=f.since,
        until=f.until,
    )
    rows = run_as_operator(database, lambda gw, op: audit.search_audit(gw.store, op, f))
    cols = ["id", "member", "account", "operation", "classification", "outcome", "error_code", "target_id"]
    emit(rows, as_json, columns=cols)


@audit_app.command("export")
def audit_export(
    member: str | None = typer.Option(None, "--member"),
    account: str | None = typer.Option(None, "--account"),
    since: str | None = typer.Option(None, "--since", help="ISO date/time"),
    until: str | None = typer.Option(None, "--until", help="ISO date/time"),
    limit: int | None = typer.Option(None, "--limit", help="At most this many entries (default: all)"),
    database: str | None = DatabaseOption,
) -> None:
    """Export entries as JSON lines, oldest first, streamed a page at a time (archive before
    retention deletes them, R-11.4)."""
    from toolcrib.gateway.audit import entries as audit

    if limit is not None and limit < 1:
        raise ConfigError("--limit must be positive")
    f = _filter(member, account, None, None, since, until, 1)

    async def export(gw: Gateway, op: Principal) -> None:
        left = limit
        async for page in audit.stream_audit(gw.store, op, f):
            lines = page.splitlines(keepends=True)
            if left is not None:
                lines, left = lines[:left], left - min(left, len(lines))
            sys.stdout.write("".join(lines))
            if left == 0:
                return

    run_as_operator(database, export)
