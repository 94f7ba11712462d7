"""External processes (model servers, later Node) as context managers: a free port chosen at run time, logs
to a file, a readiness handshake with a timeout, and the whole process group ended on exit."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Callable

from mau.errors import MauError


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def http_ok(url: str) -> Callable[[], bool]:
    """A readiness check: the URL answers 200."""

    def check() -> bool:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                return r.status == 200
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            return False

    return check


class ManagedProcess:
    """``with ManagedProcess(cmd, log, ready=http_ok(url), timeout_s=60) as proc: ...``

    Starts ``cmd`` in its own process group with stdout and stderr to ``log``; waits until ``ready()`` is true
    (raising, with the log's last lines, if the process dies or the timeout passes); on exit ends the group
    (SIGTERM, then SIGKILL after a grace period)."""

    def __init__(self, cmd: list[str], log: str | Path, ready: Callable[[], bool], timeout_s: float = 60.0,
                 env: dict[str, str] | None = None, name: str = "server"):
        self.cmd, self.log, self.ready, self.timeout_s = cmd, Path(log), ready, timeout_s
        self.env, self.name = env, name
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> "ManagedProcess":
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self._log_f = open(self.log, "ab")
        self.proc = subprocess.Popen(
            self.cmd, stdout=self._log_f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, env=self.env,
        )
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self._stop()
                raise MauError(f"{self.name} exited with code {self.proc.returncode} before it was ready; "
                               f"see {self.log}: {self.tail()}")
            if self.ready():
                return self
            time.sleep(0.05)
        self._stop()
        raise MauError(f"{self.name} was not ready after {self.timeout_s:g} s; see {self.log}: {self.tail()}")

    def tail(self, n: int = 3) -> str:
        try:
            lines = self.log.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return " | ".join(lines[-n:])

    def _stop(self, grace_s: float = 5.0) -> None:
        if self.proc is None:
            return
        end_process_group(self.proc, grace_s)
        self._log_f.close()

    def __exit__(self, *exc) -> None:
        self._stop()


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass


def end_process_group(proc: subprocess.Popen, grace_s: float = 5.0) -> None:
    """End a process started with ``start_new_session=True`` and its whole group: SIGTERM, wait ``grace_s``,
    then SIGKILL. The group may outlive its leader (xvfb-run's Xvfb, node's workers), so what is left is
    killed too."""
    _signal_group(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        _signal_group(proc.pid, signal.SIGKILL)
        proc.wait()
    _signal_group(proc.pid, signal.SIGKILL)
