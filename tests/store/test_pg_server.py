"""The test run's own PostgreSQL server (#11): found where Debian puts it, and never silently
skipped in CI."""

from __future__ import annotations

import pytest

from tests import pg
from tests.conftest import not_run


def test_11_missing_server_binaries_are_said_plainly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pg.shutil, "which", lambda _name: None)
    monkeypatch.setattr(pg.glob, "glob", lambda _pattern: [])
    with pytest.raises(pg.PostgresUnavailable, match="postgresql"):
        pg.find_bin_dir()


def test_11_debian_versioned_bin_dirs_are_found_newest_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pg.shutil, "which", lambda _name: None)
    found = ["/usr/lib/postgresql/9/bin/pg_ctl", "/usr/lib/postgresql/16/bin/pg_ctl"]
    monkeypatch.setattr(pg.glob, "glob", lambda _pattern: found)
    assert str(pg.find_bin_dir()) == "/usr/lib/postgresql/16/bin"


def test_11_postgresql_tests_fail_under_ci_instead_of_skipping(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception):
        not_run("PostgreSQL tests NOT RUN: no server")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception):
        not_run("PostgreSQL tests NOT RUN: no server")
