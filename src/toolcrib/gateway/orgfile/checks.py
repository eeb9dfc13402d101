"""An organization file checked whole before anything changes (#26): shape, rules, references.

Three passes, every problem collected with its line and column (:class:`FileError`):

1. the shape, by the pydantic models (:mod:`.models`: unknown keys, wrong types, vocabularies);
2. each object as the arguments of the operation that makes it, by that operation's
   ``inputSchema`` (:mod:`.arguments`, derived from its typed model), then by the gateway's own
   validators, the ones its REST, MCP and command-line faces reach: a connection's
   ``check_definition``, a restriction's ``validate_rule``, an approval rule's
   ``validate_approval_rule``, a limit's ``validate_limit``, a member's name pattern; then
   duplicates, and names a rule uses that neither the file nor the database has (an account, a
   member);
3. secret references resolved (:mod:`.refs`): a missing one is an error naming it.

A tool a connection has not listed is no error here nor at ``apply`` (R-13.8: policy may name what
is not there yet; the object waits for the tool); a frozen parameter a listed tool does not declare
is refused by ``apply`` once the file's connections are synced, before any other object changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from toolcrib.catalog.server_json import split_reference
from toolcrib.errors import ConfigError, InvalidArguments
from toolcrib.gateway.connections.definition import check_definition
from toolcrib.gateway.identity.members import _MEMBER as MEMBER_NAME
from toolcrib.gateway.orgfile.arguments import SECTION_OPERATIONS, check_as_operation
from toolcrib.gateway.orgfile.loading import FileError, Marks, Path, Problem, load_text
from toolcrib.gateway.orgfile.models import OrgFile
from toolcrib.gateway.orgfile.refs import Unresolved, has_reference, resolve
from toolcrib.policy.approvals import ApprovalRule, validate_approval_rule
from toolcrib.policy.frozen import is_secret
from toolcrib.policy.rate_limits import LimitRule, validate_limit
from toolcrib.policy.rules import Rule, validate_rule

__all__ = ["Desired", "Known", "check_file"]


@dataclass(frozen=True, slots=True)
class Known:
    """What the database already has, for references the file does not define itself."""

    accounts: frozenset[str] = frozenset()
    members: frozenset[str] = frozenset()


@dataclass(slots=True)
class Desired:
    """A checked file: its objects with secrets resolved, and where each one was written."""

    org: OrgFile
    marks: Marks
    source: str
    frozen_secret: list[bool] = field(default_factory=list)
    """Per ``org.frozen`` item: whether its value is kept secret (R-9.2; a referenced value is)."""

    def problem(self, path: Path, message: str) -> FileError:
        return FileError(self.source, [self.marks.problem(path, message)])


def check_file(text: str, source: str, known: Known, environ: Mapping[str, str] | None = None) -> Desired:
    """The file's desired organization, or :class:`FileError` listing every problem."""
    data, marks = load_text(text, source)
    if not isinstance(data, dict):
        raise FileError(source, [marks.problem((), "the file must be a mapping of sections")])
    try:
        org = OrgFile.model_validate(data)
    except ValidationError as exc:
        raise FileError(source, [_pydantic_problem(marks, e) for e in exc.errors()]) from None
    problems: list[Problem] = []
    _objects(org, known, marks, problems)
    if problems:
        raise FileError(source, problems)
    desired = _resolved(org, marks, source, environ, problems)
    if problems:
        raise FileError(source, problems)
    return desired


def _pydantic_problem(marks: Marks, error: Any) -> Problem:
    path = tuple(error["loc"])
    if error["type"] == "extra_forbidden":
        return marks.problem(path, "unknown key", key=True)
    if error["type"] == "missing":
        return marks.problem(path, "is required")
    # a union's member names ("str", "list[str]") end the location: report at the value itself
    while path and path not in marks.values:
        path = path[:-1]
    return marks.problem(tuple(error["loc"])[: len(path)] or path, error["msg"])


def _objects(org: OrgFile, known: Known, marks: Marks, problems: list[Problem]) -> None:
    accounts = known.accounts | {c.name for c in org.connections}
    members = known.members | {m.name for m in org.members}

    def add(path: Path, message: str) -> None:
        problems.append(marks.problem(path, message))

    def account_known(path: Path, account: str | None) -> None:
        if account is not None and account not in accounts:
            add(
                (*path, "account"),
                f"names the account {account!r}, which is neither in the file nor connected",
            )

    def member_known(path: Path, field_name: str, member: str | None) -> None:
        if member is not None and member not in members:
            add((*path, field_name), f"names the member {member!r}, who is neither in the file nor a member")

    for i, c in enumerate(org.connections):
        if c.from_registry is not None or c.inputs:
            _registry_connection(add, ("connections", i), c)
            continue
        oauth = c.oauth.model_dump(exclude_none=True) if not isinstance(c.oauth, bool | None) else c.oauth
        _gateway_check(
            add,
            ("connections", i),
            lambda c=c, o=oauth: check_definition(  # type: ignore[misc]
                c.name, c.connector, c.command, c.url, c.env, c.headers, o
            ),
        )
    for section in SECTION_OPERATIONS:
        for i, item in enumerate(getattr(org, section)):
            _gateway_check(add, (section, i), lambda s=section, x=item: check_as_operation(s, x))  # type: ignore[misc]
    for i, m in enumerate(org.members):
        if not MEMBER_NAME.match(m.name):
            add(("members", i, "name"), "is not a valid member name")
    for i, r in enumerate(org.restrictions):
        path = ("restrictions", i)
        if (r.role is None) == (r.user is None):
            add(path, "names exactly one of role or user")
            continue
        kind, target = ("role", r.role) if r.role is not None else ("user", r.user)
        rule = Rule("file", r.effect, kind, str(target), r.connector, r.account, r.tool)  # type: ignore[arg-type]
        _gateway_check(add, path, lambda rule=rule: validate_rule(rule))  # type: ignore[misc]
        member_known(path, "user", r.user)
        account_known(path, r.account)
    for i, a in enumerate(org.approvals):
        approval = ApprovalRule("file", a.risk, a.account, a.role)
        _gateway_check(add, ("approvals", i), lambda x=approval: validate_approval_rule(x))  # type: ignore[misc]
        account_known(("approvals", i), a.account)
    for i, lim in enumerate(org.limits):
        rule_ = LimitRule("file", lim.member, lim.role, lim.account, lim.tool, lim.per_minute, lim.per_day)
        _gateway_check(add, ("limits", i), lambda x=rule_: validate_limit(x))  # type: ignore[misc]
        member_known(("limits", i), "member", lim.member)
        account_known(("limits", i), lim.account)
    for i, f in enumerate(org.frozen):
        account_known(("frozen", i), f.account)
    for i, cl in enumerate(org.classifications):
        account_known(("classifications", i), cl.account)
    _duplicates(org, add)


