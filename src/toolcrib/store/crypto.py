"""Connection credentials encrypted at rest with Fernet (R-13.3)."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolcrib.errors import ConfigError

if TYPE_CHECKING:
    from cryptography.fernet import Fernet

__all__ = ["SecretBox", "load_or_create_key"]


def load_or_create_key(configured: str | None, key_file: Path) -> bytes:
    """The configured key, or one generated once and kept (mode 0600) in ``key_file``."""
    if configured:
        return configured.encode()
    if key_file.exists():
        return key_file.read_bytes().strip()
    key_file.parent.mkdir(parents=True, exist_ok=True)
    key = base64.urlsafe_b64encode(os.urandom(32))  # what Fernet.generate_key makes
    fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(key)
    return key


class SecretBox:
    """Encrypts and decrypts a JSON value.

    The key is checked when the box is made; cryptography is imported at the first seal or open
    (about 0.01 s of a command that opens no secret, #33)."""

    def __init__(self, key: bytes) -> None:
        try:
            valid = len(base64.urlsafe_b64decode(key)) == 32  # Fernet's own check of its key
        except ValueError:  # binascii.Error is one
            valid = False
        if not valid:
            raise ConfigError("TOOLCRIB_SECRET_KEY is not a valid Fernet key")
        self._key = key
        self._made: Fernet | None = None

    def _fernet(self) -> Fernet:
        if self._made is None:
            from cryptography.fernet import Fernet

            self._made = Fernet(self._key)
        return self._made

    def seal(self, value: Any) -> str:
        return self._fernet().encrypt(json.dumps(value).encode()).decode()

    def open(self, token: str | None) -> Any:
        if not token:
            return None
        from cryptography.fernet import InvalidToken

        try:
            return json.loads(self._fernet().decrypt(token.encode()))
        except InvalidToken as exc:
            raise ConfigError("stored secrets cannot be decrypted with this secret key") from exc
