"""A real single-node Slurm for the tests of ``slurm/*.sbatch``: ``from tests.slurm_cluster import slurm``.

The session fixture ``slurm`` starts munged (as the munge user, its socket in a temporary folder), slurmctld
and ``slurmd -N localhost``, all in the foreground (``-D``/``-F``) as children of pytest, with a slurm.conf
of its own under that folder (state, spool, pid and log files there too; free ports, so it never meets
another cluster), waits until the node is ``idle`` and yields a :class:`SlurmCluster`: ``env``
(``SLURM_CONF`` for every client), ``submit(args) -> job id``, ``wait(job id) -> {task: state}``, ``job(job
id)`` and ``logs()`` (the daemons' log tails, for assertion messages). Teardown cancels every job, shuts the
daemons down, stops munged and then looks in /proc for anything still alive that carries this cluster's
``SLURM_CONF`` (a leaked job process): such processes are killed and reported as an error.

Facts it relies on (found on Slurm 22.05, Debian 12, as root, no systemd): clients need
``SLURM_CONF``; ``SlurmdParameters=config_overrides`` lets the node advertise more CPUs than it has, so all
the tasks of a small array start in one scheduling pass; no accounting, so the final states come from
``scontrol show job`` (kept for ``MinJobAge`` seconds), not ``sacct``; finished processes can linger as
zombies, so "alive" is read from ``/proc/PID/stat``. Without the daemons installed the fixture skips; it
needs root (the daemons and munged's user switch).
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterator

import pytest

INSTALL_HINT = "Slurm is not installed: apt-get install slurmctld slurmd slurm-client munge"
ADVERTISED_CPUS = 64  # more than the machine has (config_overrides): small arrays start together
FAKE_GPUS = 2  # GRES without devices: jobs may ask for GPUs (--gpus-per-node) and see SLURM_GPUS_ON_NODE
FINAL_STATES = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY",
                "BOOT_FAIL", "DEADLINE", "REVOKED", "SPECIAL_EXIT"}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tail(path: Path, n: int = 25) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return f"({path.name}: no log)"
    return "\n".join(lines[-n:])


def _alive(pid: int) -> bool:
    """True when PID exists and is not a zombie (``kill -0`` succeeds on zombies)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _mem_mb() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) // 1024
    except OSError:
        pass
    return 4096


def _fields(record: str) -> dict[str, str]:
    return dict(re.findall(r"(\w+)=(\S*)", record))


