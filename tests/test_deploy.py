"""The deployment files stay in step with the code, without Docker or a cluster (#11, #26).

Dockerfile, compose.yaml, deploy/Caddyfile, deploy/org.yaml and the Kubernetes manifests in
deploy/kubernetes/: every ``TOOLCRIB_*`` variable they set is a real setting, the image installs
the PostgreSQL driver, the proxy balances over exactly the replicas compose runs, the organization
file is applied before anything serves (compose and Kubernetes alike) with the secrets it refers to
mounted for that step, the ConfigMap holds the file itself, and every manifest validates against
the Kubernetes schemas (``kubernetes-validate``, which ships them: no cluster, no network)."""

from __future__ import annotations

import copy
import json
import os
import re
import sys
from pathlib import Path, PurePosixPath
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from cryptography.fernet import Fernet
from kubernetes_validate.utils import all_versions, major_minor
from pydantic import ValidationError

from tests.conftest import ROOT, cli
from toolcrib.settings import Settings

FILES = ("Dockerfile", "compose.yaml")
DEPLOY = ROOT / "deploy"
KUBE = DEPLOY / "kubernetes"
ORG_FILE = DEPLOY / "org.yaml"
SCHEMA = ROOT / "docs" / "toolcrib.schema.json"
APPLY = ["toolcrib", "apply", "-f", "/etc/toolcrib/org.yaml"]
SECTIONS = {"connections", "members", "restrictions", "frozen", "approvals", "limits"}
OLDEST_KUBERNETES = "1.29"
"""The oldest Kubernetes the manifests are meant for (docs/deploy.md); they are checked against it
and against the newest version whose schemas ``kubernetes-validate`` ships."""


def _manifests() -> list[Path]:
    return sorted(p for p in KUBE.glob("*.yaml") if p.name != "kustomization.yaml")


def _documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]


def _resource(kind: str) -> dict[str, Any]:
    found = [d for p in _manifests() for d in _documents(p) if d["kind"] == kind]
    assert len(found) == 1, kind
    return found[0]


def _pod() -> dict[str, Any]:
    spec: dict[str, Any] = _resource("Deployment")["spec"]["template"]["spec"]
    return spec


def _compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))
    return data


def _strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in _strings(k) + _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [value] if isinstance(value, str) else []


def _references() -> tuple[set[str], set[str]]:
    """The ``${env:NAME}`` and ``${file:/path}`` secrets deploy/org.yaml's values refer to."""
    text = " ".join(_strings(yaml.safe_load(ORG_FILE.read_text(encoding="utf-8"))))
    return set(re.findall(r"\$\{env:([^}]+)\}", text)), set(re.findall(r"\$\{file:([^}]+)\}", text))


def _kubernetes_versions() -> list[str]:
    shipped = sorted({major_minor(v) for v in all_versions()}, key=lambda v: tuple(map(int, v.split("."))))
    return [OLDEST_KUBERNETES, shipped[-1]]


# --- every variable is a setting ------------------------------------------------------------------


def test_r15_2_every_variable_the_container_files_set_is_a_setting() -> None:
    fields = {f"TOOLCRIB_{name.upper()}" for name in Settings.model_fields}
    deployment = KUBE / "deployment.yaml"
    for path in [ROOT / name for name in FILES] + [deployment]:
        text = path.read_text(encoding="utf-8")
        used = set(re.findall(r"\bTOOLCRIB_[A-Z_]+\b", text))
        assert used, path.name
        assert used <= fields, (path.name, used - fields)
    # and nothing else the deployment ships names a variable that is none
    for path in [*DEPLOY.rglob("*"), ROOT / "docs" / "deploy.md"]:
        if path.is_file():
            used = set(re.findall(r"\bTOOLCRIB_[A-Z_]+\b", path.read_text(encoding="utf-8")))
            assert used <= fields, (path.name, used - fields)


