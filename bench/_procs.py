"""Processes the benchmarks start: free ports, readiness, CPU and memory from /proc, stopping."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from contextlib import suppress
from pathlib import Path

import httpx2

__all__ = [
    "cpu_seconds",
    "descendants",
    "free_port",
    "pss_mb",
    "rss_mb",
    "stop",
    "tree_cpu_seconds",
    "wait_http",
]

TICKS = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_http(url: str, proc: subprocess.Popen[bytes], timeout: float = 60.0, *, ok: bool = True) -> float:
    """Seconds until ``url`` answers (200 when ``ok``; bounded), failing if ``proc`` died."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before serving {url}")
        try:
            status = httpx2.get(url, timeout=1.0).status_code
            if status == 200 or not ok:
                return time.monotonic() - start
        except httpx2.HTTPError:
            pass
        time.sleep(0.02)
    raise TimeoutError(url)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime (fields 14, 15)


def descendants(pid: int) -> list[int]:
    """The live processes under ``pid`` (children, grandchildren, ...), from /proc's parent ids:
    a server that forks workers (ContextForge 1.1.0's sandbox pools) spends and holds in them too."""
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        parents.setdefault(ppid, []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def tree_cpu_seconds(pid: int) -> float:
    """``cpu_seconds`` of ``pid`` and its live descendants together."""
    total = 0.0
    for each in [pid, *descendants(pid)]:
        with suppress(OSError):  # exited between the listing and the read
            total += cpu_seconds(each)
    return total


def pss_mb(pids: list[int]) -> float:
    """The proportional set size of ``pids`` together: pages forked workers share with their
    parent count once (summing RSS would count them in every worker)."""
    total = 0
    for pid in pids:
        try:
            rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:
            continue
        for line in rollup.splitlines():
            if line.startswith("Pss:"):
                total += int(line.split()[1])
    return total / 1024


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
