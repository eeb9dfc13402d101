"""The real browser of the console tests: Playwright for Python driving Debian's ``chromium``.

No browser is downloaded (``playwright install`` is never run): Playwright's driver ships in its
wheel and is pointed at the system binary, which ``.ci/run`` installs with apt when missing. With
``CI=true`` a missing browser fails the test instead of skipping it.
"""

from __future__ import annotations

import io
import os
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

CHROMIUM = os.environ.get("TOOLCRIB_CHROMIUM", "/usr/bin/chromium")
VIEWPORT = {"width": 1180, "height": 760}


def chromium_or_skip() -> str:
    """The browser's path; without one, skip (fail under CI, which must have installed it)."""
    problem = None
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        problem = "playwright is not installed (the dev extra has it)"
    if problem is None and not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        problem = f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    if problem is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(problem)
        pytest.skip(problem)
    return CHROMIUM


@asynccontextmanager
async def browser_page(base: str) -> AsyncIterator[Any]:
    """One headless Chromium page whose relative URLs go to ``base``."""
    from playwright.async_api import async_playwright

    executable = chromium_or_skip()
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path=executable, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            context = await browser.new_context(base_url=base, viewport=VIEWPORT)  # type: ignore[arg-type]
            yield await context.new_page()
        finally:
            await browser.close()


async def screenshot(page: Any, name: str) -> None:
    """Save the page as ``$TOOLCRIB_SCREENSHOTS/name.png`` when that is set (docs/screenshots.py).

    The PNG is reduced to a 64-colour palette, which keeps a page of text and tables small.
    """
    folder = os.environ.get("TOOLCRIB_SCREENSHOTS")
    if not folder:
        return
    from PIL import Image

    raw = await page.screenshot(full_page=False)

    def save() -> None:
        image = Image.open(io.BytesIO(raw)).convert("RGB").quantize(colors=64)
        Path(folder).mkdir(parents=True, exist_ok=True)
        image.save(Path(folder) / f"{name}.png", optimize=True)

    await anyio.to_thread.run_sync(save)
