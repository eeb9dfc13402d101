"""Connection credentials encrypted at rest with Fernet (R-13.3)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet, InvalidToken

from toolcrib.errors import ConfigError

__all__ = ["SecretBox", "load_or_create_key"]


def load_or_create_key(configured: str | None, key_file: Path) -> bytes:
    """The configured key, or one generated once and kept (mode 0600) in ``key_file``."""
    if configured:
        return configured.encode()
    if key_file.exists():
        return key_file.read_bytes().strip()
    key_file.parent.mkdir(parents=True, exist_ok=True)
    key = Fernet.generate_key()
    fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(key)
    return key


class SecretBox:
    """Encrypts and decrypts a JSON value."""

    def __init__(self, key: bytes) -> None:
        try:
            self._fernet = Fernet(key)
        except ValueError as exc:
            raise ConfigError("TOOLCRIB_SECRET_KEY is not a valid Fernet key") from exc

    def seal(self, value: Any) -> str:
        return self._fernet.encrypt(json.dumps(value).encode()).decode()

    def open(self, token: str | None) -> Any:
        if not token:
            return None
        try:
            return json.loads(self._fernet.decrypt(token.encode()))
        except InvalidToken as exc:
            raise ConfigError("stored secrets cannot be decrypted with this secret key") from exc