class SlurmCluster:
    def __init__(self, root: Path, extra_conf: str = ""):
        self.root = root
        self.conf = root / "etc" / "slurm.conf"
        self.munge_dir = root / "munge"
        self.log_dir = root / "log"
        self.procs: dict[str, subprocess.Popen] = {}
        self.env = dict(os.environ, SLURM_CONF=str(self.conf))
        for k in list(self.env):  # a cluster of its own: no job context of an enclosing Slurm job leaks in
            if k.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_")) and k != "SLURM_CONF":
                del self.env[k]
        self.extra_conf = extra_conf

    # ---- start and stop -------------------------------------------------------------------------------
    def _write_conf(self) -> None:
        for d in ("etc", "state", "spool", "run", "log"):
            (self.root / d).mkdir(parents=True, exist_ok=True)
        r = self.root
        for i in range(FAKE_GPUS):  # device files for the fake GPUs (gres/gpu wants File=)
            (r / "run" / f"fakegpu{i}").touch()
        (self.conf.parent / "gres.conf").write_text(
            f"NodeName=localhost Name=gpu File={r / 'run' / 'fakegpu'}[0-{FAKE_GPUS - 1}]\n")
        node = (f"NodeName=localhost NodeAddr=127.0.0.1 CPUs={ADVERTISED_CPUS} "
                f"RealMemory={max(512, int(_mem_mb() * 0.8))} Gres=gpu:{FAKE_GPUS} State=UNKNOWN")
        self.conf.write_text(f"""\
# written by tests/slurm_cluster.py
ClusterName=mautest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={self.munge_dir / 'munge.socket'}
CredType=cred/munge
StateSaveLocation={r / 'state'}
SlurmdSpoolDir={r / 'spool'}
SlurmctldPidFile={r / 'run' / 'slurmctld.pid'}
SlurmdPidFile={r / 'run' / 'slurmd.pid'}
SlurmctldLogFile={self.log_dir / 'slurmctld.log'}
SlurmdLogFile={self.log_dir / 'slurmd.log'}
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
MailProg=/bin/true
ReturnToService=2
SlurmdParameters=config_overrides
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
MinJobAge=300
KillWait=2
InactiveLimit=0
GresTypes=gpu
{node}
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
{self.extra_conf}
""")

    def _spawn(self, name: str, cmd: list[str], **kw) -> None:
        log = open(self.log_dir / f"{name}.stdout", "ab")
        self.procs[name] = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=self.env,
            start_new_session=True, **kw,
        )
        log.close()

    def start(self, timeout_s: float = 30.0) -> None:
        self._write_conf()
        os.chmod(self.root, 0o755)  # munged (as the munge user) must reach its folder
        self.munge_dir.mkdir(mode=0o755)
        mu = pwd.getpwnam("munge")
        os.chown(self.munge_dir, mu.pw_uid, mu.pw_gid)
        m = self.munge_dir
        self._spawn(
            "munged",
            [
                "munged", "-F", f"--socket={m / 'munge.socket'}", f"--pid-file={m / 'munged.pid'}",
                f"--seed-file={m / 'munged.seed'}",
            ],
            user=mu.pw_uid, group=mu.pw_gid, extra_groups=[],
        )
        self._wait_for(lambda: (m / "munge.socket").exists(), timeout_s, "munged to create its socket")
        self._spawn("slurmctld", ["slurmctld", "-D", "-i", "-f", str(self.conf)])
        self._spawn("slurmd", ["slurmd", "-D", "-N", "localhost", "-f", str(self.conf)])
        self._wait_for(lambda: self.sinfo_state() == "idle", timeout_s, "the node to be idle")

    def _wait_for(self, cond, timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for name, p in self.procs.items():
                if p.poll() is not None:
                    raise RuntimeError(f"{name} exited with code {p.returncode} while waiting for {what}\n"
                                       + self.logs())
            if cond():
                return
            time.sleep(0.1)
        raise RuntimeError(f"timed out after {timeout_s:g} s waiting for {what}\n" + self.logs())

    def stop(self) -> list[str]:
        """Cancel every job, stop the daemons; returns a description of leaked processes (killed), if any."""
        if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
            self.cmd(["scancel", "--partition=debug"], check=False)
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and self.cmd(["squeue", "-h", "-o", "%i"], check=False).strip():
                time.sleep(0.2)
            self.cmd(["scontrol", "shutdown"], check=False)
        for name in ("slurmd", "slurmctld", "munged"):
            p = self.procs.get(name)
            if p is None:
                continue
            if name == "munged" and p.poll() is None:
                p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=5)
        return self._reap_leaks()

    def _reap_leaks(self, grace_s: float = 5.0) -> list[str]:
        """Processes still alive that carry this cluster's SLURM_CONF (jobs, steps, stubs): wait, then
        kill."""
        marker = f"SLURM_CONF={self.conf}".encode()

        def leaked() -> dict[int, str]:
            out: dict[int, str] = {}
            for d in Path("/proc").iterdir():
                if not d.name.isdigit() or int(d.name) == os.getpid():
                    continue
                try:
                    env = (d / "environ").read_bytes().split(b"\0")
                    cmdline = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                except OSError:
                    continue
                if marker in env and _alive(int(d.name)):
                    out[int(d.name)] = cmdline.strip()
            return out

        deadline = time.monotonic() + grace_s
        found = leaked()
        while found and time.monotonic() < deadline:
            time.sleep(0.2)
            found = leaked()
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return [f"{pid}: {cmd}" for pid, cmd in found.items()]

    # ---- clients ----------------------------------------------------------------------------------------
    def cmd(self, args: list[str], check: bool = True, env: dict[str, str] | None = None, **kw) -> str:
        r = subprocess.run(args, capture_output=True, text=True, env=env or self.env, timeout=30, **kw)
        if check and r.returncode != 0:
            raise AssertionError(f"{' '.join(args)} failed ({r.returncode}): "
                                 f"{r.stderr.strip()}\n" + self.logs())
        return r.stdout

    def sinfo_state(self) -> str:
        r = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], capture_output=True, text=True, env=self.env,
                           timeout=10)
        return r.stdout.strip() if r.returncode == 0 else ""

    def submit(
        self, args: list[str], env: dict[str, str] | None = None, cwd: str | Path | None = None
    ) -> str:
        """``sbatch --parsable ARGS``; the job id. ``env`` adds to (or overrides) the cluster's
        environment."""
        full_env = dict(self.env, **(env or {}), SLURM_CONF=str(self.conf))
        out = self.cmd(["sbatch", "--parsable", *map(str, args)], env=full_env, cwd=cwd)
        return out.strip().split(";")[0]

    def job(self, job_id: str) -> list[dict[str, str]]:
        """``scontrol -o show job``: one dict per job (per task for an array); [] once it is forgotten."""
        r = subprocess.run(["scontrol", "-o", "show", "job", str(job_id)], capture_output=True, text=True,
                           env=self.env, timeout=10)
        return [_fields(line) for line in r.stdout.splitlines() if line.strip()] if r.returncode == 0 else []

    def states(self, job_id: str) -> dict[str, str]:
        """{array task id (or job id): JobState} for the job now."""
        return {
            (j.get("ArrayTaskId") or j.get("JobId", "?")): j.get("JobState", "?") for j in self.job(job_id)
        }

    def wait(self, job_id: str, timeout: float = 60.0) -> dict[str, str]:
        """Poll until every task of the job has left the queue; returns {task (or job id): final JobState}."""
        deadline = time.monotonic() + timeout
        while True:
            queued = self.cmd(["squeue", "-h", "-j", str(job_id), "-o", "%i %T"], check=False).strip()
            states = self.states(job_id)
            if not queued and states and all(s in FINAL_STATES for s in states.values()):
                return states
            if time.monotonic() > deadline:
                raise AssertionError(f"job {job_id} not done after {timeout:g} s: squeue {queued!r}, "
                                     f"states {states}\n" + self.logs())
            time.sleep(0.2)

    def logs(self, n: int = 25) -> str:
        """The daemons' log tails (a daemon's stdout where it has no log file yet: errors before it opened
        one)."""
        parts = []
        for name in ("slurmctld", "slurmd", "munged"):
            path = self.log_dir / f"{name}.log"
            if not path.exists() or name == "munged":  # munged -F logs to its stdout
                path = self.log_dir / f"{name}.stdout"
            parts.append(f"--- {path} (last {n} lines) ---\n{_tail(path, n)}")
        return "\n".join(parts)


