"""mau eval: metrics by hand on hand-made match folders, the intervals, the paired comparison, the config, an
end-to-end smoke eval (report files, cells, resume, shards, report-only), the tiny hf arm, and
slurm/eval.sbatch on a real single-node Slurm (skipped without it)."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from mau import schema as F
from mau.cli import build_parser, main
from mau.commands.eval import config_from_args
from mau.commands.eval import main as eval_main
from mau.errors import ConfigError, MauError
from mau.eval.config import EvalConfig, EvalMatch, plan
from mau.eval.metrics import cell_metrics, evaluate, load_matches, match_stats, mcnemar_exact
from mau.eval.report import markdown, rows_csv
from mau.matchdir import read_header
from mau.stats import mean_bootstrap, proportion, ratio_bootstrap
from tests.ml_fixtures import tiny_adapter_dir, tiny_model_dir  # noqa: F401 - fixtures (torch only when used)
from tests.slurm_cluster import slurm  # noqa: F401 - the fixture (skips without Slurm or root; CI: fails)

REPO = Path(__file__).resolve().parents[1]
SMOKE = str(REPO / "configs" / "eval" / "smoke.yaml")
FAST = ["--set", "world.game.max_steps=12", "--no-progress"]
PLAYERS = ["Steve", "Alex", "James", "Olivia", "Noah", "Ethan", "Martin", "Jason"]
IMPOSTERS = ("James", "Olivia")


# -- hand-made match folders ---------------------------------------------------------------------------------
def make_match(run: Path, arm: str, imp: str, seed: int, outcome: str, ejected: tuple = (), kills: int = 0,
               missions: int = 0, votes: tuple = (), speech: tuple = ()) -> Path:
    """A minimal mau.match v1 folder: header (roles, outcome, the eval's grid line) and an event log with the
    given ejections (a name, or None for a meeting that ejected nobody: one meeting each), kills, completed
    missions, votes ((voter, target) pairs) and meeting speech ((speaker, text) pairs)."""
    mid = f"A-{arm}_I-{imp}_s{seed}"
    folder = run / F.MATCHES_DIR / mid
    folder.mkdir(parents=True)
    roles = {p: ("imposter" if p in IMPOSTERS else "crewmate") for p in PLAYERS}
    spec = EvalMatch(0, mid, seed, 0, arm, imp).to_dict()
    header = {
        F.FORMAT: F.MATCH_FORMAT, F.FORMAT_VERSION: F.MATCH_FORMAT_VERSION, F.SEED: seed, F.ROLES: roles,
        F.OUTCOME: outcome, F.MATCH_ID: mid, F.GRID: spec, F.ARM: arm,
    }
    events = [{"type": F.EV_MATCH_START, "seed": seed, "roles": roles}]
    events += [{"type": F.EV_KILL, "killer": "James", "victim": PLAYERS[4 + k % 4]} for k in range(kills)]
    events += [{"type": F.EV_MISSION_COMPLETE, "player": "Steve", "station": k} for k in range(missions)]
    events += [{"type": F.EV_UTTERANCE, "speaker": s, "text": x, "round": 1} for s, x in speech]
    events += [{"type": F.EV_VOTE, "voter": v, "target": t} for v, t in votes]
    for name in ejected:
        events.append({"type": F.EV_MEETING_START, "caller": "Steve", "reason": "emergency"})
        events.append({"type": F.EV_EJECTION, "ejected": name, "role": roles.get(name), "tally": {}})
    events.append({"type": F.EV_MATCH_END, "outcome": outcome})
    with open(folder / F.EVENTS_FILE, "w") as f:
        for i, e in enumerate(events):
            f.write(json.dumps({"i": i, "tick": i, "step": 0, **e}) + "\n")
    (folder / F.MATCH_HEADER).write_text(json.dumps(header))
    return folder


@pytest.fixture
def hand_run(tmp_path: Path) -> Path:
    """Arm 'base' against imposter model 'imp': four matches whose numbers are worked out by hand below."""
    run = tmp_path / "run"
    make_match(run, "base", "imp", 1, "CREWMATE WIN", ejected=("James", "Olivia"), kills=1, missions=3,
               votes=(("Steve", "James"), ("Alex", "Noah"), ("Noah", "skip"), ("Olivia", "Steve")))
    make_match(run, "base", "imp", 2, "IMPOSTER WIN", ejected=("Steve", "Noah"), kills=4, missions=1)
    make_match(run, "base", "imp", 3, "MISSION WIN", ejected=("James", None, "Alex"), kills=2, missions=18)
    make_match(run, "base", "imp", 4, "TIMEOUT", ejected=(None,), kills=0, missions=5)
    return run


def test_match_stats_count_the_event_log(hand_run):
    s = match_stats(hand_run / F.MATCHES_DIR / "A-base_I-imp_s3")
    assert (s.arm, s.imposter, s.seed, s.outcome, s.crew_won) == ("base", "imp", 3, "MISSION WIN", True)
    # "None" ejections (a skip or a tie) eject nobody: they are not ejections
    assert (s.imposters_fielded, s.ejections, s.imposters_ejected, s.kills, s.missions) == (2, 2, 1, 2, 18)


def test_how_the_imposters_played_by_hand(tmp_path):
    """The imposters' votes (skips, votes naming the other imposter) and the accusations in their speech (and
    those naming the other imposter), counted from the event log; a crewmate's are not theirs."""
    f = make_match(tmp_path / "run", "base", "imp", 1, "IMPOSTER WIN",
                   votes=(("James", "skip"), ("Olivia", "James"), ("James", "Steve"), ("Steve", "skip")),
                   speech=(("James", "I suspect Olivia. Steve looks suspicious."),
                           ("Olivia", "I saw James kill Alex."), ("Steve", "I suspect James."),
                           ("Olivia", "James was with me, not him.")))
    s = match_stats(f)
    assert (s.imposter_votes, s.imposter_skips, s.imposter_votes_on_partner) == (3, 1, 1)
    assert (s.imposter_accusations, s.imposter_accusations_on_partner) == (3, 2)
    m = cell_metrics([s])
    assert m["imposter_skip_share"].value == pytest.approx(1 / 3) and m["imposter_skip_share"].n == 3
    assert m["imposter_partner_votes"].value == pytest.approx(1 / 2) and m["imposter_partner_votes"].n == 2
    assert m["imposter_partner_accusations"].value == pytest.approx(2 / 3)
    res = evaluate([s], ["base"], ["imp"], "base")
    res.update(planned=1, seeds=[1], models={"arms": {"base": "x"}, "imposters": {"imp": "y"}})
    assert "| base | 66.7 [" in markdown(res).split("Imposter partner accusations (%)")[1]


