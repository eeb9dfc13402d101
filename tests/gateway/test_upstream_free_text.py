"""R-13.3: free text about a connection (stderr, error messages, log lines) hides its credentials."""

from __future__ import annotations

from toolcrib.gateway.calls.shaping import redact_text
from toolcrib.upstream.spec import UpstreamSpec


def _spec(**values: object) -> UpstreamSpec:
    base: dict[str, object] = {
        "name": "crm",
        "transport": "http",
        "url": "https://bob:url-password-123@crm.example/mcp",
        "env": {"API_KEY": "env-secret-value", "DEBUG": "1"},
        "headers": {"X-Token": "header-secret-value"},
    }
    return UpstreamSpec(**{**base, **values})  # type: ignore[arg-type]


def test_r13_3_the_url_password_is_one_of_the_connection_secrets() -> None:
    assert "url-password-123" in _spec().secret_values()


def test_r13_3_free_text_loses_every_secret_of_the_connection() -> None:
    text = "failed: env-secret-value / header-secret-value / https://bob:url-password-123@crm.example"
    redacted = _spec().redact(text)
    for secret in ("env-secret-value", "header-secret-value", "url-password-123"):
        assert secret not in redacted
    assert redacted.count("[REDACTED]") == 3


def test_r13_3_short_values_are_not_blanked_all_over_the_text() -> None:
    assert _spec().redact("exit code 1") == "exit code 1"


def test_r13_3_the_gateway_scrub_adds_credential_shapes() -> None:
    spec = _spec()
    own = spec.secret_values()
    scrubbed = UpstreamSpec(
        name=spec.name,
        transport="http",
        url=spec.url,
        env=spec.env,
        headers=spec.headers,
        scrub=lambda text: redact_text(text, own),
    )
    redacted = scrubbed.redact("env-secret-value Authorization: Bearer abcdefghijklmnop1234")
    assert "env-secret-value" not in redacted
    assert "abcdefghijklmnop1234" not in redacted
    assert scrubbed == spec  # the scrub is not part of what identifies a session
