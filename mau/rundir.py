"""One home per run: the run folder (``RunDir``) every run verb writes into.

A ``RunDir`` owns what every run folder needs: the dated default name, the refusal to write into an existing
run without ``--resume`` (or ``--force``), atomic writes, folders with the user's umask, and, for runs of
matches (collect, eval), the creation lock, the versioned header with the run's identity checked on resume,
``config.yaml`` + ``provenance.json``.

Creation is safe against a kill at any moment: the header (``run.json``) is written last and atomically, and a
folder that holds only the files of an unfinished creation (no header, no match) is recreated by the next run
or ``--resume``. Shards that start together take turns through a lock, so exactly one creates the folder.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from mau import schema as F
from mau.errors import ConfigError, MauError

LOCK_FILE = ".init.lock"
# What an unfinished creation may have left (besides temporary files): the next run finishes it.
CREATION_FILES = (F.RESOLVED_CONFIG, F.PROVENANCE_FILE, F.GRID_FILE, F.MATCHES_DIR, F.LOGS_DIR, LOCK_FILE)


def dated_run_dir(kind: str, tag: str) -> Path:
    """runs/<kind>/<date>/<time>_<tag>: self-describing default run folders."""
    now = dt.datetime.now()
    return Path("runs") / kind / now.strftime("%Y-%m-%d") / f"{now.strftime('%H-%M-%S')}_{tag}"


def umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def make_staging(final: Path) -> Path:
    """A hidden sibling folder ``.<name>.partial-XXXX`` for ``final``, with the user's umask (``mkdtemp``
    makes folders private: a team on shared storage could not read the runs)."""
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{final.name}.partial-", dir=final.parent))
    os.chmod(staging, 0o777 & ~umask())
    return staging


def atomic_write(path: Path, data: str | bytes) -> None:
    """Write ``data`` to ``path`` by one rename: readers (and other shards writing the same file) see the old
    file or a whole new one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    if isinstance(data, bytes):
        tmp.write_bytes(data)
    else:
        tmp.write_text(data)
    os.replace(tmp, path)


def first_difference(a: Any, b: Any, path: str = "") -> str:
    """The dotted key of the first place where two nested dicts differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if a.get(k) != b.get(k):
                return first_difference(a.get(k), b.get(k), f"{path}.{k}" if path else k)
    return path or "(top level)"


@contextmanager
def init_lock(out: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``out`` while its run folder is created or checked: shards that start
    together take turns, so exactly one creates the folder and the others join it."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / LOCK_FILE, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


class RunDir:
    """A run's folder. ``what`` names the kind in messages ("collect run", "dataset", ...)."""

    def __init__(self, path: str | Path, what: str):
        self.path = Path(path)
        self.what = what

    @classmethod
    def choose(cls, out: str | None, kind: str, tag: str, what: str) -> "RunDir":
        """``--out`` if given, else the dated default runs/<kind>/<date>/<time>_<tag>."""
        return cls(Path(out) if out else dated_run_dir(kind, tag), what)

    def __truediv__(self, name: str) -> Path:
        return self.path / name

    def __str__(self) -> str:
        return str(self.path)

    # -- guards -------------------------------------------------------------------------------------------
    def is_empty(self) -> bool:
        return not self.path.exists() or (self.path.is_dir() and not any(self.path.iterdir()))

    def keep_finished(self, finished: bool, resume: bool, force: bool = False) -> bool:
        """The guard of single-output verbs (play, dataset, tiny-model, quickstart): True when ``--out``
        holds a finished output and ``--resume`` keeps it; an error when it holds one without
        ``--resume``/``--force``,
        or holds something else. With ``--force`` a finished output is removed and made again."""
        if finished:
            if resume:
                return True
            if not force:
                raise MauError(f"--out {self.path}: already holds a finished {self.what}; pass --resume to "
                               f"keep it, "
                               "--force to replace it, or choose another --out")
            shutil.rmtree(self.path)
        elif not self.is_empty():
            raise MauError(f"--out {self.path}: exists and is not a {self.what} folder; choose an empty or "
                           f"new folder")
        return False

    def is_ours(self) -> bool:
        """A run folder of this kind holds its resolved config (written when the run starts)."""
        return (self.path / F.RESOLVED_CONFIG).is_file()

    def write_config(self, config_yaml: str, **provenance_extra: Any) -> None:
        """The run's resolved config and its provenance (code, versions, host, plus ``provenance_extra``),
        each written atomically: every run folder describes itself."""
        from mau.provenance import provenance

        self.path.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path / F.RESOLVED_CONFIG, config_yaml)
        atomic_write(self.path / F.PROVENANCE_FILE, json.dumps({**provenance(), **provenance_extra}, indent=1,
                                                               default=str))

    # -- runs of matches: header, identity, config, provenance ---------------------------------------------
    def open_run(self, fmt: str, version: int, identity: dict[str, Any], resume: bool, config_yaml: str,
                 planned: list[dict[str, Any]]) -> None:
        """Create the run folder, or check (with ``resume``) that the existing one is this run. A folder left
        by a creation that was killed before its header was written is created again."""
        with init_lock(self.path):
            if (self.path / F.RUN_HEADER).is_file():
                if not resume:
                    raise MauError(f"--out {self.path}: already holds a {self.what}; pass --resume to "
                                   f"continue it, "
                                   "or choose another --out")
                self.check_header(fmt, version, identity)
                return
            self._clear_unfinished_creation()
            (self.path / F.MATCHES_DIR).mkdir(exist_ok=True)
            self.write_config(config_yaml)
            atomic_write(self.path / F.GRID_FILE, "".join(json.dumps(p) + "\n" for p in planned))
            # The header goes last: a folder with run.json is a complete, resumable run.
            atomic_write(
                self.path / F.RUN_HEADER,
                json.dumps(
                    {
                        F.FORMAT: fmt, F.FORMAT_VERSION: version, "planned_matches": len(planned),
                        "identity": identity,
                    },
                    indent=1,
                ),
            )

    def _clear_unfinished_creation(self) -> None:
        for p in self.path.iterdir():
            tmp = p.name.startswith(".") and p.name.endswith(".tmp")
            if p.name not in CREATION_FILES and not tmp:
                raise MauError(f"--out {self.path}: exists and is not a {self.what}; choose an empty or new "
                               f"folder")
            if p.name == F.MATCHES_DIR and any(p.iterdir()):
                raise MauError(f"--out {self.path}: has matches but no {F.RUN_HEADER}; it is not a "
                               f"{self.what} "
                               "this mau can continue; choose another --out")
        for p in self.path.iterdir():
            if p.name.startswith(".") and p.name.endswith(".tmp"):
                p.unlink(missing_ok=True)

    def check_header(self, fmt: str, version: int, identity: dict[str, Any]) -> dict[str, Any]:
        """The run's header, checked: its format and version, and that ``identity`` defines the same run."""
        path = self.path / F.RUN_HEADER
        if not path.is_file():
            raise MauError(f"--out {self.path}: holds no {self.what} (no {F.RUN_HEADER}); play it first")
        header = json.loads(path.read_text())
        if header.get(F.FORMAT) != fmt or header.get(F.FORMAT_VERSION) != version:
            raise MauError(f"{path}: not a {fmt} v{version} run folder "
                           f"(format {header.get(F.FORMAT)!r} v{header.get(F.FORMAT_VERSION)})")
        if header["identity"] != identity:
            key = first_difference(header["identity"], identity)
            raise ConfigError(f"--resume {self.path}: the config differs from the run's at {key}; use the "
                              f"run's {F.RESOLVED_CONFIG}")
        return header