def test_cell_metrics_by_hand(hand_run):
    m = cell_metrics(load_matches(hand_run))
    # crew wins: CREWMATE WIN + MISSION WIN = 2 of 4
    assert m["crew_win_rate"].value == 0.5 and m["crew_win_rate"].n == 4
    assert m["crew_win_rate"].ci_low == pytest.approx(0.1500, abs=1e-4)  # Wilson 2/4
    assert m["crew_win_rate"].ci_high == pytest.approx(0.8500, abs=1e-4)
    # imposters ejected: 2 + 0 + 1 + 0 = 3 of 4 x 2 fielded; ejections: 2 + 2 + 2 + 0 = 6
    assert m["ejection_recall"].value == pytest.approx(3 / 8) and m["ejection_recall"].n == 8
    assert m["ejection_precision"].value == pytest.approx(3 / 6) and m["ejection_precision"].n == 6
    assert (
        m["imposters_ejected_per_game"].value == pytest.approx(0.75)
        and m["imposters_ejected_per_game"].n == 4
    )
    assert m["kills_per_game"].value == pytest.approx(7 / 4)
    assert m["missions_per_game"].value == pytest.approx(27 / 4)
    assert m["meetings_per_game"].value == pytest.approx((2 + 2 + 3 + 1) / 4)
    # crewmate votes: Steve -> James (an imposter), Alex -> Noah, Noah skips; Olivia's vote is an imposter's
    assert m["vote_precision"].value == pytest.approx(1 / 2) and m["vote_precision"].n == 2
    assert m["vote_skip_share"].value == pytest.approx(1 / 3) and m["vote_skip_share"].n == 3
    assert m["fallback_share"].value is None  # these headers count no model calls
    for k, e in m.items():
        # undefined (n = 0): no model calls counted, no accusation in the imposters' speech
        assert k in ("fallback_share", "imposter_fallback_share", "imposter_partner_accusations") \
            or e.ci_low <= e.value <= e.ci_high, e
    assert {k: e.method for k, e in m.items()}["crew_win_rate"] == "wilson"
    assert {e.method for k, e in m.items() if k != "crew_win_rate"} == {"bootstrap"}
    res = evaluate(load_matches(hand_run), ["base"], ["imp"], "base")
    assert res["cells"][0]["endings"] == {"IMPOSTER WIN": 1, "TIMEOUT": 1, "CREWMATE WIN": 1, "MISSION "
                                                                                              "WIN": 1}