def slurm_cluster(extra_conf: str = "") -> Iterator[SlurmCluster]:
    """The generator behind the fixture (for other scopes: ``yield from slurm_cluster()``)."""
    missing = [
        b for b in ("slurmctld", "slurmd", "munged", "sbatch", "squeue", "scontrol") if not shutil.which(b)
    ]
    # CI sets MAU_REQUIRE_SLURM=1 (.ci/run): there a missing Slurm is a failure, not a skip.
    stop = pytest.fail if os.environ.get("MAU_REQUIRE_SLURM") == "1" else pytest.skip
    if missing:
        stop(f"missing {', '.join(missing)}: {INSTALL_HINT}")
    if os.geteuid() != 0:
        stop("the Slurm tests start slurmctld, slurmd and munged and need root")
    root = Path(tempfile.mkdtemp(prefix="mau-slurm-"))  # short: munged's socket path has a length limit
    cluster = SlurmCluster(root, extra_conf)
    leaks: list[str] = []
    try:
        cluster.start()
        yield cluster
    finally:
        leaks = cluster.stop()
        if not leaks:
            shutil.rmtree(root, ignore_errors=True)
    if leaks:
        raise AssertionError(f"processes of the test cluster outlived it (killed; logs kept in {root}):\n"
                             + "\n".join(leaks))


@pytest.fixture(scope="session")
def slurm() -> Iterator[SlurmCluster]:
    yield from slurm_cluster()
