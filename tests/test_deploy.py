"""The container files (Dockerfile, compose.yaml, deploy/Caddyfile) stay in step with the code,
without Docker (#11): every ``TOOLCRIB_*`` variable they set is a real setting, the image installs
the PostgreSQL driver, and the proxy balances over exactly the replicas compose runs."""

from __future__ import annotations

import re

from tests.conftest import ROOT
from toolcrib.settings import Settings

FILES = ("Dockerfile", "compose.yaml")


def test_r15_2_every_variable_the_container_files_set_is_a_setting() -> None:
    fields = {f"TOOLCRIB_{name.upper()}" for name in Settings.model_fields}
    for name in FILES:
        text = (ROOT / name).read_text(encoding="utf-8")
        used = set(re.findall(r"\bTOOLCRIB_[A-Z_]+\b", text))
        assert used, name
        assert used <= fields, (name, used - fields)


def test_r15_2_the_image_installs_the_postgres_extra_and_serves() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    assert "'.[postgres]'" in dockerfile
    assert 'CMD ["toolcrib", "serve"]' in dockerfile


def test_r15_2_the_proxy_balances_over_the_replicas_compose_runs() -> None:
    compose = (ROOT / "compose.yaml").read_text(encoding="utf-8")
    replicas = set(re.findall(r"^  (replica-[a-z]+): \*replica$", compose, re.M))
    caddy = (ROOT / "deploy" / "Caddyfile").read_text(encoding="utf-8")
    upstreams = set(re.findall(r"\b(replica-[a-z]+):8765\b", caddy))
    assert len(replicas) >= 2
    assert upstreams == replicas