def test_every_variable_a_pod_container_sets_is_a_setting() -> None:
    """Read structurally too: each ``env`` entry of each container, the init container included."""
    fields = {f"TOOLCRIB_{name.upper()}" for name in Settings.model_fields}
    pod = _pod()
    for container in pod["initContainers"] + pod["containers"]:
        names = {e["name"] for e in container["env"]}
        assert {"TOOLCRIB_DATABASE_URL", "TOOLCRIB_SECRET_KEY"} <= names, container["name"]
        assert {n for n in names if n.startswith("TOOLCRIB_")} <= fields


# --- the image and compose --------------------------------------------------------------------------


def test_r15_2_the_image_installs_the_postgres_extra_and_serves() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    assert "'.[postgres]'" in dockerfile
    assert 'CMD ["toolcrib", "serve"]' in dockerfile


def test_the_image_holds_the_stdio_server_the_example_connects() -> None:
    """deploy/org.yaml's stdio connection runs inside the image, so the image must install it."""
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    org = yaml.safe_load(ORG_FILE.read_text(encoding="utf-8"))
    for connection in org["connections"]:
        if "command" in connection:
            assert f"'{connection['command'].split()[0]}" in dockerfile, connection["name"]


def test_r15_2_the_proxy_balances_over_the_replicas_compose_runs() -> None:
    compose = (ROOT / "compose.yaml").read_text(encoding="utf-8")
    replicas = set(re.findall(r"^  (replica-[a-z]+): \*replica$", compose, re.M))
    caddy = (ROOT / "deploy" / "Caddyfile").read_text(encoding="utf-8")
    upstreams = set(re.findall(r"\b(replica-[a-z]+):8765\b", caddy))
    assert len(replicas) >= 2
    assert upstreams == replicas


def test_compose_applies_the_organization_file_before_any_replica_serves() -> None:
    services = _compose()["services"]
    apply = services["apply"]
    assert apply["command"] == APPLY
    assert apply["restart"] == "no"  # one shot: exits 0 when the database says what the file says
    assert "./deploy/org.yaml:/etc/toolcrib/org.yaml:ro" in apply["volumes"]
    replicas = {name: s for name, s in services.items() if name.startswith("replica-")}
    assert len(replicas) >= 2
    for name, replica in replicas.items():
        assert replica["depends_on"]["apply"] == {"condition": "service_completed_successfully"}, name
        assert "command" not in replica, name  # the image's CMD: toolcrib serve
        # the same database and the same key: what apply sealed, every replica can open
        assert replica["environment"] == apply["environment"], name
        assert "secrets" not in replica, name  # the file's secrets are the apply step's alone
    assert services["proxy"]["depends_on"] == sorted(replicas)


def test_compose_gives_the_apply_step_every_secret_the_file_refers_to() -> None:
    compose = _compose()
    apply = compose["services"]["apply"]
    env_refs, file_refs = _references()
    assert file_refs, "deploy/org.yaml shows a secret by reference"
    for path in file_refs:
        where = PurePosixPath(path)
        assert where.parent == PurePosixPath("/run/secrets"), path  # where compose mounts secrets
        assert where.name in apply["secrets"], path
        assert where.name in compose["secrets"], path
    for name in env_refs:
        assert name in apply["environment"], name


# --- Kubernetes --------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", _manifests(), ids=lambda p: p.name)
def test_every_manifest_validates_against_the_kubernetes_schemas(path: Path) -> None:
    documents = _documents(path)
    assert documents, path.name
    for document in documents:
        for version in _kubernetes_versions():
            kubernetes_validate.validate(document, version, strict=True)


def test_the_schemas_refuse_a_misspelled_field() -> None:
    """Strict validation is what catches a ``readinesProbe`` that Kubernetes would ignore."""
    deployment = copy.deepcopy(_resource("Deployment"))
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container["readinesProbe"] = container.pop("readinessProbe")
    with pytest.raises(kubernetes_validate.ValidationError, match="readinesProbe"):
        kubernetes_validate.validate(deployment, _kubernetes_versions()[-1], strict=True)