def test_wilson_interval_values():
    # 9/16 (a paper-sized cell, 56 %) by hand, z = 1.96: centre (p + z^2/2n) / (1 + z^2/n) = 0.55040,
    # half-width z sqrt(p(1-p)/n + z^2/4n^2) / (1 + z^2/n) = 0.21862
    e = proportion(9, 16)
    assert e.value == 0.5625 and (round(e.ci_low, 4), round(e.ci_high, 4)) == (0.3318, 0.7690)
    zero = proportion(0, 10)
    assert zero.value == 0 and zero.ci_low == 0 and zero.ci_high == pytest.approx(1.96**2 / (10 + 1.96**2))
    assert proportion(0, 0).value is None and proportion(0, 0).n == 0


def test_bootstrap_is_seeded_and_deterministic():
    num, den = [2, 0, 1, 0, 1, 2, 0, 1], [2] * 8
    a, b = ratio_bootstrap(num, den, 2000, seed=7), ratio_bootstrap(num, den, 2000, seed=7)
    assert a == b and a.ci_low < a.value < a.ci_high
    assert mean_bootstrap([1, 2, 3, 4], seed=3) == mean_bootstrap([1, 2, 3, 4], seed=3)
    x = [0.1, 0.7, 2.3, 5.9, 1.1, 3.3]
    assert mean_bootstrap(x, 200, seed=1) != mean_bootstrap(x, 200, seed=2)  # the seed is what fixes it
    same = mean_bootstrap([2, 2, 2])  # no spread, no interval width
    assert (same.value, same.ci_low, same.ci_high) == (2, 2, 2)


def test_precision_without_ejections_is_undefined_not_zero(tmp_path):
    run = tmp_path / "run"
    make_match(run, "quiet", "imp", 1, "IMPOSTER WIN", ejected=(None, None), kills=6)
    make_match(run, "quiet", "imp", 2, "TIMEOUT")
    m = cell_metrics(load_matches(run))
    p = m["ejection_precision"]
    assert (p.value, p.ci_low, p.ci_high, p.n) == (None, None, None, 0)
    assert m["ejection_recall"].value == 0 and m["ejection_recall"].n == 4  # recall is defined: 0 of 4
    res = evaluate(load_matches(run), ["quiet"], ["imp"], "quiet")
    res.update(planned=2, seeds=[1, 2], models={"arms": {"quiet": "x"}, "imposters": {"imp": "y"}})
    assert "undefined (n=0)" in markdown(res)
    row = next(r for r in csv.DictReader(rows_csv(res).splitlines()) if r["metric"] == "ejection_precision")
    assert (row["value"], row["ci_low"], row["n"]) == ("", "", "0")


