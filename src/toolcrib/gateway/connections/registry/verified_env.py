"""A PyPI registry entry that declares ``fileSha256``: the file checked before anything runs (R-13.9).

``uvx`` checks no hash: ``uvx --with-requirements FILE`` (or ``--constraints FILE``) holding
``NAME==VERSION --hash=sha256:…`` runs a package whose file has another hash all the same (uv
0.13). ``uv pip install -r FILE`` does check it: the file whose sha256 is not the declared one is
refused ("Hash mismatch") before it is installed. So such an entry gets a managed virtual
environment of its own, under the gateway's data directory (``.toolcrib/registry-envs/``, beside
the secret key), named by the connection and the hash:

1. ``uv venv --relocatable`` in a fresh directory ``.installing-…`` there;
2. ``uv pip install --verify-hashes -r requirements.txt`` into it, the requirements file (one
   line, ``NAME==VERSION --hash=sha256:HEX``) written beside it: the package's file is downloaded
   and checked before it is unpacked; its dependencies are resolved as ``uvx`` would;
3. only then is the directory renamed to ``{connection}-{sha256}``: a directory of that name is
   always one whose file was checked. The connection runs its program, ``bin/NAME``, as an argv.

A mismatch is ``invalid_arguments`` at ``/server_json/packages/N/fileSha256``; any other failure of
uv is ``upstream_error``. uv's own output goes to the gateway's log, never to the client.
``UV_NO_VERIFY_HASHES`` is taken out of uv's environment and ``--verify-hashes`` comes after the
organization's options, so neither can turn the check off.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

import anyio

from toolcrib.catalog.registry_launch import Launch
from toolcrib.errors import InvalidArguments, UpstreamError
from toolcrib.gateway.core import key_file
from toolcrib.settings import Settings

__all__ = ["command_of", "env_dir", "prepare"]

logger = logging.getLogger(__name__)

_SHA = re.compile(r"^[a-f0-9]{64}$")
_SAFE = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
_PROGRAM = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,213}$")
_VENV_FLAGS = {"--offline", "--no-config", "--native-tls"}
_VENV_VALUED = {"--cache-dir", "--python", "-p"}
_UV_LOG_CHARS = 2000


def env_dir(settings: Settings, connection: str, sha256: str) -> Path:
    """The verified environment of ``connection`` for the file ``sha256``."""
    if not _SHA.match(sha256):
        raise InvalidArguments(
            "fileSha256 must be 64 lowercase hex digits",
            [{"pointer": "/server_json/packages/fileSha256", "message": "not a sha256"}],
        )
    slug = connection if _SAFE.match(connection) else hashlib.sha256(connection.encode()).hexdigest()[:16]
    return key_file(settings).parent / "registry-envs" / f"{slug}-{sha256}"


def _spec(launch: Launch) -> tuple[str, str]:
    """The requirement ``NAME==VERSION`` and the program ``NAME`` of a PyPI launch."""
    spec = launch.argv[0]
    name = spec.partition("==")[0]
    if not _PROGRAM.match(name):  # checked as a plain name before; a path here would escape bin/
        raise InvalidArguments(
            "the package name is not a plain name",
            [{"pointer": f"/server_json{launch.at}/identifier", "message": "not a plain name"}],
        )
    return spec, name


def command_of(settings: Settings, connection: str, launch: Launch) -> list[str]:
    """The argv the connection runs: the package's program in its verified environment."""
    assert launch.file_sha256 is not None
    _, program = _spec(launch)
    return [str(env_dir(settings, connection, launch.file_sha256) / "bin" / program), *launch.argv[1:]]