def test_the_kustomization_lists_every_manifest() -> None:
    kustomization = yaml.safe_load((KUBE / "kustomization.yaml").read_text(encoding="utf-8"))
    assert sorted(kustomization["resources"]) == sorted(p.name for p in _manifests())
    # its `images` entry is what points every container at the image built from the Dockerfile
    pod = _pod()
    images = {c["image"] for c in pod["initContainers"] + pod["containers"]}
    assert images == {i["name"] for i in kustomization["images"]}


def test_the_configmap_holds_deploy_org_yaml() -> None:
    """Regenerate it with the command in docs/deploy.md when deploy/org.yaml changes."""
    configmap = _resource("ConfigMap")
    assert configmap["data"] == {"org.yaml": ORG_FILE.read_text(encoding="utf-8")}


def test_every_pod_applies_the_file_before_it_serves() -> None:
    pod = _pod()
    (init,) = pod["initContainers"]
    (serve,) = pod["containers"]
    assert init["command"] == APPLY
    assert serve["command"] == ["toolcrib", "serve"]
    assert init["image"] == serve["image"]
    # the ConfigMap is what is mounted where the command reads the file
    volumes = {v["name"]: v for v in pod["volumes"]}
    (mount,) = [m for m in init["volumeMounts"] if m["mountPath"] == "/etc/toolcrib"]
    assert mount["readOnly"] is True
    assert volumes[mount["name"]]["configMap"]["name"] == _resource("ConfigMap")["metadata"]["name"]
    # the same database and the same key in both: what apply sealed, the server can open
    assert init["env"] == [e for e in serve["env"] if "valueFrom" in e]