def test_paired_comparison_on_hand_made_seeds(tmp_path):
    run = tmp_path / "run"
    base_wins, arm_wins = {1, 2}, {1, 2, 3, 4, 5}  # the arm wins 3 more seeds, loses none the baseline won
    for seed in range(1, 9):
        make_match(run, "base", "imp", seed, "CREWMATE WIN" if seed in base_wins else "IMPOSTER WIN")
        make_match(run, "tuned", "imp", seed, "MISSION WIN" if seed in arm_wins else "TIMEOUT")
    res = evaluate(load_matches(run), ["base", "tuned"], ["imp"], "base")
    (p,) = res["paired"]
    assert (p["arm"], p["baseline"], p["n_pairs"], p["arm_wins"], p["baseline_wins"]) == (
        "tuned", "base", 8, 5, 2,
    )
    assert (p["arm_better"], p["baseline_better"], p["ties"]) == (3, 0, 5)
    assert p["diff"] == pytest.approx(3 / 8)
    assert 0 <= p["ci_low"] <= 3 / 8 <= p["ci_high"] <= 1  # no seed favours the baseline: never below 0
    assert p["p_mcnemar"] == pytest.approx(0.25)  # 2 * (1/2)^3
    assert mcnemar_exact(0, 0) == 1.0 and mcnemar_exact(5, 5) == 1.0
    assert mcnemar_exact(10, 0) == pytest.approx(2 / 1024)
    # a seed only one side has played is not a pair
    make_match(run, "tuned", "imp", 9, "CREWMATE WIN")
    assert evaluate(load_matches(run), ["base", "tuned"], ["imp"], "base")["paired"][0]["n_pairs"] == 8


# -- the config ----------------------------------------------------------------------------------------------
def _cfg(**kw) -> EvalConfig:
    base = {"arms": {"a": {}, "b": {"seed": 1}}, "imposters": {"x": {}}, "seeds": [3, 4]}
    return EvalConfig.model_validate({**base, **kw})


def test_plan_covers_every_arm_imposter_and_seed_once():
    cfg = _cfg(imposters={"x": {}, "y": {}}, seeds=None, n_seeds=3, seed=10)
    ms = plan(cfg)
    assert len(ms) == 2 * 2 * 3 and len({m.match_id for m in ms}) == len(ms)
    assert {(m.arm, m.imposter, m.seed) for m in ms} == {
        (a, i, s) for a in "ab" for i in "xy" for s in (10, 11, 12)
    }
    assert [m.index for m in ms] == list(range(len(ms)))
    assert ms[0].to_dict()[F.CREWMATE_MODEL] == "a" and ms[0].to_dict()[F.IMPOSTER_MODEL] == "x"
    assert cfg.baseline_arm == "a"
    listed = EvalConfig.model_validate({"arms": [{"name": "a"}, {"name": "b+c", "model": {"seed": 2}}],
                                        "imposters": {"x": {}}, "seeds": [1]})
    assert list(listed.arms) == ["a", "b+c"] and listed.arms["b+c"].seed == 2


@pytest.mark.parametrize("kw, msg", [
    ({"baseline": "zzz"}, "baseline: 'zzz' is not an arm"), ({"seeds": [1, 1]}, "seeds: 1 is listed twice"),
    ({"seeds": None}, "give the list of seeds, or n_seeds"),
    ({"imposters": {"all": {}}}, "reserved for the pooled column"),
    ({"arms": {"a.b": {}}}, "use letters, digits"), ({"arms": [{"name": "a"}, {"name": "a"}]}, "used twice"),
])
def test_bad_configs_are_refused_with_the_field(kw, msg):
    with pytest.raises(ValueError, match=re.escape(msg)):
        _cfg(**kw)


