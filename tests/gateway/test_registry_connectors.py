"""The connector catalog (#35, SPEC R-13.9) end to end: a registry speaking the MCP Registry API
v0.1 on loopback (``tests/fixtures/registry_server.py``, real ``server.json`` documents), the
command line, a real PyPI package (``mcp-server-time``) run through ``uvx``, and the fixture MCP
server as a remote."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import PYTHON, ROOT, Process, cli, env_for, free_port, start_fixture_http, wait_http
from tests.fixtures.installed_wheel import pip_sources, wheel_of


@pytest.fixture(scope="module")
def remote() -> Iterator[Process]:
    started = start_fixture_http()
    yield started
    started.stop()


@pytest.fixture(scope="module")
def newer() -> Iterator[Process]:
    """The server of remote-clock 1.1.0: its ``echo_message`` takes one more parameter."""
    started = start_fixture_http({"FIXTURE_VARIANT": "loud"})
    yield started
    started.stop()


@pytest.fixture(scope="module")
def marker(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("marker") / "pwned"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The installed ``mcp-server-time`` as a wheel: the file ``time-verified`` declares the sha256 of."""
    return wheel_of("mcp-server-time", tmp_path_factory.mktemp("wheels"))


@pytest.fixture(scope="module")
def registry(
    remote: Process, newer: Process, marker: Path, wheel: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    port = free_port()
    log = tmp_path_factory.mktemp("registry") / "requests.log"
    argv = [PYTHON, "-m", "tests.fixtures.registry_server", "--port", str(port)]
    argv += ["--remote-url", remote.url, "--newer-url", newer.url, "--marker", str(marker), "--log", str(log)]
    argv += ["--file-sha256", hashlib.sha256(wheel.read_bytes()).hexdigest()]
    proc = subprocess.Popen(argv, cwd=ROOT, env=env_for(), stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    wait_http(base + "/v0.1/servers", proc=proc)
    yield base
    Process(proc, base).stop()


@pytest.fixture(scope="module")
def uvx_options(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """``uvx`` offline: the installed ``mcp-server-time`` as a wheel, the host's local indexes."""
    cache = tmp_path_factory.mktemp("uv-cache")
    return [
        "--offline",
        "--no-config",
        "--cache-dir",
        str(cache),
        "--find-links",
        str(wheel.parent),
        *pip_sources(),
    ]


def _env(registry: str, **more: Any) -> dict[str, str]:
    env = {"TOOLCRIB_REGISTRY_URL": json.dumps([registry])}
    env.update({f"TOOLCRIB_{k.upper()}": v if isinstance(v, str) else json.dumps(v) for k, v in more.items()})
    return env


def _run(
    db_url: str, registry: str, *args: str, host_env: dict[str, str] | None = None, **more: Any
) -> tuple[int, Any, str]:
    env = {**_env(registry, **more), **(host_env or {})}
    done = cli(db_url, *args, "--json", check=False, env=env)
    body = json.loads(done.stdout) if done.stdout.strip() else None
    return done.returncode, body, done.stderr


def _add(db_url: str, registry: str, name: str, entry: str, *flags: str, **more: Any) -> tuple[int, Any, str]:
    """``connections add NAME --from-registry ENTRY [FLAGS]`` (``_run``'s settings and host env)."""
    return _run(db_url, registry, "connections", "add", name, "--from-registry", entry, *flags, **more)


def _error(body: Any) -> dict[str, Any]:
    """The ``{"error": {...}}`` a failed command prints under ``--json``."""
    return dict(body["error"])


@pytest.fixture
def org(db_url: str) -> str:
    cli(db_url, "init")
    return db_url


def _rows(db_url: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db_url.removeprefix("sqlite:///")) as db:
        return db.execute(
            "SELECT name, registry, registry_name, registry_version FROM connections"
        ).fetchall()


def test_r13_9_search_lists_the_pypi_time_server_and_never_the_deleted_one(org: str, registry: str) -> None:
    code, found, _ = _run(org, registry, "connectors", "search", "time")
    assert code == 0
    names = {s["name"]: s for s in found["servers"]}
    assert "io.github.example/time" in names
    assert "io.github.example/time-legacy" not in names  # the registry marks it deleted
    time = names["io.github.example/time"]
    assert time["addable"] is True
    assert time["version"] == "2026.10.19"
    assert time["transports"] == ["pypi mcp-server-time@2026.10.19"]
    assert {
        "name": "local-timezone",
        "required": False,
        "secret": False,
        "description": "Override local timezone",
        "default": "UTC",
    } in time["inputs"]
    assert names["io.github.example/time-evil"]["addable"] is False  # listed, never addable
    assert found["registries"][0]["registry"] == registry
    assert found["registries"][0]["age_seconds"] >= 0


def test_r13_9_show_names_the_inputs_and_marks_secrets_and_deprecation(org: str, registry: str) -> None:
    code, shown, _ = _run(org, registry, "connectors", "show", "io.github.user/local-weather")
    assert code == 0
    inputs = {i["name"]: i for i in shown["inputs"]}
    assert inputs["API_KEY"]["secret"] is True
    assert inputs["API_KEY"]["required"] is True
    assert "config_path" in inputs
    assert (
        shown["runs"] == "npx -y @modelcontextprotocol/server-weather@1.0.0 --port 8080"
    )  # what it would run
    code, old, _ = _run(org, registry, "connectors", "show", "io.github.example/remote-clock@1.0.0")
    assert code == 0
    assert old["status"] == "deprecated"
    assert old["deprecated"]


def test_r13_9_a_deleted_entry_is_not_offered_by_name_either(org: str, registry: str) -> None:
    code, body, _ = _run(org, registry, "connectors", "show", "io.github.example/time-legacy")
    assert code == 1
    assert _error(body)["code"] == "not_found"
    code, body, _err = _add(org, registry, "old", "io.github.example/time-legacy")
    assert _error(body)["code"] == "not_found"
    assert _rows(org) == []


def test_r13_9_a_pypi_entry_becomes_an_active_stdio_connection_run_by_uvx(
    org: str, registry: str, uvx_options: list[str]
) -> None:
    code, view, err = _add(org, registry, "clock", "io.github.example/time", registry_uvx_options=uvx_options)
    assert code == 0, err
    assert view["status"] == "active", view
    assert view["tools"] >= 2  # get_current_time, convert_time
    assert view["transport"] == "stdio"
    argv = view["target"].split(" ")
    assert Path(argv[0]).name == "uvx"
    assert "mcp-server-time==2026.10.19" in argv
    assert argv[-2:] == ["--local-timezone", "UTC"]
    assert view["from_registry"] == {
        "registry": registry,
        "name": "io.github.example/time",
        "version": "2026.10.19",
    }
    assert _rows(org) == [("clock", registry, "io.github.example/time", "2026.10.19")]
    tools = json.loads(cli(org, "tools", "list", "--json").stdout)
    assert "clock__get_current_time" in {t["name"] for t in tools}


def test_r13_9_a_remote_whose_header_needs_a_secret_is_refused_until_given_then_sealed(
    org: str, registry: str
) -> None:
    ref = "io.github.example/remote-clock"
    code, body, err = _add(org, registry, "rc", ref)
    assert code == 1
    error = _error(body)
    assert error["code"] == "needs_input"
    assert [m["name"] for m in error["missing"]] == ["api_key"]
    assert error["missing"][0]["secret"] is True
    assert _rows(org) == []
    secret = "sk-registry-9f8e7d6c5b4a"
    code, view, err = _add(org, registry, "rc", ref, "--input", f"api_key={secret}")
    assert code == 0, err
    assert view["status"] == "active"
    assert view["transport"] == "http"
    assert secret not in json.dumps(view)
    listed = cli(org, "connections", "list", "--json").stdout
    assert secret not in listed
    db_file = Path(org.removeprefix("sqlite:///"))
    assert secret.encode() not in db_file.read_bytes()  # sealed at rest
    called = cli(org, "call", "rc__get_request_headers", "--json", check=False)
    assert secret not in called.stdout  # redacted from results too


def test_r13_9_an_identifier_holding_a_shell_command_is_refused_and_nothing_runs(
    org: str, registry: str, marker: Path, uvx_options: list[str]
) -> None:
    code, body, _err = _add(
        org,
        registry,
        "evil",
        "io.github.example/time-evil",
        registry_uvx_options=uvx_options,
        allow_remote_stdio=True,
    )
    assert code == 1
    error = _error(body)
    assert error["code"] == "invalid_arguments"
    assert error["errors"][0]["pointer"] == "/server_json/packages/0/identifier"
    assert not marker.exists()
    assert _rows(org) == []


def test_r13_9_a_server_json_failing_the_published_schema_is_refused(org: str, registry: str) -> None:
    code, body, _err = _add(org, registry, "broken", "io.github.example/time-broken")
    assert code == 1
    error = _error(body)
    assert error["code"] == "invalid_arguments"
    assert all(e["pointer"].startswith("/server_json/packages/0") for e in error["errors"])
    assert _rows(org) == []


def test_r13_9_an_oci_image_without_digest_is_refused_when_the_organization_requires_digests(
    org: str, registry: str
) -> None:
    code, body, _err = _add(org, registry, "box", "io.github.example/time-oci", registry_require_digest=True)
    assert code == 1
    assert _error(body)["code"] == "restricted"
    assert _rows(org) == []


def test_r13_9_an_entry_outside_the_allow_list_is_refused(org: str, registry: str) -> None:
    code, body, _err = _add(
        org,
        registry,
        "rc",
        "io.github.example/remote-clock",
        "--input",
        "api_key=k",
        registry_allow=["io.github.acme/*"],
    )
    assert code == 1
    assert _error(body)["code"] == "restricted"
    assert _rows(org) == []


def test_r13_9_a_missing_runtime_is_named(org: str, registry: str) -> None:
    code, body, _err = _add(
        org,
        registry,
        "weather",
        "io.github.user/local-weather",
        "--input",
        "API_KEY=k",
        "--input",
        "config_path=weather.toml",
        host_env={"PATH": "/nonexistent"},
    )
    assert code == 1
    error = _error(body)
    assert error["code"] == "invalid_arguments"
    assert "npx" in error["message"]
    assert _rows(org) == []


def test_r13_9_a_newer_version_is_listed_and_moving_to_it_is_explicit_and_audited(
    org: str, registry: str
) -> None:
    ref = "io.github.example/remote-clock@1.0.0"
    code, view, err = _add(org, registry, "rc", ref, "--input", "api_key=k1")
    assert code == 0, err
    assert view["from_registry"]["version"] == "1.0.0"
    code, listed, _ = _run(org, registry, "connectors", "updates")
    assert listed == [
        {
            "name": "rc",
            "server": "io.github.example/remote-clock",
            "version": "1.0.0",
            "latest": "1.1.0",
            "registry": registry,
        }
    ]
    assert _rows(org)[0][3] == "1.0.0"  # shown, never installed silently
    code, moved, err = _run(org, registry, "connectors", "upgrade", "--name", "rc")
    assert code == 0, moved
    assert moved["from_registry"]["version"] == "1.1.0"
    assert moved["status"] == "active"
    code, listed, _ = _run(org, registry, "connectors", "updates")
    assert listed == []
    changes = json.loads(cli(org, "tools", "changes", "--json").stdout)
    assert [c["tool"] for c in changes] == ["echo_message"]  # the new version's changed tool is held
    audit = json.loads(cli(org, "audit", "search", "--operation", "connectors__upgrade", "--json").stdout)
    assert len(audit) == 1
    assert audit[0]["outcome"] == "ok"


def test_r13_5_a_registry_is_read_through_the_address_policy(org: str, registry: str) -> None:
    code, body, _err = _run(org, registry, "connectors", "search", "time", deny_private_addresses=True)
    assert code == 1
    error = _error(body)
    assert error["code"] == "upstream_error"
    assert "127.0.0.1" in error["message"]


ORG = """
connections:
  - name: rc
    from_registry: io.github.example/remote-clock@1.0.0
    inputs: {api_key: "${env:RC_KEY}"}
catalog:
  allow: ["io.github.example/*"]
"""


def test_r13_9_the_org_file_declares_a_connection_from_a_registry_and_export_keeps_the_reference(
    org: str, registry: str, tmp_path: Path
) -> None:
    path = tmp_path / "org.yaml"
    path.write_text(ORG)
    env = {**_env(registry), "RC_KEY": "org-file-key-31415"}
    plan = cli(org, "plan", "-f", str(path), env=env, check=False)
    assert plan.returncode == 2, plan.stdout + plan.stderr
    assert "from_registry: io.github.example/remote-clock@1.0.0" in plan.stdout
    assert "org-file-key-31415" not in plan.stdout
    cli(org, "apply", "-f", str(path), env=env)
    assert _rows(org) == [("rc", registry, "io.github.example/remote-clock", "1.0.0")]
    again = cli(org, "plan", "-f", str(path), env=env, check=False)
    assert again.returncode == 0, again.stdout
    exported = cli(org, "export", env=env).stdout
    assert "from_registry: io.github.example/remote-clock@1.0.0" in exported
    assert "api_key: ${env:RC_API_KEY}" in exported
    assert "io.github.example/*" in exported
    assert "org-file-key-31415" not in exported
    path.write_text(ORG.replace("@1.0.0", "@1.1.0"))
    cli(org, "apply", "-f", str(path), env=env)
    assert _rows(org)[0][3] == "1.1.0"


def test_r13_9_the_org_files_allow_list_refuses_an_entry_outside_it(
    org: str, registry: str, tmp_path: Path
) -> None:
    path = tmp_path / "org.yaml"
    path.write_text(ORG.replace("io.github.example/*", "io.github.acme/*"))
    env = {**_env(registry), "RC_KEY": "k"}
    done = cli(org, "apply", "-f", str(path), env=env, check=False)
    assert done.returncode == 1
    assert _rows(org) == []
    path.write_text('catalog:\n  allow: ["io.github.acme/*"]\n')
    cli(org, "apply", "-f", str(path), env=env)  # the list alone, kept for every face
    ref = "io.github.example/remote-clock"
    code, body, _ = _add(org, registry, "rc", ref, "--input", "api_key=k")
    assert code == 1
    assert _error(body)["code"] == "restricted"
    assert _rows(org) == []


def _envs(db_url: str) -> Path:
    """Where the gateway keeps the verified environments: its data directory beside the database."""
    return Path(db_url.removeprefix("sqlite:///")).parent / ".toolcrib" / "registry-envs"


def test_r13_9_a_pypi_entry_whose_file_matches_its_file_sha256_is_installed_checked_and_connected(
    org: str, registry: str, wheel: Path, uvx_options: list[str]
) -> None:
    sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
    code, shown, _ = _run(org, registry, "connectors", "show", "io.github.example/time-verified")
    assert shown["runs"].startswith(f"uv pip install mcp-server-time==2026.10.19 --hash=sha256:{sha} ")
    code, view, err = _add(
        org, registry, "clock", "io.github.example/time-verified", registry_uvx_options=uvx_options
    )
    assert code == 0, err
    assert view["status"] == "active", view
    assert view["tools"] >= 2
    env = _envs(org) / f"clock-{sha}"
    assert view["target"].split(" ") == [str(env / "bin" / "mcp-server-time"), "--local-timezone", "UTC"]
    assert (
        env / "toolcrib-requirements.txt"
    ).read_text() == f"mcp-server-time==2026.10.19 --hash=sha256:{sha}\n"
    assert [p.name for p in _envs(org).iterdir()] == [env.name]  # no install left half-done
    assert _rows(org) == [("clock", registry, "io.github.example/time-verified", "2026.10.19")]
    tools = json.loads(cli(org, "tools", "list", "--json").stdout)
    assert "clock__get_current_time" in {t["name"] for t in tools}


def test_r13_9_a_pypi_file_whose_sha256_is_not_the_declared_one_is_never_installed_or_run(
    org: str, registry: str, uvx_options: list[str]
) -> None:
    code, body, err = _add(
        org, registry, "hashed", "io.github.example/time-hashed", registry_uvx_options=uvx_options
    )
    assert code == 1
    error = _error(body)
    assert error["code"] == "invalid_arguments"
    assert error["errors"][0]["pointer"] == "/server_json/packages/0/fileSha256"
    assert "Computed" not in json.dumps(body)  # uv's own words stay in the gateway's log
    assert "Hash mismatch" in err  # the log: uv's hash check refused the file
    assert _rows(org) == []
    assert list(_envs(org).iterdir()) == []  # no environment, no program: nothing could run
    tools = json.loads(cli(org, "tools", "list", "--json").stdout)
    assert not [t for t in tools if t["name"].startswith("hashed__")]


@pytest.mark.parametrize(
    ("entry", "why"), [("time-npm-hashed", "npx"), ("time-oci-hashed", "pinned by its digest")]
)
def test_r13_9_a_file_hash_npx_or_docker_cannot_check_is_refused_rather_than_run_unchecked(
    org: str, registry: str, entry: str, why: str
) -> None:
    code, body, _ = _add(org, registry, "hashed", f"io.github.example/{entry}")
    assert code == 1
    error = _error(body)
    assert error["code"] == "invalid_arguments"
    assert error["errors"][0]["pointer"] == "/server_json/packages/0/fileSha256"
    assert why in error["message"]  # says which runtime, and why it cannot
    assert _rows(org) == []


def test_r13_9_from_registry_defines_the_connection_alone(org: str, registry: str) -> None:
    ref = "io.github.example/remote-clock"
    code, body, _ = _add(org, registry, "rc", ref, "--url", "http://x.example/")
    assert code == 1
    error = _error(body)
    assert error["code"] == "invalid_arguments"
    assert error["errors"][0]["pointer"] == "/url"
    assert _rows(org) == []


def test_r13_9_the_org_file_does_not_silently_turn_a_registry_connection_into_a_hand_defined_one(
    org: str, registry: str, tmp_path: Path
) -> None:
    path = tmp_path / "org.yaml"
    path.write_text(ORG)
    env = {**_env(registry), "RC_KEY": "k"}
    cli(org, "apply", "-f", str(path), env=env)
    path.write_text(f"connections:\n  - name: rc\n    connector: Clock\n    url: {registry}/mcp\n")
    done = cli(org, "apply", "-f", str(path), env=env, check=False)
    assert done.returncode == 1
    assert "remove it and apply again" in done.stderr
    assert _rows(org) == [("rc", registry, "io.github.example/remote-clock", "1.0.0")]
