"""A real OpenID Provider for the sign-in tests (#22): npm's ``oidc-provider`` on the machine's node
(``tests/fixtures/oidc/server.js``, installed by ``make oidc-fixture``), driven like a browser would
through its own sign-in and consent pages (HTTP form posts)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import httpx2
from cryptography.hazmat.primitives.asymmetric import rsa
from joserfc.jwk import RSAKey
from tests.conftest import ROOT, free_port, not_run, wait_http

FIXTURE = ROOT / "tests" / "fixtures" / "oidc"
CLIENT_ID = "toolcrib-test"
OTHER_CLIENT_ID = "another-app"
CLIENT_SECRET = "a-test-client-secret-0123456789"
ACCOUNTS: dict[str, dict[str, Any]] = {
    "ann@example.com": {"email_verified": True, "groups": ["tc-admins", "staff"]},
    "bob@example.com": {"email_verified": True, "groups": ["staff"]},
    "eve@example.com": {"email_verified": True, "groups": []},
    "mallory@other.org": {"email_verified": True, "groups": ["staff"]},
    "carol@example.com": {"email_verified": False, "groups": ["staff"]},
}
ROLE_MAP = "tc-admins=admin,staff=member,auditors=auditor"


@dataclass
class Provider:
    proc: subprocess.Popen[bytes]
    issuer: str
    accounts_file: Path
    redirect_uri: str

    def set_groups(self, email: str, groups: list[str]) -> None:
        """Change what the provider says about ``email`` from its next sign-in on."""
        accounts = json.loads(self.accounts_file.read_text())
        accounts[email]["groups"] = groups
        self.accounts_file.write_text(json.dumps(accounts))

    def remove(self, email: str) -> None:
        """The provider forgets ``email``: its sign-in and its refresh tokens are refused from now on."""
        accounts = json.loads(self.accounts_file.read_text())
        accounts.pop(email, None)
        self.accounts_file.write_text(json.dumps(accounts))

    def restore(self) -> None:
        """Every account as it was at the start."""
        self.accounts_file.write_text(json.dumps(ACCOUNTS))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


def signing_keys(folder: Path) -> Path:
    """A private JWK set two providers can share (so a token of one verifies under the other's keys)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = RSAKey.import_key(key).as_dict(private=True)
    path = folder / "jwks.json"
    path.write_text(json.dumps({"keys": [{**jwk, "kid": "shared", "use": "sig", "alg": "RS256"}]}))
    return path


@contextmanager
def provider(
    folder: Path,
    redirect_uri: str,
    *,
    host: str = "127.0.0.1",
    jwks: Path | None = None,
    refresh_tokens: bool = True,
) -> Iterator[Provider]:
    """Start ``server.js`` on a free loopback port; its issuer is ``http://{host}:{port}``. With
    ``refresh_tokens`` it gives a refresh token to a sign-in asking for ``offline_access``."""
    node = shutil.which("node")
    if node is None or not (FIXTURE / "node_modules" / "oidc-provider").is_dir():
        not_run("the OpenID Provider tests need node and `make oidc-fixture` (npm ci in tests/fixtures/oidc)")
    port = free_port()
    folder.mkdir(parents=True, exist_ok=True)
    accounts = folder / f"accounts-{port}.json"
    accounts.write_text(json.dumps(ACCOUNTS))
    env = {
        "PATH": "/usr/bin:/bin",
        "PORT": str(port),
        "ISSUER": f"http://{host}:{port}",
        "CLIENT_ID": CLIENT_ID,
        "OTHER_CLIENT_ID": OTHER_CLIENT_ID,
        "CLIENT_SECRET": CLIENT_SECRET,
        "REDIRECT_URIS": redirect_uri,
        "ACCOUNTS_FILE": str(accounts),
        **({"JWKS_FILE": str(jwks)} if jwks else {}),
        **({} if refresh_tokens else {"NO_REFRESH": "1"}),
    }
    log = open(folder / f"provider-{port}.log", "ab")  # noqa: SIM115
    proc = subprocess.Popen([node, "server.js"], cwd=FIXTURE, env=env, stdout=log, stderr=log)
    started = Provider(proc, f"http://{host}:{port}", accounts, redirect_uri)
    try:
        wait_http(f"http://127.0.0.1:{port}/.well-known/openid-configuration", proc=proc)
        yield started
    finally:
        started.stop()
        log.close()


_ACTION = re.compile(r'<form[^>]*action="([^"]+)"')
_PROMPT = re.compile(r'name="prompt" value="(\w+)"')


async def to_callback(http: httpx2.AsyncClient, url: str, email: str, callback_prefix: str) -> str:
    """Follow ``url`` (the gateway's start, or an authorize URL) through the provider's sign-in and
    consent pages as ``email``; the URL the provider sends the browser back to (not visited)."""
    for _ in range(20):
        if url.startswith(callback_prefix):
            return url
        response = await http.get(url)
        if response.is_redirect:
            url = urljoin(str(response.url), response.headers["location"])
            continue
        action, prompt = _ACTION.search(response.text), _PROMPT.search(response.text)
        assert action, f"an unexpected page from the provider: {response.status_code}"
        assert prompt, f"an unexpected page from the provider: {response.status_code}"
        form = {"prompt": prompt[1]}
        if prompt[1] == "login":
            form |= {"login": email, "password": "any"}
        response = await http.post(urljoin(str(response.url), action[1]), data=form)
        assert response.is_redirect, response.text[:300]
        url = urljoin(str(response.url), response.headers["location"])
    raise AssertionError("the sign-in did not come back")


async def direct_id_token(
    http: httpx2.AsyncClient, idp: Provider, *, client_id: str, nonce: str, email: str
) -> str:
    """A genuine ID token of ``idp``, got by the test acting as the relying party ``client_id``
    (its own state, nonce and PKCE): the material of the ID-token attacks."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    query = {
        "response_type": "code", "client_id": client_id, "redirect_uri": idp.redirect_uri,
        "scope": "openid email groups", "state": "s", "nonce": nonce,
        "code_challenge": challenge, "code_challenge_method": "S256",
    }  # fmt: skip
    base = "http://127.0.0.1:" + str(urlsplit(idp.issuer).port)
    back = await to_callback(http, f"{base}/auth?{urlencode(query)}", email, idp.redirect_uri)
    code = parse_qs(urlsplit(back).query)["code"][0]
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": idp.redirect_uri,
        "code_verifier": verifier,
    }
    answer = await http.post(f"{base}/token", data=form, auth=(client_id, CLIENT_SECRET))
    assert answer.status_code == 200, answer.text
    return str(answer.json()["id_token"])
