"""How a checked ``server.json`` becomes a connection (R-13.9), pure: which remote or package,
the inputs it asks for, and the argv or URL with its environment and headers.

A remote (Streamable HTTP) is preferred: nothing runs on the host. Otherwise the first package of
a kind this gateway runs: PyPI through ``uvx name==version``, npm through ``npx -y name@version``,
OCI through ``docker run -i --rm IMAGE`` -- always an argv list, never a shell, the version pinned
as published. The runtime program itself is found on the host by the gateway, which prepends it.

Inputs are named by what they fill: an environment variable or header by its name, a positional
argument by its ``valueHint``, a named argument by its flag without dashes, a ``{variable}`` of a
value template by the variable's name. Values are the given input, else the declared default.
A secret input may go only where it is sealed (R-13.3: an environment variable or a header); one
that would land on the command line or in a URL is refused.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from toolcrib.errors import InvalidArguments, NeedsInput

__all__ = ["RUNTIMES", "InputSpec", "Launch", "choose", "input_specs", "launch_of", "pinned_by_digest"]

RUNTIMES = {"pypi": "uvx", "npm": "npx", "oci": "docker"}
"""The program each supported package kind runs with."""
_VAR = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_DIGEST = re.compile(r"@sha256:[a-f0-9]{64}$")
_MAX_VALUE = 4096


@dataclass(frozen=True, slots=True)
class InputSpec:
    key: str
    description: str = ""
    required: bool = False
    secret: bool = False
    default: str | None = None
    choices: tuple[str, ...] = ()

    def view(self) -> dict[str, Any]:
        """What a face shows of it: never a secret's default."""
        out: dict[str, Any] = {"name": self.key, "required": self.required, "secret": self.secret}
        if self.description:
            out["description"] = self.description[:300]
        if self.default is not None and not self.secret:
            out["default"] = self.default
        if self.choices:
            out["choices"] = list(self.choices)
        return out


@dataclass(frozen=True, slots=True)
class Launch:
    """What to connect: ``url`` (remote) or ``runtime`` + ``argv`` (the words after the program)."""

    registry_type: str | None
    runtime: str | None
    argv: list[str]
    url: str | None
    env: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    image: str | None = None
    file_sha256: str | None = None
    """The package file's digest as the entry declares it (``fileSha256``)."""
    at: str = ""
    """The JSON pointer of the chosen remote or package in ``server.json`` (``/packages/0``)."""