def _options(options: Sequence[str]) -> tuple[list[str], list[str]]:
    """The organization's ``uvx`` options split into those for ``uv venv`` (the interpreter, the
    cache, offline, configuration) and those for ``uv pip install`` (all but the interpreter)."""
    venv: list[str] = []
    pip: list[str] = []
    words = list(options)
    i = 0
    while i < len(words):
        word = words[i]
        if word in _VENV_VALUED and i + 1 < len(words):
            pair = [word, words[i + 1]]
            venv += pair
            pip += [] if word in ("--python", "-p") else pair
            i += 2
            continue
        venv += [word] if word in _VENV_FLAGS else []
        pip.append(word)
        i += 1
    return venv, pip


async def _uv(uv: str, args: list[str], what: str) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "UV_NO_VERIFY_HASHES"}
    done = await anyio.run_process(
        [uv, *args], check=False, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=env
    )
    if done.returncode != 0:
        tail = done.stderr.decode("utf-8", "replace")[-_UV_LOG_CHARS:]
        logger.warning("uv failed to %s (exit %s): %s", what, done.returncode, tail)
    return done


async def prepare(settings: Settings, uv: str, connection: str, launch: Launch) -> list[str]:
    """Create the verified environment of ``launch`` for ``connection`` (unless there is one) and
    return the argv that runs it. Nothing of the package runs unless its file matched."""
    command = command_of(settings, connection, launch)
    target = env_dir(settings, connection, str(launch.file_sha256))
    if _ready(command):
        return command  # renamed into place only after a checked install
    spec, program = _spec(launch)
    work = _workdir(target)
    try:
        with anyio.fail_after(settings.registry_install_seconds):
            built = await _install(settings, uv, work, spec, str(launch.file_sha256), launch.at)
        _move(built, target, command, program, spec, launch.at)
    except TimeoutError:
        raise UpstreamError(
            f"uv did not install {spec} within {settings.registry_install_seconds:g} seconds"
        ) from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return command


def _ready(command: list[str]) -> bool:
    return Path(command[0]).is_file()


def _workdir(target: Path) -> Path:
    """A fresh directory beside ``target``, only the gateway's user may read."""
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=".installing-", dir=target.parent))


def _move(built: Path, target: Path, command: list[str], program: str, spec: str, at: str) -> None:
    """``built`` renamed ``target``, once it holds the program the connection runs."""
    if not (built / "bin" / program).is_file():
        raise InvalidArguments(
            f"the package {spec} installs no program named {program}",
            [{"pointer": f"/server_json{at}/identifier", "message": "no such program"}],
        )
    try:
        built.rename(target)
    except OSError:
        if not _ready(command):  # not another install of the same file, just done
            raise


def _requirements(env: Path, spec: str, sha256: str) -> Path:
    path = env / "toolcrib-requirements.txt"
    path.write_text(f"{spec} --hash=sha256:{sha256}\n", encoding="utf-8")
    return path


async def _install(settings: Settings, uv: str, work: Path, spec: str, sha256: str, at: str) -> Path:
    """``work/env``, a virtual environment holding ``spec`` whose file has ``sha256``."""
    venv_options, pip_options = _options(settings.registry_uvx_options)
    env = work / "env"
    made = await _uv(uv, ["venv", "--quiet", "--relocatable", *venv_options, str(env)], "create a venv")
    if made.returncode != 0:
        raise UpstreamError(f"uv could not create a virtual environment for {spec} (see the gateway's log)")
    requirements = _requirements(env, spec, sha256)
    args = ["pip", "install", "--quiet", *pip_options, "--python", str(env), "--verify-hashes"]
    done = await _uv(uv, [*args, "-r", str(requirements)], f"install {spec}")
    if done.returncode == 0:
        return env
    if b"Hash mismatch" in done.stderr:
        raise InvalidArguments(
            f"the file of {spec} does not match the entry's fileSha256: it was not installed and "
            "nothing of it ran",
            [{"pointer": f"/server_json{at}/fileSha256", "message": "the package file has another sha256"}],
        )
    raise UpstreamError(f"uv could not install {spec} (exit {done.returncode}; see the gateway's log)")