def test_identity_ignores_where_a_model_is_served():
    a = _cfg(arms={"a": {"backend": "openai", "base_url": "http://n1:8000/v1"}})
    b = _cfg(arms={"a": {"backend": "openai", "base_url": "http://n7:9000/v1", "timeout_s": 5}})
    c = _cfg(arms={"a": {"backend": "openai", "base_url": "http://n1:8000/v1", "temperature": 0.1}})
    assert a.identity() == b.identity() != c.identity()


# -- end to end ----------------------------------------------------------------------------------------------
def _finished(run: Path) -> list[str]:
    return sorted(p.name for p in (run / F.MATCHES_DIR).iterdir() if (p / F.MATCH_HEADER).is_file())


def test_smoke_eval_end_to_end(tmp_path, capsys):
    run = tmp_path / "eval"
    assert main(["eval", "--config", SMOKE, "--out", str(run), "--workers", "2", *FAST]) == 0
    printed = capsys.readouterr().out
    assert "| arm | vs scripted-i1 | vs scripted-i2 | all imposters (pooled) |" in printed
    assert "16 played now of 16" in printed and str(run) in printed
    for name in (F.RESULTS_MD, F.RESULTS_CSV, F.RESULTS_JSON, F.RESULTS_PNG, F.RESOLVED_CONFIG,
                 F.PROVENANCE_FILE, F.RUN_HEADER, F.GRID_FILE):
        assert (run / name).is_file(), name
    assert json.loads((run / F.RUN_HEADER).read_text())[F.FORMAT] == F.EVAL_FORMAT
    # every planned match played once, each a readable collect-format match folder naming its arm
    planned = [json.loads(x) for x in (run / F.GRID_FILE).read_text().splitlines()]
    assert _finished(run) == sorted(g["match_id"] for g in planned) and len(planned) == 16
    for g in planned:
        h = read_header(run / F.MATCHES_DIR / g["match_id"])
        assert h[F.ARM] == g["arm"] and h[F.GRID] == g and h[F.SEED] == g["seed"]
        assert h["seats"]["crewmate"]["model"]["model"] == {"baseline": "scripted-baseline",
                                                            "scripted-b": "scripted-b"}[g["arm"]]
        assert (run / F.MATCHES_DIR / g["match_id"] / F.CALLS_FILE).is_file()
    # the table has every arm x imposter cell with the right n (4 seeds; the pooled column 8)
    res = json.loads((run / F.RESULTS_JSON).read_text())
    cells = {(c["arm"], c["imposter"]): c for c in res["cells"]}
    assert set(cells) == {
        (a, i) for a in ("baseline", "scripted-b") for i in ("scripted-i1", "scripted-i2", "all")
    }
    for (a, i), c in cells.items():
        n = 8 if i == "all" else 4
        assert c["matches"] == n and c["metrics"]["crew_win_rate"]["n"] == n
        assert c["metrics"]["ejection_recall"]["n"] == 2 * n and sum(c["endings"].values()) == n
    assert [(p["arm"], p["imposter"], p["n_pairs"]) for p in res["paired"]] == [
        ("scripted-b", "scripted-i1", 4), ("scripted-b", "scripted-i2", 4), ("scripted-b", "all", 8)]
    rows = list(csv.DictReader((run / F.RESULTS_CSV).read_text().splitlines()))
    assert list(rows[0]) == ["arm", "imposter", "metric", "value", "ci_low", "ci_high", "n", "method"]
    win = {(r["arm"], r["imposter"]): r for r in rows if r["metric"] == "crew_win_rate"}
    assert len(win) == 6 and all(r["n"] == ("8" if i == "all" else "4") for (a, i), r in win.items())
    md = (run / F.RESULTS_MD).read_text()
    for a in ("baseline", "scripted-b"):
        assert re.search(rf"^\| {a} \| [\d.]+ \[[\d.]+, [\d.]+\] n=4 \| [\d.]+ \[[\d.]+, [\d.]+\] n=4 \| "
                          rf".* n=8 \|$", md, re.M)
    from PIL import Image

    assert Image.open(run / F.RESULTS_PNG).size[0] >= 400

    # --resume replays nothing; --report-only (config from the run folder) recomputes the same numbers
    stamps = {m: (run / F.MATCHES_DIR / m / F.MATCH_HEADER).stat().st_mtime_ns for m in _finished(run)}
    assert main(["eval", "--config", SMOKE, "--out", str(run), "--resume", *FAST]) == 0
    assert "0 played now of 16" in capsys.readouterr().out
    assert {
        m: (run / F.MATCHES_DIR / m / F.MATCH_HEADER).stat().st_mtime_ns for m in _finished(run)
    } == stamps
    assert main(["eval", "--out", str(run), "--report-only", "--no-progress"]) == 0
    assert "report recomputed" in capsys.readouterr().out
    assert json.loads((run / F.RESULTS_JSON).read_text())["cells"] == res["cells"]

    # a missing match (and a killed attempt's staging folder) is replayed, alone
    victim = planned[5]["match_id"]
    shutil.rmtree(run / F.MATCHES_DIR / victim)
    (run / F.MATCHES_DIR / f".{victim}.partial-abc123").mkdir()
    assert main(["eval", "--config", SMOKE, "--out", str(run), "--resume", *FAST]) == 0
    assert "1 played now of 16" in capsys.readouterr().out
    assert sorted(p.name for p in (run / F.MATCHES_DIR).iterdir()) == sorted(g["match_id"] for g in planned)

    # the eval is also data: the dataset reader finds its match folders
    from mau.datasets.sources import find_matches

    assert len(find_matches([run])) == 16


