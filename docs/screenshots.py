"""Take the admin console's screenshots (docs/admin/*.png) with the browser test's own setup.

    python docs/screenshots.py

It runs ``tests/admin/test_browser.py`` (a real gateway, Debian's Chromium driven by Playwright)
with ``TOOLCRIB_SCREENSHOTS`` pointing at ``docs/admin``: the test saves each page it visits as a
64-colour PNG. Nothing is downloaded; without Chromium (``apt-get install chromium``) it stops.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "admin"


def main() -> int:
    env = {**os.environ, "TOOLCRIB_SCREENSHOTS": str(OUT), "CI": "true"}  # CI: fail, never skip
    test = "tests/admin/test_browser.py"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test], cwd=ROOT, env=env
    )
    for png in sorted(OUT.glob("*.png")):
        print(f"{png.relative_to(ROOT)}  {png.stat().st_size // 1024} KiB")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
