"""mau quickstart end to end, shrunk (both learners: a tiny student written here and the tiny VLM; a few
matches; two training steps; one eval seed), its console (bars and the table there, everything else in the
log), the table and verdict read from the run's results, the picture, and the tiny VLM's candidate-scored
VOTE."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from mau.eval.verdict import verdict_line

SEEDS = 4


def _paired(diff: float, lo: float, hi: float) -> tuple[dict, dict]:
    det = {"row": "bc", "versus": "base", "metric": "auroc_within", "imposter": "accusatory", "diff": diff,
           "ci_low": lo, "ci_high": hi, "n_pairs": SEEDS}
    win = {
        "arm": "bc", "baseline": "base", "imposter": "accusatory", "diff": diff, "ci_low": lo, "ci_high": hi,
        "n_pairs": SEEDS,
    }
    return det, win


@pytest.mark.parametrize("lo,hi,word", [(0.1, 0.5, "lifted"), (-0.1, 0.5, "did not clearly change"),
                                        (-0.5, -0.1, "lowered")])
def test_verdict_reads_the_paired_interval(lo, hi, word):
    det, win = _paired((lo + hi) / 2, lo, hi)
    # not the baseline's
    other = {**det, "versus": "ideal observer", "diff": 0.9, "ci_low": 0.8, "ci_high": 0.95}
    res = {"columns": ["accusatory"], "paired": [win], "detection": {"paired": [other, det]}}
    line = verdict_line(res, "bc", "base", what="BC", versus_name="the untrained student")
    auroc = f"{det['diff']:+.2f} [{lo:+.2f}, {hi:+.2f}]"
    wins = f"{100 * win['diff']:+.0f} pp [{100 * lo:+.0f}, {100 * hi:+.0f}]"
    if word == "did not clearly change":
        assert line.startswith(f"Verdict: BC {word} within-probe AUROC ({auroc})")
        assert f"{word} crew win rate ({wins})" in line
    else:
        assert line.startswith(f"Verdict: BC {word} within-probe AUROC by {auroc}")
        assert f"{word} crew win rate by {wins}" in line
    assert line.endswith(f"over the untrained student (paired 95% intervals, {SEEDS} pairs of matches).")
    # several imposter models: the pooled column is read
    pooled = {**det, "imposter": "all", "diff": 0.3, "ci_low": 0.2, "ci_high": 0.4}
    res = {"columns": ["accusatory", "framer", "all"], "paired": [], "detection": {"paired": [det, pooled]}}
    assert verdict_line(res, "bc", "base").startswith("Verdict: bc lifted within-probe AUROC by +0.30 "
                                                      "[+0.20, +0.40]")
    assert "no paired comparison" in verdict_line({"columns": ["x"], "paired": []}, "bc", "base")


def test_quiet_console_keeps_library_lines_out_of_sight(tmp_path):
    """The fd path (a real stdout): the user's lines and the bar on the console; prints, warnings and a child
    process's output in the log."""
    import subprocess
    import sys
    import textwrap

    log = tmp_path / "run" / "quickstart.log"
    code = textwrap.dedent(f"""
        import subprocess, sys, warnings
        from mau.commands.console import QuietConsole
        with QuietConsole({str(log)!r}) as con:
            con.print("for the user")
            print("a stage's own line")
            warnings.warn("a library warning nobody needs")
            child = "import sys; print('child out'); print('child err', file=sys.stderr)"
            subprocess.run([sys.executable, "-c", child])
            with con.stage("[1/1] work", lambda: (3, 3), "things"):
                pass
        print("after")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    shown = r.stdout + r.stderr
    assert "for the user" in shown and "[1/1] work" in shown and "3/3 things" in shown and "after" in shown
    for hidden in ("a stage's own line", "a library warning", "child out", "child err"):
        assert hidden not in shown
        assert hidden in log.read_text()
    assert "for the user" in log.read_text()


pytest.importorskip("torch")
pytest.importorskip("trl")
pytest.importorskip("gguf")  # the student extra (part of dev)

from mau.cli import main  # noqa: E402
from tests.ml_fixtures import tiny_model_dir  # noqa: E402,F401 - the fixture
from tests.student_fixtures import write_tiny_gguf  # noqa: E402


@pytest.fixture(scope="module")
def student(tmp_path_factory):
    from mau.models.smollm import materialise

    d = tmp_path_factory.mktemp("student")
    return materialise(d / "model", write_tiny_gguf(d / "tiny.gguf")).out


def _row(table: str, name: str) -> list[str]:
    line = next(x for x in table.splitlines() if x.startswith(f"| {name} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def test_quickstart_runs_the_whole_loop_and_reads_its_table_from_the_runs(tmp_path, capsys, student):
    from mau.eval.report import summary_table

    out = tmp_path / "qs"
    pool = ("grid.pool=[{name: cautious, model: {backend: scripted, model: scripted-cautious, seed: 0}}, "
            "{name: accusatory, model: {backend: scripted, model: scripted-accusatory, seed: 1000}}]")
    args = [
        "quickstart", "--out", str(out), "--set", f"student_model={student}", "--set",
        "learners=[student,tiny]", "--set",
        f'collect_set=["grid.repetitions=1", "{pool}"]',  # 2 x 2 x 2 cases: 8 matches with votes
        "--set", "filters=[bcvote]", "--set",
        'student_train_set=["training.max_steps=2", "training.train_last_layers=1", '
        '"training.readout=pointer"]',
        "--set",
        'train_set=["training.max_steps=2", "data.max_eval_examples=4", "training.save_steps=2"]', "--set",
        'eval_set=["seeds=[1001]", "world.game.max_steps=80", "imposters=[{name: quiet, model: '
        '{backend: scripted, model: scripted-quiet, seed: 6000}}]"]', "--set", "workers=1",
    ]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "[5/5] re-entry eval" in text and "quickstart done" in text
    results = json.loads((out / "eval" / "results.json").read_text())
    assert results["arms"] == ["student", "student_bcvote", "tiny", "tiny_bcvote", "teacher"]
    assert results["baseline"] == "student"
    assert not any(h["failed"] for h in results["arm_health"].values())  # candidate votes never fall back
    table = text.split("before each vote (AUROC within each probe: chance 0.5).\n")[1].split("\n\nVerdict")[0]
    assert table.strip() == summary_table(results).strip()  # the console's table is the run's results
    col = results["columns"][-1]
    cell = next(c for c in results["cells"] if c["arm"] == "student_bcvote" and c["imposter"] == col)
    assert _row(table, "student_bcvote")[1].startswith(
        f"{100 * cell['metrics']['crew_win_rate']['value']:.0f}"
    )
    assert "FAILED" not in table
    # the student's peer: the linear reader of its own BC rows, with its objective's weights
    assert _row(table, "linear (BC rows)")[4] != "-"
    ecfg = (out / "eval" / "config.yaml").read_text()
    assert f"dataset: {out / 'datasets' / 'bcvote'}" in ecfg and "belief_weight:" in ecfg
    verdict = next(x for x in text.splitlines() if x.startswith("Verdict:"))
    assert verdict == verdict_line(results, "student_bcvote", "student", what="BC (student_bcvote)",
                                   versus_name="the untrained student")
    log = (out / "quickstart.log").read_text()
    assert "collected 8/8 matches" in log and "collected" not in text  # the stages' own lines: the log only
    assert (out / "eval" / "results.png").is_file() and (out / "eval" / "results_panels.png").is_file()
    assert "learners:" in (out / "config.yaml").read_text() and (out / "provenance.json").is_file()
    assert (out / "train" / "tiny_bcvote" / "adapter" / "adapter_config.json").is_file()
    assert (out / "train" / "student_bcvote" / "train.json").is_file()
    # the demo's read-out: the student's head saved beside it, and its arm read through it (no fallback)
    assert (out / "train" / "student_bcvote" / "model" / "candidate_head.safetensors").is_file()
    assert main(args) == 2  # a finished quickstart is not overwritten
    assert main(args + ["--resume"]) == 0  # ... but can be resumed (every stage is kept)
    assert re.search(r"Verdict: BC \(student_bcvote\)", capsys.readouterr().out)


def test_quickstart_student_flag_and_dry_run(tmp_path, capsys):
    from mau.commands.quickstart import QuickstartConfig
    from mau.commands.quickstart import main as quickstart_main
    from mau.options import RunOptions

    quickstart_main(QuickstartConfig(student=True, out=str(tmp_path / "q")), RunOptions(dry_run=True))
    line = capsys.readouterr().out
    assert "learners student;" in line and "datasets bcvote;" in line and "tiny.yaml" not in line
    quickstart_main(QuickstartConfig(out=str(tmp_path / "q")), RunOptions(dry_run=True))
    line = capsys.readouterr().out
    assert "learners student;" in line and "tiny.yaml" not in line  # the default: the student alone
    quickstart_main(
        QuickstartConfig(learners=["student", "tiny"], out=str(tmp_path / "q")), RunOptions(dry_run=True)
    )
    line = capsys.readouterr().out
    assert "learners student, tiny;" in line and "datasets bcvote;" in line
    assert not (tmp_path / "q").exists()


def test_tiny_vlm_votes_by_scoring_the_candidates(tiny_model_dir):  # noqa: F811 - the fixture
    """``answer: candidates`` on the hf backend: the random tiny VLM's VOTE is the best-scored candidate,
    always a valid vote (it never writes parseable JSON by itself)."""
    from mau.harness.backends.base import ModelConfig, ModelRequest
    from mau.harness.backends.hf import Backend
    from mau.harness.modules import VOTE_PREFIX

    names = ["James", "Steve", "Olivia"]
    obs = {"name": "Noah", "meeting": {"alive_players": ["Noah", *names]}}
    msgs = [
        {"role": "system", "content": "Vote."},
        {
            "role": "user",
            "content": [{"type": "text", "text": "Candidates: " + ", ".join(names) + ", skip."}],
        },
    ]
    request = ModelRequest(
        messages=msgs, module="vote", agent="Noah", context={"obs": obs, "match": "m", "seed": 1}
    )
    backend = Backend(ModelConfig(backend="hf", model=str(tiny_model_dir), answer="candidates", temperature=0,
                                  device="cpu"))
    resp = asyncio.run(backend.complete(request))
    scored = asyncio.run(backend.score(request, VOTE_PREFIX, [f'{c}"' for c in names + ["skip"]]))
    best = (names + ["skip"])[max(range(4), key=lambda i: scored.logprobs[i])]
    assert json.loads(resp.text) == {"vote_target": best} and resp.completion_tokens == 0
    generated = Backend(ModelConfig(backend="hf", model=str(tiny_model_dir), temperature=0, device="cpu",
                                    max_tokens=8))
    assert asyncio.run(generated.complete(request)).text != resp.text  # generate: the model writes (badly)


def test_frames_only_for_a_learner_that_reads_images():
    """The demo renders first-person frames only when a learner reads them (the tiny VLM): the text-only
    student never does (docs/experiments.md, "The demo")."""
    from mau.commands.quickstart import QuickstartConfig, renders_frames

    assert not renders_frames(QuickstartConfig())
    assert renders_frames(QuickstartConfig(learners=["student", "tiny"]))
    assert renders_frames(QuickstartConfig(frames="on"))
    assert not renders_frames(QuickstartConfig(learners=["tiny"], frames="off"))