def test_resume_is_refused_for_another_config_or_without_the_flag(tmp_path):
    run = tmp_path / "eval"
    args = ["eval", "--config", SMOKE, "--out", str(run), "--workers", "1", "--set", "seeds=[5]", *FAST]
    assert main(args) == 0
    def run_cli(argv):
        return eval_main(config_from_args(build_parser("eval").parse_args(argv)))

    with pytest.raises(MauError, match="pass --resume"):
        run_cli(args)
    with pytest.raises(ConfigError, match="differs from the run's at seeds"):
        run_cli(["eval", "--config", SMOKE, "--out", str(run), "--resume", "--set", "seeds=[6]", *FAST])
    with pytest.raises(MauError, match="holds no eval run"):
        run_cli(["eval", "--config", SMOKE, "--out", str(tmp_path / "none"), "--report-only"])


def test_shards_share_one_folder_and_play_every_match_once(tmp_path, capsys):
    run = tmp_path / "eval"
    common = ["eval", "--config", SMOKE, "--out", str(run), "--workers", "1", "--set", "seeds=[7,8]", *FAST]
    assert main(common + ["--shard", "0/3"]) == 0
    assert main(common + ["--shard", "1/3", "--resume"]) == 0
    assert main(common + ["--shard", "2/3", "--resume"]) == 0
    played = [int(n) for n in re.findall(r"(\d+) played now", capsys.readouterr().out)]
    assert played == [3, 3, 2] and len(_finished(run)) == 8
    assert json.loads((run / F.RESULTS_JSON).read_text())["matches"] == 8


