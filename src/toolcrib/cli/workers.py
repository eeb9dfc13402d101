"""``toolcrib serve --workers N``: N gateway processes behind one port (uvicorn's workers).

Each worker is a replica (R-15.2): its own gateway, upstream sessions and search index over the one
database. They read their settings from the environment, which ``serve`` fills in first; a secret
key that is generated is generated here, once, before any worker starts, so that all share it.
"""

from __future__ import annotations

import os

import uvicorn
from starlette.applications import Starlette

from toolcrib.settings import Settings

__all__ = ["app_from_environment", "serve_workers"]


def app_from_environment() -> Starlette:
    """The app of one worker (uvicorn calls this factory in each worker process)."""
    from toolcrib.logs import configure
    from toolcrib.web.app import create_app

    settings = Settings()
    configure(settings.log_level, settings.log_format)
    return create_app(settings)


def serve_workers(settings: Settings, workers: int) -> None:
    from toolcrib.gateway.core import ensure_key_file

    os.environ["TOOLCRIB_DATABASE_URL"] = settings.database_url
    os.environ["TOOLCRIB_HOST"] = settings.host
    os.environ["TOOLCRIB_PORT"] = str(settings.port)
    if not settings.secret_key:
        ensure_key_file(settings)
    uvicorn.run(
        "toolcrib.cli.workers:app_from_environment",
        factory=True,
        workers=workers,
        host=settings.host,
        port=settings.port,
        log_level="warning",
        timeout_keep_alive=settings.http_keep_alive_seconds,
        ws="none",  # no WebSocket route: its protocol modules are not even imported
        proxy_headers=False,  # toolcrib.web.proxies alone decides whom to believe (trusted_proxies)
    )