def _registry_connection(add: Callable[[Path, str], None], path: Path, c: Any) -> None:
    """A connection from a registry entry (R-13.9): ``SERVER@VERSION`` (pinned: the file says which
    version it means), its inputs, and nothing that defines it another way."""
    if c.from_registry is None:
        add((*path, "inputs"), "inputs are for a connection from_registry")
        return
    for key in ("command", "url", "oauth"):
        if getattr(c, key) not in (None, False):
            add((*path, key), "not with from_registry: the registry entry defines the connection")
    for key in ("env", "headers"):
        if getattr(c, key):
            add((*path, key), "not with from_registry: give the entry's inputs")
    try:
        _, version = split_reference(c.from_registry)
    except ValueError as exc:
        add((*path, "from_registry"), str(exc))
        return
    if version is None:
        add((*path, "from_registry"), "name the version: SERVER@VERSION")


def _gateway_check(add: Callable[[Path, str], None], path: Path, check: Callable[[], object]) -> None:
    """Run a gateway validator; its refusal becomes problems at the fields it names."""
    try:
        check()
    except InvalidArguments as exc:
        for error in exc.errors or [{"pointer": "", "message": exc.message}]:
            parts = [p.replace("~1", "/").replace("~0", "~") for p in error.get("pointer", "").split("/")[1:]]
            add((*path, *parts), error.get("message", ""))
    except ConfigError as exc:
        add(path, exc.message.removeprefix("rule file: "))


def _duplicates(org: OrgFile, add: Callable[[Path, str], None]) -> None:
    keyed: Iterable[tuple[str, list[Any], Callable[[Any], object]]] = (
        ("connections", org.connections, lambda c: c.name),
        ("members", org.members, lambda m: m.name),
        ("restrictions", org.restrictions, lambda r: r),
        ("frozen", org.frozen, lambda f: (f.account, f.tool, f.parameter)),
        ("approvals", org.approvals, lambda a: a),
        ("limits", org.limits, lambda x: (x.member, x.role, x.account, x.tool)),
        ("classifications", org.classifications, lambda x: (x.account, x.tool)),
    )
    for section, items, key in keyed:
        seen: dict[object, int] = {}
        for i, item in enumerate(items):
            k = key(item)
            if k in seen:
                add((section, i), f"duplicates {section}[{seen[k]}]")
            else:
                seen[k] = i


def _resolved(
    org: OrgFile, marks: Marks, source: str, environ: Mapping[str, str] | None, problems: list[Problem]
) -> Desired:
    """Every secret reference replaced by its value (never written anywhere but the gateway)."""

    def value(path: Path, raw: Any) -> Any:
        try:
            return resolve(raw, environ)
        except Unresolved as exc:
            problems.append(marks.problem(path, str(exc)))
            return raw

    connections = []
    for i, c in enumerate(org.connections):
        update: dict[str, Any] = {
            "env": {k: value(("connections", i, "env", k), v) for k, v in c.env.items()},
            "headers": {k: value(("connections", i, "headers", k), v) for k, v in c.headers.items()},
            "url": None if c.url is None else value(("connections", i, "url"), c.url),
            "inputs": {k: value(("connections", i, "inputs", k), v) for k, v in c.inputs.items()},
        }
        if not isinstance(c.oauth, bool | None) and c.oauth.client_secret is not None:
            secret = value(("connections", i, "oauth", "client_secret"), c.oauth.client_secret)
            update["oauth"] = c.oauth.model_copy(update={"client_secret": secret})
        connections.append(c.model_copy(update=update))
    frozen = [
        f.model_copy(update={"value": value(("frozen", i, "value"), f.value)})
        for i, f in enumerate(org.frozen)
    ]
    secret = [
        f.secret if f.secret is not None else (has_reference(f.value) or is_secret(f.parameter, None))
        for f in org.frozen
    ]
    resolved = org.model_copy(update={"connections": connections, "frozen": frozen})
    return Desired(resolved, marks, source, secret)