def choose(server: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    """The pointer and object of the remote or package used: InvalidArguments when none fits."""
    for i, remote in enumerate(server.get("remotes") or []):
        if remote.get("type") == "streamable-http":
            return f"/remotes/{i}", remote
    for i, package in enumerate(server.get("packages") or []):
        if (
            package.get("registryType") in RUNTIMES
            and (package.get("transport") or {}).get("type") == "stdio"
        ):
            return f"/packages/{i}", package
    kinds = sorted({str(p.get("registryType")) for p in server.get("packages") or []})
    remotes = sorted({str(r.get("type")) for r in server.get("remotes") or []})
    raise InvalidArguments(
        "this entry offers nothing this gateway connects: a streamable-http remote, or a stdio "
        f"package from pypi, npm or oci (it has packages {kinds or 'none'}, remotes {remotes or 'none'})",
        [{"pointer": "/from_registry", "message": "no supported remote or package"}],
    )


def input_specs(server: Mapping[str, Any]) -> list[InputSpec]:
    """The inputs the chosen remote or package asks for, in order, each once."""
    _, chosen = choose(server)
    walk = _Walk({})
    _walk_choice(walk, chosen)
    return list(walk.specs.values())


def launch_of(server: Mapping[str, Any], given: Mapping[str, str]) -> Launch:
    """The launch of ``server`` with the ``given`` inputs.

    NeedsInput names every required input left without a value; InvalidArguments names an input
    it does not declare, a value outside its choices or not a plain word, and a secret that would
    land where it cannot be sealed."""
    pointer, chosen = choose(server)
    walk = _Walk(given)
    env, headers, argv, url = _walk_choice(walk, chosen)
    unknown = sorted(set(given) - set(walk.specs))
    for key in unknown:
        walk.problem(f"/inputs/{key}", "this entry declares no such input")
    if walk.missing:
        raise NeedsInput([walk.specs[k].view() for k in walk.missing])
    if walk.problems:
        detail = "; ".join(f"{p['pointer']}: {p['message']}" for p in walk.problems)
        raise InvalidArguments(f"the registry entry cannot be connected: {detail}", walk.problems)
    if url is not None:  # a remote
        return Launch(None, None, [], url, {}, headers, at=pointer)
    kind = str(chosen.get("registryType"))
    return _package_launch(kind, chosen, env, argv, pointer)


def _package_launch(
    kind: str, package: Mapping[str, Any], env: dict[str, str], args: list[str], at: str
) -> Launch:
    identifier, version = str(package["identifier"]), package.get("version")
    if kind == "oci":
        image = identifier if (":" in identifier.rsplit("/", 1)[-1] or "@" in identifier) else None
        if image is None and isinstance(version, str):
            image = f"{identifier}:{version}"
        if image is None:
            raise InvalidArguments(
                "an OCI image without a tag or digest is not pinned",
                [{"pointer": f"{at}/identifier", "message": "no tag or digest"}],
            )
        flags = [w for name in env for w in ("-e", name)]  # values come from docker's own env
        argv = ["run", "-i", "--rm", *flags, image, *args]
        return Launch(kind, "docker", argv, None, env, image=image, file_sha256=_sha(package), at=at)
    if not isinstance(version, str):
        raise InvalidArguments(
            "a package without a version is not pinned",
            [{"pointer": f"{at}/version", "message": "no version"}],
        )
    spec = f"{identifier}=={version}" if kind == "pypi" else f"{identifier}@{version}"
    lead = ["-y"] if kind == "npm" else []
    argv = [*lead, spec, *args]
    return Launch(kind, RUNTIMES[kind], argv, None, env, file_sha256=_sha(package), at=at)


def _sha(package: Mapping[str, Any]) -> str | None:
    value = package.get("fileSha256")
    return value if isinstance(value, str) and value else None


class _Walk:
    def __init__(self, given: Mapping[str, str]) -> None:
        self.given = given
        self.specs: dict[str, InputSpec] = {}
        self.missing: list[str] = []
        self.problems: list[dict[str, str]] = []

    def problem(self, pointer: str, message: str) -> None:
        self.problems.append({"pointer": pointer, "message": message})

    def declare(self, key: str, item: Mapping[str, Any]) -> InputSpec:
        choices = item.get("choices")
        spec = InputSpec(
            key=key,
            description=str(item.get("description") or ""),
            required=item.get("isRequired") is True,
            secret=item.get("isSecret") is True,
            default=item.get("default") if isinstance(item.get("default"), str) else None,
            choices=tuple(c for c in choices if isinstance(c, str)) if isinstance(choices, list) else (),
        )
        self.specs.setdefault(key, spec)
        return spec

    def value(self, key: str, item: Mapping[str, Any]) -> tuple[str | None, bool]:
        """The value of input ``key`` (given, else its default) and whether it is secret."""
        spec = self.declare(key, item)
        value = self.given.get(key, spec.default)
        if value is None:
            if spec.required and key not in self.missing:
                self.missing.append(key)
            return None, spec.secret
        if not isinstance(value, str) or len(value) > _MAX_VALUE or _CONTROL.search(value):
            self.problem(
                f"/inputs/{key}", f"must be text of at most {_MAX_VALUE} characters, no control characters"
            )
        elif spec.choices and value not in spec.choices:
            self.problem(f"/inputs/{key}", f"must be one of {', '.join(spec.choices)}")
        return value, spec.secret

    def fill(self, key: str, item: Mapping[str, Any]) -> tuple[str | None, bool]:
        """An item's value: its fixed ``value`` template with its variables filled, or the input
        named ``key``. The bool says a secret went into it."""
        template = item.get("value")
        if not isinstance(template, str):
            return self.value(key, item)
        variables = item.get("variables") if isinstance(item.get("variables"), Mapping) else {}
        secret = item.get("isSecret") is True
        absent = False

        def one(match: re.Match[str]) -> str:
            nonlocal secret, absent
            declared = variables.get(match.group(1)) if variables else None
            if not isinstance(declared, Mapping):
                return match.group(0)
            value, is_secret = self.value(match.group(1), declared)
            secret = secret or is_secret
            absent = absent or value is None
            return value or ""

        filled = _VAR.sub(one, template)
        return (None if absent else filled), secret


def _walk_choice(
    walk: _Walk, chosen: Mapping[str, Any]
) -> tuple[dict[str, str], dict[str, str], list[str], str | None]:
    env = _pairs(walk, chosen.get("environmentVariables"), "environment variable")
    headers = _pairs(walk, chosen.get("headers"), "header")
    if "url" in chosen:
        return env, headers, [], _remote_url(walk, chosen)
    argv: list[str] = []
    for argument in chosen.get("packageArguments") or []:
        argv += _argument(walk, argument)
    if chosen.get("runtimeArguments"):
        walk.problem(
            "/runtimeArguments",
            "runtime arguments are options to uvx, npx or docker: a registry entry does not choose them",
        )
    return env, headers, argv, None


def _pairs(walk: _Walk, items: Any, what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or []:
        name = str(item.get("name", ""))
        value, _ = walk.fill(name, item)  # env and headers are sealed whole
        if value is not None:
            out[name] = value
    return out


def _argument(walk: _Walk, argument: Mapping[str, Any]) -> list[str]:
    named = argument.get("type") == "named"
    key = str(argument.get("name", "")).lstrip("-") if named else str(argument.get("valueHint") or "")
    value, secret = walk.fill(key, argument)
    if value is None:
        return []
    if secret:
        walk.problem(
            f"/inputs/{key}", "a secret would be written on the command line, where it is not sealed"
        )
    if not named and value.startswith("-"):
        walk.problem(f"/inputs/{key}", "a positional value may not start with '-' (it would be an option)")
    return [str(argument["name"]), value] if named else [value]


def _remote_url(walk: _Walk, remote: Mapping[str, Any]) -> str:
    url = str(remote.get("url", ""))
    variables = remote.get("variables") if isinstance(remote.get("variables"), Mapping) else {}

    def one(match: re.Match[str]) -> str:
        declared = variables.get(match.group(1)) if variables else None
        if not isinstance(declared, Mapping):
            return match.group(0)
        value, secret = walk.value(match.group(1), declared)
        if secret:
            walk.problem(f"/inputs/{match.group(1)}", "a secret would be written in the URL")
        if value is None and match.group(1) not in walk.missing:
            walk.missing.append(match.group(1))  # a URL is not built without it, required or not
        return value or ""

    return _VAR.sub(one, url)


def pinned_by_digest(launch: Launch) -> bool:
    """Whether ``launch`` is an OCI image pinned by digest."""
    return launch.image is not None and bool(_DIGEST.search(launch.image))