def test_the_pod_mounts_every_secret_the_file_refers_to_for_the_apply_step_alone() -> None:
    pod = _pod()
    (init,) = pod["initContainers"]
    (serve,) = pod["containers"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    secret = _resource("Secret")
    provided: dict[str, str] = {}  # path in the init container -> key of the Secret
    for mount in init["volumeMounts"]:
        source = volumes[mount["name"]].get("secret")
        if source is not None:
            assert source["secretName"] == secret["metadata"]["name"]
            assert mount["readOnly"] is True
            for item in source["items"]:
                provided[str(PurePosixPath(mount["mountPath"]) / item["path"])] = item["key"]
            assert mount["name"] not in {m["name"] for m in serve.get("volumeMounts", [])}
    env_refs, file_refs = _references()
    assert file_refs
    for path in file_refs:
        assert path in provided, path
        assert provided[path] in secret["stringData"], path
    init_env = {e["name"] for e in init["env"]}
    for name in env_refs:
        assert name in init_env, name


def test_the_pod_reads_its_credentials_from_the_secret() -> None:
    secret = _resource("Secret")
    pod = _pod()
    refs = [
        e["valueFrom"]["secretKeyRef"]
        for c in pod["initContainers"] + pod["containers"]
        for e in c["env"]
        if "valueFrom" in e
    ]
    assert refs
    for ref in refs:
        assert ref["name"] == secret["metadata"]["name"]
        assert ref["key"] in secret["stringData"]
    by_name = {e["name"]: e for e in pod["containers"][0]["env"]}
    for setting in ("TOOLCRIB_DATABASE_URL", "TOOLCRIB_SECRET_KEY"):  # never a literal value
        assert "value" not in by_name[setting], setting


def test_the_secret_holds_placeholders_only() -> None:
    secret = _resource("Secret")
    assert "data" not in secret  # base64 would hide a real value from review
    for key, value in secret["stringData"].items():
        assert "REPLACE-ME" in value, key
    # copied as it is, the placeholder key stops the gateway instead of sealing with a known key
    with pytest.raises(ValueError, match="Fernet key"):
        Fernet(secret["stringData"]["secret-key"])
    assert secret["stringData"]["database-url"].startswith("postgresql://")


def test_the_pod_is_probed_on_healthz_and_runs_unprivileged() -> None:
    pod = _pod()
    (serve,) = pod["containers"]
    ports = {p["name"]: p["containerPort"] for p in serve["ports"]}
    assert ports["http"] == Settings.model_fields["port"].default == 8765  # the image's TOOLCRIB_PORT
    assert "TOOLCRIB_PORT=8765" in (ROOT / "Dockerfile").read_text(encoding="utf-8")
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        assert serve[probe]["httpGet"] == {"path": "/healthz", "port": "http"}, probe
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    assert "--uid {} ".format(pod["securityContext"]["runAsUser"]) in (ROOT / "Dockerfile").read_text(
        encoding="utf-8"
    )
    for container in pod["initContainers"] + pod["containers"]:
        context = container["securityContext"]
        assert context["allowPrivilegeEscalation"] is False, container["name"]
        assert context["capabilities"]["drop"] == ["ALL"], container["name"]
        assert container["resources"]["requests"], container["name"]
        assert container["resources"]["limits"]["memory"], container["name"]


def test_the_service_sends_to_the_pods_http_port() -> None:
    service = _resource("Service")
    labels = _resource("Deployment")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    assert [p["targetPort"] for p in service["spec"]["ports"]] == ["http"]


def test_service_links_are_off_because_they_would_set_the_port(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kubernetes gives a pod ``{SERVICE}_PORT=tcp://…`` for every Service of its namespace; the
    Service ``toolcrib`` would so set TOOLCRIB_PORT, which the gateway cannot start with."""
    assert _resource("Service")["metadata"]["name"] == "toolcrib"
    monkeypatch.setenv("TOOLCRIB_PORT", "tcp://10.96.0.10:8765")
    with pytest.raises(ValidationError, match="port"):
        Settings()
    assert _pod()["enableServiceLinks"] is False


# --- the organization file ---------------------------------------------------------------------------


def test_the_example_org_file_shows_every_section() -> None:
    org = yaml.safe_load(ORG_FILE.read_text(encoding="utf-8"))
    assert set(org) == SECTIONS
    assert all(org[section] for section in SECTIONS)
    assert {c["name"] for c in org["connections"]} >= {"time", "crm"}


def test_the_example_org_file_validates_against_the_published_schema() -> None:
    """docs/toolcrib.schema.json is generated from the models ``toolcrib apply`` validates with."""
    if not SCHEMA.is_file():
        pytest.fail(f"schema missing: {SCHEMA.relative_to(ROOT)} (the organization file's JSON Schema, #26)")
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    org = yaml.safe_load(ORG_FILE.read_text(encoding="utf-8"))
    errors = sorted(validator_class(schema).iter_errors(org), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors]


def test_the_example_org_file_applies_to_an_empty_database_and_then_plans_nothing(tmp_path: Path) -> None:
    # What compose and the Kubernetes init container run first, on a new database (#26): the
    # example must apply (its unreachable crm connection is created, in error, without failing the
    # apply), and applying it made the organization exactly what it says.

    token = tmp_path / "crm-token"
    token.write_text("placeholder-token\n", encoding="utf-8")
    text = (ROOT / "deploy" / "org.yaml").read_text(encoding="utf-8")
    org = tmp_path / "org.yaml"
    org.write_text(text.replace("/run/secrets/crm-token", str(token)), encoding="utf-8")
    db_url = f"sqlite:///{tmp_path / 'org.db'}"
    bin_dir = str(Path(sys.executable).parent)  # where mcp-server-time is installed
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    applied = cli(db_url, "apply", "-f", str(org), env=env, check=False)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    plan = cli(db_url, "plan", "-f", str(org), env=env, check=False)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert "no changes" in plan.stdout
