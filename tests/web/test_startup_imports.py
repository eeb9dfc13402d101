"""What ``toolcrib serve`` does not load before its first use (#12: start-up is mostly imports):
Alembic (only for a schema behind the newest), Jinja2 (the console, at its first request), PyJWT
(only with an OAuth issuer set) and the model's runtime (at the first encode)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import ROOT, env_for

DEFERRED = ("alembic", "jinja2", "jwt", "onnxruntime", "onnx")


def test_the_app_of_toolcrib_serve_imports_none_of_the_deferred_packages() -> None:
    probe = (
        "import json, sys\n"
        "import toolcrib.cli.main, toolcrib.web.app\n"
        f"print(json.dumps([name for name in {DEFERRED!r} if name in sys.modules]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env_for(), capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) == []