def test_arm_modules_send_the_other_modules_to_the_rest_model(tmp_path, capsys):
    """arm_modules: [vote] (the quickstart's tuned-VOTE eval): the arm's model answers only VOTE."""
    run = tmp_path / "eval"
    assert main(["eval", "--config", SMOKE, "--out", str(run), "--workers", "1", "--set", "seeds=[5]",
                 "--set", "arm_modules=[vote]", "--set", "arm_rest_model.model=rest", *FAST]) == 0
    for p in (run / F.MATCHES_DIR).iterdir():
        h = read_header(p)
        assert h["seats"]["crewmate"]["modules"] == ["vote"]
        calls = [json.loads(x) for x in (p / F.CALLS_FILE).read_text().splitlines()]
        crew = [(c["module"], c["model"]) for c in calls if c["role"] == "crewmate"]
        assert crew and all(
            model == ("rest" if module != "vote" else h["seats"]["crewmate"]["model"]["model"])
            for module, model in crew
        )
    with pytest.raises(ValueError, match="'vot' is not a module"):
        _cfg(arm_modules=["vot"])


# -- the tiny local model as an arm (hf backend) -------------------------------------------------------------
def test_tiny_hf_arms_play_end_to_end(tmp_path, request, capsys):
    """The quickstart's eval (configs/eval/tiny.yaml) on two seeds of one roam step: about 20-40 s on 2 CPUs.
    One worker plays the arms alternately (seed-major: base, adapter, base, adapter) and loads the base
    once."""
    pytest.importorskip("torch")
    tiny_model_dir = request.getfixturevalue("tiny_model_dir")  # after the skip: building it needs torch
    tiny_adapter_dir = request.getfixturevalue("tiny_adapter_dir")
    from mau import runner
    from mau.harness.backends import hf

    # nothing loaded by earlier tests of the session: count this run's loads
    for b in runner.BACKENDS.values():
        b.release()
    runner.BACKENDS.clear()
    hf._SHARED.clear()
    run = tmp_path / "eval"
    sets = {
        "arms.baseline.model": tiny_model_dir, "arms.adapter.model": tiny_model_dir,
        "arms.adapter.adapter": tiny_adapter_dir, "arms.baseline.max_tokens": 4, "arms.adapter.max_tokens": 4,
        "arms.baseline.device": "cpu", "arms.adapter.device": "cpu", "seeds": "[1, 2]",
        "world.game.max_steps": 1,
    }
    argv = [
        "eval", "--config", str(REPO / "configs" / "eval" / "tiny.yaml"), "--out", str(run), "--no-progress",
    ]
    for k, v in sets.items():
        argv += ["--set", f"{k}={v}"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "4 played now of 4" in out
    assert "local model loads: 1 (1 worker)" in out  # one base for both arms, though they alternate
    played = sorted(read_header(p)[F.MATCH_ID] for p in (run / F.MATCHES_DIR).iterdir())
    assert [m.split("_")[1] for m in played] == ["A-baseline", "A-adapter"] * 2
    headers = {read_header(p)[F.ARM]: read_header(p) for p in (run / F.MATCHES_DIR).iterdir()}
    assert set(headers) == {"baseline", "adapter"}
    assert headers["adapter"]["seats"]["crewmate"]["model"]["adapter"] == str(tiny_adapter_dir)
    assert all(h["calls"]["calls"] > 0 for h in headers.values())
    calls = [json.loads(x) for x in (run / F.MATCHES_DIR / headers["adapter"][F.MATCH_ID] / F.CALLS_FILE)
             .read_text().splitlines()]
    assert {c["backend"] for c in calls if c["role"] == "crewmate"} == {"hf"}
    assert json.loads((run / F.RESULTS_JSON).read_text())["paired"][0]["n_pairs"] == 2


# -- slurm/eval.sbatch on a real single-node Slurm -----------------------------------------------------------


def test_eval_sbatch_array_plays_every_match_once_then_reports(slurm, tmp_path):  # noqa: F811 - the fixture
    _eval_sbatch(slurm, tmp_path)


def _eval_sbatch(slurm, tmp_path: Path) -> None:
    run, logs = tmp_path / "eval", tmp_path / "logs"
    logs.mkdir()
    script = REPO / "slurm" / "eval.sbatch"
    extra = ["--set", "world.game.max_steps=10", "--set", "seeds=[1,2,3]", "--workers", "1"]
    args = [
        "--array=0-1", "--cpus-per-task=1", "--time=5", f"--chdir={REPO}", f"--output={logs}/%x-%A_%a.out",
        script, SMOKE, run, *extra,
    ]

    def text() -> str:
        return "\n".join(f"--- {p.name} "
                         f"---\n{p.read_text(errors='replace')}" for p in sorted(logs.glob("*.out")))

    states = slurm.wait(slurm.submit(args), timeout=120)
    assert states == {"0": "COMPLETED", "1": "COMPLETED"}, f"{states}\n{text()}"
    planned = [json.loads(x)["match_id"] for x in (run / F.GRID_FILE).read_text().splitlines()]
    assert len(planned) == 12 and _finished(run) == sorted(planned)
    assert sorted(p.name for p in (run / F.MATCHES_DIR).iterdir()) == sorted(planned)  # no leftovers
    played = {int(i): int(n) for i, n in re.findall(r"shard (\d)/2: (\d+) played now", text())}
    assert played == {0: 6, 1: 6}, text()  # k % 2 == I: every match played exactly once

    # the final report step (plays nothing, covers every shard's matches)
    for p in logs.iterdir():
        p.unlink()
    report = [f"--chdir={REPO}", "--cpus-per-task=1", "--time=5", f"--output={logs}/%x-report-%j.out", script,
              "--report", SMOKE, run, "--set", "world.game.max_steps=10", "--set", "seeds=[1,2,3]"]
    states = slurm.wait(slurm.submit(report), timeout=60)
    assert set(states.values()) == {"COMPLETED"}, f"{states}\n{text()}"
    assert "12/12 matches (report recomputed" in text()
    res = json.loads((run / F.RESULTS_JSON).read_text())
    assert res["matches"] == 12 and all(
        c["matches"] == (6 if c["imposter"] == "all" else 3) for c in res["cells"]
    )


def test_sampled_hf_arms_are_a_function_of_the_seed_not_of_the_order(tmp_path, request):
    """Eval seeds [7, 8] and [8, 7] at temperature 0.9 give the same calls per seed: the hf backend seeds its
    sampling per match and stream, so a worker's earlier matches do not shift a later one's draws."""
    pytest.importorskip("torch")
    tiny_model_dir = request.getfixturevalue("tiny_model_dir")
    cfg = yaml.safe_load((REPO / "configs" / "eval" / "tiny.yaml").read_text())
    cfg["arms"] = {"baseline": {**cfg["arms"]["baseline"], "model": str(tiny_model_dir), "device": "cpu",
                                "temperature": 0.9, "max_tokens": 6}}
    cfg["crewmate_aria"]["module_temperature"] = {}  # every module samples at the arm's 0.9
    cfg["world"]["game"]["max_steps"] = 2
    runs = {}
    for order in ([7, 8], [8, 7]):
        cfg["seeds"] = order
        path = tmp_path / f"cfg{order[0]}.yaml"
        path.write_text(yaml.safe_dump(cfg))
        run = tmp_path / f"eval{order[0]}"
        assert main(["eval", "--config", str(path), "--out", str(run), "--no-progress"]) == 0
        runs[tuple(order)] = run

    def calls_by_seed(run: Path) -> dict[int, list[tuple]]:
        out = {}
        for p in (run / F.MATCHES_DIR).iterdir():
            recs = [json.loads(x) for x in (p / F.CALLS_FILE).read_text().splitlines()]
            out[read_header(p)[F.SEED]] = [
                (r["agent"], r["module"], r["step"], r["raw_output"], r["fallback"])
                for r in recs
                if r["backend"] == "hf"
            ]
        return out

    a, b = calls_by_seed(runs[(7, 8)]), calls_by_seed(runs[(8, 7)])
    assert set(a) == {7, 8} and all(a[s] for s in a)
    assert a == b
    assert len({x[3] for x in a[7]}) > 1  # sampled answers differ from call to call: the draws are live
