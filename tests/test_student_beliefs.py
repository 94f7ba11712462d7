"""The student learns beliefs, not only votes (docs/student.md): the belief objective, the linear reader of
the compact prompt (its peer), held-out scoring and the learning curve."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("gguf")  # the ml + dev extras install it (the student extra)

from mau import schema as F  # noqa: E402
from mau.harness.backends.lm import load_text_model  # noqa: E402
from mau.infer.compact_reader import FEATURES, LinearReader, features  # noqa: E402
from mau.student.examples import CandidateExample, soft_target  # noqa: E402
from mau.student.split import SplitLM  # noqa: E402
from mau.student.train import (  # noqa: E402
    FeatureCache,
    belief_kl,
    candidate_logprobs,
    example_loss,
    usable,
)
from tests.student_fixtures import write_tiny_gguf  # noqa: E402


@pytest.fixture(scope="module")
def student(tmp_path_factory) -> Path:
    from mau.models.smollm import materialise

    d = tmp_path_factory.mktemp("student")
    return materialise(d / "model", write_tiny_gguf(d / "tiny.gguf")).out


def test_the_belief_loss_is_zero_at_the_target_and_one_step_moves_toward_it(student):
    torch.manual_seed(0)
    _, model = load_text_model(str(student))
    split = SplitLM(model, train_last=1)
    split.freeze_lower()
    e = CandidateExample("a", [5, 40, 77, 12, 9], ["x", "y", "skip"], [70, 71, 72], 0)
    cache = FeatureCache(split)
    cache.fill(split, [e])
    with torch.no_grad():
        now = candidate_logprobs(split, cache.get(e), e)
    e.soft = [float(x) for x in now.exp()]  # the student's own distribution: nothing to learn
    assert float(belief_kl(now, e.soft)) == pytest.approx(0.0, abs=1e-6)
    e.soft = [0.1, 0.7, 0.2]
    opt = torch.optim.SGD(split.trainable(), lr=0.5)
    before = belief_kl(candidate_logprobs(split, cache.get(e), e), e.soft)
    before.backward()
    opt.step()
    with torch.no_grad():
        after = belief_kl(candidate_logprobs(split, cache.get(e), e), e.soft)
    assert float(after) < float(before.detach())


def test_the_objective_weighs_its_two_terms_where_each_has_a_target():
    lp = torch.log_softmax(torch.tensor([1.0, 0.0, -1.0]), dim=-1)
    e = CandidateExample("a", [1], ["x", "y", "skip"], [1, 2, 3], 1, soft=[0.5, 0.3, 0.2])
    ce, kl = -float(lp[1]), float(belief_kl(lp, e.soft))
    assert float(example_loss(lp, e, 1.0, 0.0)) == pytest.approx(ce)
    assert float(example_loss(lp, e, 0.0, 1.0)) == pytest.approx(kl)
    assert float(example_loss(lp, e, 2.0, 0.5)) == pytest.approx(2 * ce + 0.5 * kl)
    no_belief = CandidateExample("b", [1], ["x", "skip"], [1, 2], 0)
    assert usable(no_belief, 1.0, 1.0) and not usable(no_belief, 0.0, 1.0)
    assert soft_target({"x": 0.2, "skip": 0.6}, ["x", "skip"]) == pytest.approx([0.25, 0.75])
    assert soft_target({"x": 1.0}, ["x", "skip"]) is None  # names other candidates: not the prompt's


COMPACT = "\n".join([
    "What you know:",
    "- I saw Noah kill Steve in Admin.",
    "- Michael died in Lower Engine; near the body before it was found: Ethan 2 blocks (3x within 6), "
    "James 9 blocks.",
    "- Jason was ejected: an Imposter.",
    "- Meeting 1 (Ethan reported): Jason accused Ethan; Martin accused Jason; votes Martin->Jason, "
    "Ethan->skip.",
    "- Olivia and Martin placed James in different rooms.",
    "This meeting:",
    'Noah: "It was not me. I suspect Olivia."',
    "Candidates: James, Olivia, Noah, Ethan, Martin, skip.",
    'Answer {"vote_target": "<one candidate>"}',
])


def test_the_linear_reader_parses_the_compact_prompt():
    f = features(COMPACT, ["James", "Olivia", "Noah", "Ethan", "Martin", "skip"])
    assert set(f) == {"James", "Olivia", "Noah", "Ethan", "Martin"}
    assert f["Noah"]["saw_kill"] == 1 and f["Ethan"]["near3"] == 1 and f["Ethan"]["close"] == 3
    assert f["James"]["near12"] == 1 and f["James"]["listed"] == 1
    assert f["Ethan"]["acc_got_by_imp"] == 1 and f["Ethan"]["reported"] == 1  # Jason was a revealed imposter
    assert f["Martin"]["accuses_imp"] == f["Martin"]["voted_imp"] == f["Martin"]["votes_cast"] == 1
    assert f["Olivia"]["conflict"] == 1 and f["Martin"]["conflict"] == 1 and f["Olivia"]["now_weak"] == 1
    assert f["Noah"]["now_accuses"] == 1


def test_the_linear_reader_learns_its_rows_target():
    """On rows where the expert votes the most accused candidate, the fitted reader ranks that one first and
    its probabilities sum to one over the candidates and skip."""
    rows = []
    for i in range(60):
        a, b = ("James", "Noah") if i % 2 else ("Noah", "James")
        text = f'What you know:\n- Meeting 1 (Ethan called): Ethan accused {a}; Martin accused {a}.\nThis ' \
               f'meeting:\nnobody spoke\nCandidates: {a}, {b}, Ethan, skip.'
        rows.append({"text": text, "candidates": [a, b, "Ethan", "skip"], "vote": a,
                     "belief": {a: 0.8, b: 0.1, "Ethan": 0.05, "skip": 0.05}})
    reader = LinearReader.fit_rows(rows, 1.0, 1.0)
    p = reader.probs(rows[0]["text"], rows[0]["candidates"])
    assert sum(p) == pytest.approx(1.0) and p[0] == max(p)
    assert reader.to_dict()["acc_got"] > 0 and set(reader.to_dict()) == {*FEATURES, "skip"}


@pytest.fixture(scope="module")
def bc_run(tmp_path_factory) -> dict[str, Path]:
    """Two teacher matches with compact VOTE prompts, their BCvote dataset."""
    from mau.collect.run import CollectConfig
    from mau.commands.collect import main as collect_main
    from mau.commands.dataset import DatasetConfig
    from mau.commands.dataset import main as dataset_main
    from mau.config import load_config, parse_overrides
    from mau.options import RunOptions

    d = tmp_path_factory.mktemp("bc")
    quiet = RunOptions(progress=False)
    collect_main(load_config(CollectConfig, "configs/collect/bc_ladder.yaml", parse_overrides(
        [f"out={d / 'collect'}", "workers=1", "grid.repetitions=2", "grid.crewmates=[cautious]",
         "grid.imposters=[accusatory]"])), quiet)
    dataset_main(load_config(DatasetConfig, None, {"runs": [str(d / "collect")], "filter": "bcvote",
                                                   "out": str(d / "bcvote")}), quiet)
    return {"collect": d / "collect", "bcvote": d / "bcvote"}


def test_the_learning_curve_scores_every_point_on_the_same_heldout_prompts(student, bc_run, tmp_path):
    from mau.commands.student_curve import main as curve_main
    from mau.config import load_config, parse_overrides
    from mau.options import RunOptions
    from mau.student.config import StudentCurveConfig

    out = tmp_path / "curve"
    cfg = load_config(StudentCurveConfig, "configs/student/curve.yaml", parse_overrides(
        [f"model.path={student}", f"data.dataset={bc_run['bcvote']}", f"heldout.runs=[{bc_run['collect']}]",
         "sizes=[3,6]", "objectives.belief.sizes=[3]", "save_sizes=[3]", "training.max_steps=2",
         "training.train_last_layers=1",
         f"output.dir={out}", "training.feature_cache=null"]))
    assert curve_main(cfg, RunOptions(progress=False)) == 0
    s = json.loads((out / "curve.json").read_text())
    assert [(p["objective"], p["examples"]) for p in s["points"]] == [
        ("vote", 3), ("vote+belief", 3), ("belief", 3), ("vote", 6), ("vote+belief", 6)]  # belief: one size
    assert s["points"][2]["weights"] == {"vote": 0.0, "belief": 1.0}
    probes = {p["heldout"]["all"]["probes"] for p in s["points"]}
    assert probes == {s["heldout"]["probes"]} and s["heldout"]["probes"] > 0  # the same prompts every time
    for p in s["points"]:
        assert p["linear"]["all"]["probes"] == s["heldout"]["probes"] and p["steps"] == 2
        e = p["heldout"]["all"]["auroc_within"]
        assert e["value"] is None or 0 <= e["value"] <= 1
    assert {"curve.md", "curve.csv", "curve.png", "features.pt"} <= {f.name for f in out.iterdir()}
    # the simple reader beside the expert: "most accused" on the same prompts
    assert s["references"]["most accused"]["all"]["probes"] == s["heldout"]["probes"]
    assert "| most accused |" in (out / "curve.md").read_text()
    saved = sorted(p.name for p in (out / "points").glob("*_model"))
    # the students of save_sizes, playable
    assert saved == ["belief_3_model", "vote_3_model", "vote_belief_3_model"]
    assert (out / "points" / "vote_belief_3_model" / "config.json").is_file()
    # nested subsets: a smaller point's matches are the first of a larger one's
    assert s["points"][0]["matches"] <= s["points"][3]["matches"]
    # --resume keeps the finished points and summarises them anew: a run restricted to some objectives
    # (as parallel runs of one curve are) does not leave its partial summary as the curve's
    part = cfg.model_copy(update={"resume": True, "objectives": {"vote": cfg.objectives["vote"]}})
    assert curve_main(part, RunOptions(progress=False)) == 0
    assert {p["objective"] for p in json.loads((out / "curve.json").read_text())["points"]} == {"vote"}
    assert curve_main(cfg.model_copy(update={"resume": True}), RunOptions(progress=False)) == 0
    again = json.loads((out / "curve.json").read_text())
    assert [p["heldout"] for p in again["points"]] == [p["heldout"] for p in s["points"]]
    # beside the validation, the same reading on as many of the point's own training rows (under- or
    # overfitting); a point of an older curve without it gets it on --resume from its saved student, the
    # same figures as when it was trained
    for p in s["points"]:
        fit, val = p["training_fit"], p["validation"]
        assert fit["n"] == min(p["examples"], val.get("n") or 1000) and "kl" in fit and "acc" in fit
    assert "| training KL |" in (out / "curve.md").read_text()
    old = out / "points" / "vote_belief_3.json"
    point = json.loads(old.read_text())
    fit = point.pop("training_fit")
    old.write_text(json.dumps(point))
    assert curve_main(cfg.model_copy(update={"resume": True}), RunOptions(progress=False)) == 0
    assert json.loads(old.read_text())["training_fit"] == pytest.approx(fit, rel=1e-5)


def test_the_pointer_readout_trains_saves_its_head_and_reads_the_probe_first(student, bc_run, tmp_path):
    """training.readout: pointer in the curve and in student-train: the head is fitted on the frozen model
    (the probe, read on the held-out prompts before fine-tuning), trained with the layers and saved beside
    them."""
    from mau.commands.student_curve import main as curve_main
    from mau.commands.student_train import main as train_main
    from mau.config import load_config, parse_overrides
    from mau.harness.candidate_head import HEAD_FILE, PointerHead
    from mau.options import RunOptions
    from mau.student.config import StudentCurveConfig, StudentTrainConfig

    quiet = RunOptions(progress=False)
    out = tmp_path / "curve"
    curve_main(load_config(StudentCurveConfig, "configs/student/curve.yaml", parse_overrides(
        [f"model.path={student}", f"data.dataset={bc_run['bcvote']}", f"heldout.runs=[{bc_run['collect']}]",
         "sizes=[4]", "objectives.vote.sizes=[]", "objectives.belief.sizes=[]", "save_sizes=[4]",
         "training.max_steps=2", "training.train_last_layers=1", "training.readout=pointer",
         f"output.dir={out}", "training.feature_cache=null"])), quiet)
    (point,) = json.loads((out / "curve.json").read_text())["points"]
    assert point["head_reads"] == "names+mentions"  # the default: the names and every earlier mention
    assert point["readout"] == "pointer" and point["probe"]["heldout"]["all"]["probes"] == \
        point["heldout"]["all"]["probes"] > 0
    assert point["probe"]["heldout"] != point["heldout"]  # fine-tuning moved the reading
    assert "(pointer)" in (out / "curve.md").read_text()
    assert PointerHead.load(out / "points" / "vote_belief_4_model").reads == "names+mentions"
    train = tmp_path / "train"
    train_main(load_config(StudentTrainConfig, "configs/student/train.yaml", parse_overrides(
        [f"model.path={student}", f"data.dataset={bc_run['bcvote']}", f"output.dir={train}",
         "training.max_steps=2", "training.train_last_layers=1", "training.readout=pointer",
         "training.head_reads=names"])), quiet)
    summary = json.loads((train / "train.json").read_text())
    assert (summary["readout"], summary["head_reads"]) == ("pointer", "names")
    assert (train / "model" / HEAD_FILE).is_file() and PointerHead.load(train / "model").reads == "names"


def test_student_train_learns_beliefs_and_scores_heldout_matches(student, bc_run, tmp_path):
    from mau.commands.student_train import main as train_main
    from mau.config import load_config, parse_overrides
    from mau.options import RunOptions
    from mau.student.config import StudentTrainConfig

    out = tmp_path / "train"
    train_main(load_config(StudentTrainConfig, "configs/student/train.yaml", parse_overrides(
        [f"model.path={student}", f"data.dataset={bc_run['bcvote']}", f"output.dir={out}",
         "training.max_steps=2", "training.train_last_layers=1", "training.vote_weight=0",
         "training.belief_weight=1", f"heldout.runs=[{bc_run['collect']}]"])), RunOptions(progress=False))
    s = json.loads((out / "train.json").read_text())
    assert s["weights"] == {"vote": 0.0, "belief": 1.0}
    assert s["examples"]["train_with_beliefs"] == s["examples"]["train"] > 0
    held = json.loads((out / "heldout.json").read_text())["student"]
    assert held["all"]["probes"] > 0 and held["all"]["kl_to_expert"] is not None
    with pytest.raises(Exception, match="both 0"):
        load_config(StudentTrainConfig, "configs/student/train.yaml", parse_overrides(
            ["training.vote_weight=0", "training.belief_weight=0"]))


def test_heldout_scoring_is_the_within_probe_auroc(bc_run):
    from mau.student.score import POOLED, expert_probs, read_probes, score, within_auroc

    assert within_auroc([0.9, 0.8, 0.1], [True, False, False]) == 1.0
    assert within_auroc([0.5, 0.5, 0.1], [True, False, False]) == 0.75  # a tie counts half
    assert within_auroc([0.5, 0.5], [True, True]) is None
    probes = read_probes([str(bc_run["collect"])])
    assert probes and all(p.candidates[-1] == F.SKIP and p.belief is not None for p in probes)
    truth = [[1.0 if c in p.imposters else 0.0 for c in p.candidates] for p in probes]
    perfect = score(probes, truth, resamples=20)
    assert perfect[POOLED]["auroc_within"]["value"] in (None, 1.0)
    expert = score(probes, expert_probs(probes), resamples=20)[POOLED]
    assert expert["kl_to_expert"] == pytest.approx(0.0, abs=1e-6)


def test_curve_subsets_are_whole_matches_in_a_seeded_order():
    from mau.student.curve import subset_order

    ex = [CandidateExample(f"{m}:{i}", [1], ["x", "skip"], [1, 2], 0, meta={F.MATCH: f"m{m}"})
          for m in range(20) for i in range(3)]
    a = subset_order(ex, 0)
    assert sorted(e.key for e in a) == sorted(e.key for e in ex) and subset_order(ex, 0) == a
    ms = [e.meta[F.MATCH] for e in a]
    assert all(ms[i] == ms[i + 1] or ms[i + 1] not in ms[: i + 1] for i in range(len(ms) - 1))  # together
    assert ms != [e.meta[F.MATCH] for e in ex] and a != subset_order(ex, 1)  # shuffled, by the seed
    assert [e.key for e in a[:3]] == sorted(e.key for e in a[:3])  # a match's rows keep their order


def test_curve_dry_run_counts_the_points(tmp_path, capsys):
    from mau.commands.student_curve import main as curve_main
    from mau.config import load_config, parse_overrides
    from mau.options import RunOptions
    from mau.student.config import StudentCurveConfig

    path = "configs/student/curve.yaml"
    cfg = load_config(StudentCurveConfig, path, parse_overrides([f"output.dir={tmp_path / 'c'}"]))
    assert curve_main(cfg, RunOptions(dry_run=True)) == 0
    assert "(10 points, 2 epochs each)" in capsys.readouterr().out  # 4 sizes x 2 objectives + belief at two
    assert not (tmp_path / "c").exists()
    with pytest.raises(Exception, match="objectives.belief.sizes: 5 is not one of sizes"):
        load_config(StudentCurveConfig, path, parse_overrides(["objectives.belief.sizes=[5]"]))
    with pytest.raises(Exception, match="save_sizes: 5 is not one of sizes"):  # no point would save it
        load_config(StudentCurveConfig, path, parse_overrides(["save_sizes=[1000, 5]"]))


def test_most_accused_reads_accusations_and_votes_received_from_the_compact_prompt():
    from types import SimpleNamespace

    from mau.student.curve import accused_probs

    text = ("Evidence:\n- Meeting 1 (Noah called): Noah accused Ethan; Steve accused Ethan; votes "
            "Noah->Ethan, Ethan->skip.\nCandidates: Ethan, Noah, Steve, skip.")
    cands = ["Ethan", "Noah", "Steve", F.SKIP]
    probs = accused_probs([SimpleNamespace(meta={"text": text}, candidates=cands)])[0]
    assert probs[0] > probs[1] == probs[2] and probs[3] == 0.0 and sum(probs) == pytest.approx(1.0)
