"""mau dataset: filters, splits by match, the role-leak audit, damaged inputs, the format header, and an
end-to-end build from a real ARIA match that renders through a Qwen3.5 processor with TRL's vision
collator."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mau import schema as F
from mau.cli import main
from mau.errors import MauError
from tests.match_factory import MatchSpec, filter_corpus
from tests.ml_fixtures import tiny_model_dir  # noqa: F401  (fixture)

pytest.importorskip("datasets")


def build(tmp_path: Path, runs: list[Path], filt: str = "bcwin", name: str = "ds", *extra: str) -> Path:
    out = tmp_path / name
    args = ["dataset", "--runs", *map(str, runs), "--filter", filt, "--out", str(out), *extra]
    assert main(args) == 0
    return out


def rows(out: Path) -> dict[str, list[dict]]:
    from datasets import load_from_disk

    dd = load_from_disk(str(out))
    return {s: [dict(r) for r in dd[s].remove_columns(F.DS_IMAGES)] for s in F.DATASET_SPLITS}


def call_ids(out: Path) -> set[str]:
    ids = [r[F.CALL_ID] for rs in rows(out).values() for r in rs]
    assert len(ids) == len(set(ids)), "an example appears twice"
    return set(ids)


# -- filters ------------------------------------------------------------------------------------------------

def test_bcvote_without_skips_keeps_only_votes_for_an_imposter(tmp_path):
    corpus = filter_corpus(tmp_path)
    out = build(
        tmp_path, [corpus["run"]], "bcvote", "ds", "--set", "vote_skips=false", "--set", "split.train=1",
        "--set", "split.validation=0", "--set", "split.test=0",
    )
    assert call_ids(out) == corpus["bcvote"] - {"lost:2"}


@pytest.mark.parametrize("filt", ["bcwin", "bcvote", "bcwin+vote"])
def test_filters_select_exactly_the_expected_calls(tmp_path, filt, capsys):
    corpus = filter_corpus(tmp_path)
    # every example in one split, so that every example is checked whatever the hash says
    out = build(
        tmp_path, [corpus["run"]], filt, "ds", "--set", "split.train=1", "--set", "split.validation=0",
        "--set", "split.test=0",
    )
    line = capsys.readouterr().out.strip()
    assert "\n" not in line and line.endswith(f"-> {out}")
    assert call_ids(out) == corpus[filt]
    header = json.loads((out / F.DATASET_HEADER).read_text())
    assert header["skipped"]["fallback"] == 3  # won:3, won:6 and lost:3
    assert header["skipped"]["non_crew"] == 2  # won:1 and lost:4
    train = {r[F.CALL_ID]: r for r in rows(out)["train"]}
    if "won:4" in train:
        r = train["won:4"]
        assert json.loads(r[F.DS_PARSED_JSON])[F.VOTE_TARGET] == "Olivia"
        assert r[F.DS_FILTERS] == (["bcwin", "bcvote"] if filt == "bcwin+vote" else [filt])
        assert (
            r[F.OUTCOME] == "CREWMATE WIN" and r[F.DS_CREW_WON] is True and r[F.DS_RUN] == str(corpus["run"])
        )
        assert r["prompt_style"] == "minimal" and r[F.MODEL] == "expert-x" and r[F.MODULE] == "vote"
        record = json.loads(r[F.DS_RECORD_JSON])
        assert record["temperature"] == 0.2 and record[F.CALL_ID] == "won:4" and F.MESSAGES not in record


def test_rows_are_trl_conversational_vision_examples(tmp_path):
    from datasets import load_from_disk

    corpus = filter_corpus(tmp_path)
    out = build(
        tmp_path, [corpus["run"]], "bcwin", "ds", "--set", "split.train=1", "--set", "split.validation=0",
        "--set", "split.test=0",
    )
    ds = load_from_disk(str(out))["train"]
    r = next(r for r in ds if r[F.CALL_ID] == "won:2")
    system, user, assistant = r[F.DS_MESSAGES]
    assert [m["role"] for m in r[F.DS_MESSAGES]] == ["system", "user", "assistant"]
    assert system["content"] == [{"type": "text", "text": system["content"][0]["text"]}]
    assert [p["type"] for p in user["content"]] == ["text", "image", "image"]  # the record's order
    assert assistant["content"][0]["text"] == '{"players_seen": [], "suspect": "none"}'
    assert len(r[F.DS_IMAGES]) == r[F.DS_N_IMAGES] == 2 and r[F.DS_IMAGES][0].size == (64, 36)
    # the bytes are the recorded JPEG, embedded (the match folder is not needed to read them)
    from datasets import Image, List

    raw = ds.cast_column(F.DS_IMAGES, List(Image(decode=False)))
    rec = next(x for x in raw if x[F.CALL_ID] == "won:2")
    frame = rec[F.DS_IMAGES][0]
    assert (
        frame["bytes"]
        == (corpus["run"] / F.MATCHES_DIR / "won" / frame["path"].split("/", 1)[1]).read_bytes()
    )
    text_only = next(r for r in ds if r[F.CALL_ID] == "won:4")
    assert text_only[F.DS_IMAGES] == [] and [p["type"] for p in text_only[F.DS_MESSAGES][1]["content"]] == [
        "text"
    ]


def test_text_only_examples_can_be_left_out(tmp_path, capsys):
    corpus = filter_corpus(tmp_path)
    out = build(tmp_path, [corpus["run"]], "bcwin", "ds", "--set", "include_text_only=false",
                "--set", "split.train=1", "--set", "split.validation=0", "--set", "split.test=0")
    assert call_ids(out) == {"won:0", "won:2"}
    assert "text_only=2" in capsys.readouterr().out


def test_unknown_filter_is_one_line(tmp_path, capsys):
    assert main(["dataset", "--runs", str(tmp_path), "--filter", "bcfoo", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "unknown filter 'bcfoo'" in err and "bcwin+vote" in err


# -- splits --------------------------------------------------------------------------------------------------

def test_splits_are_by_match_and_deterministic(tmp_path):
    matches = tmp_path / "many"
    for i in range(40):
        m = MatchSpec(f"g{i:02d}", outcome="MISSION WIN")
        for k in range(3):
            m.call(["Steve", "Noah", "Ethan"][k], "plan", 100 * k)
        m.write(matches)
    a = build(tmp_path, [matches], "bcwin", "a")
    b = build(tmp_path, [matches], "bcwin", "b")
    c = build(tmp_path, [matches], "bcwin", "c", "--set", "split.seed=7")
    ra, rb, rc = rows(a), rows(b), rows(c)
    where: dict[str, str] = {}
    for split, rs in ra.items():
        for r in rs:
            assert where.setdefault(r[F.MATCH], split) == split, f"{r[F.MATCH]} is in two splits"
    assert all(ra[s] for s in F.DATASET_SPLITS) and sum(map(len, ra.values())) == 120
    assert {s: [r[F.CALL_ID] for r in ra[s]] for s in ra} == {s: [r[F.CALL_ID] for r in rb[s]] for s in rb}
    assert {s: {r[F.MATCH] for r in rc[s]} for s in rc} != {s: {r[F.MATCH] for r in ra[s]} for s in ra}
    header = json.loads((a / F.DATASET_HEADER).read_text())
    assert sorted(Path(p).name for s in F.DATASET_SPLITS for p in header["match_dirs"][s]) == sorted(where)


def test_split_of_is_a_pure_function_of_seed_and_match():
    from mau.datasets.build import split_of

    fr = {"train": 0.8, "validation": 0.1, "test": 0.1}
    picks = [split_of(f"m{i}", 0, fr) for i in range(2000)]
    assert picks == [split_of(f"m{i}", 0, fr) for i in range(2000)]
    assert abs(picks.count("train") / 2000 - 0.8) < 0.04
    assert {split_of("m1", 0, {"train": 0, "validation": 0, "test": 1.0})} == {"test"}


def test_fractions_must_sum_to_one(tmp_path, capsys):
    assert (
        main(["dataset", "--runs", str(tmp_path), "--out", str(tmp_path / "x"), "--set", "split.train=0.5"])
        == 2
    )
    assert "train + validation + test must be 1" in capsys.readouterr().err


# -- the role-leak audit -------------------------------------------------------------------------------------

def leak_match(
    text: str, tick: int, *, agent: str = "Steve", say: tuple[str, str] | None = None
) -> MatchSpec:
    m = MatchSpec("leaky", outcome="CREWMATE WIN")
    m.call("Noah", "plan", 0)
    m.eject("Olivia", 500)
    if say:
        m.say(say[0], say[1], tick - 1)
    m.call(agent, "plan", tick, text=text)
    return m


def test_planted_leak_fails_the_build_with_one_line_and_writes_nothing(tmp_path, capsys):
    runs = tmp_path / "runs"
    leak_match("Ejected: Olivia (was an Imposter).", 300).write(runs)
    out = tmp_path / "ds"
    assert main(["dataset", "--runs", str(runs), "--filter", "bcwin", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("mau dataset: error: role leak in match leaky")
    assert "call leaky:1" in err and "'Olivia (was an Imposter)'" in err
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["runs"]  # no staging folder left


@pytest.mark.parametrize("text,tick,agent,say,leaks", [
    ("Ejected: Olivia (was an Imposter).", 300, "Steve", None, True),
    ("Ejected: Olivia (was an Imposter).", 600, "Steve", None, False),  # after her ejection
    ("Ejected: Olivia (was an Imposter).", 500, "Steve", None, False),  # same tick as the ejection
    ("Notes:\n- James   was AN imposter", 600, "Steve", None, True),  # any case, any whitespace
    ("I think that james is the imposter.", 600, "Steve", None, True),
    ("Steve is a Crewmate.", 300, "Steve", None, False),  # the caller's own role
    ("Noah is a Crewmate.", 300, "Steve", None, True),
    ('Meeting: Noah reported.\nNoah: "Olivia is the Imposter, I saw her."\nVote '
     'now.', 300, "Steve", None, False),
    ('Meeting:\nNoah: "Listen.\nJames was an Imposter before."\nVote now.', 300, "Steve",
     ("Noah", 'Listen.\nJames was an Imposter before.'), False),  # speech over two lines (known from the log)
    ("Your fellow Imposter: Olivia.", 600, "Steve", None, True),
    ('roles: {"James": "imposter", "Steve": "crewmate"}', 300, "Steve", None, True),
    ("Beliefs: James: suspicion 0.40", 300, "Steve", None, False),
    # an imposter's call: no example, no audit
    ("Ejected: Olivia (was an Imposter).", 300, "James", None, None),
    # claims (docs/claims.md): a private label or a verdict in the harness's text is a leak; in speech it is
    # words
    ('James: "I was in Admin." (verdict: FALSE)', 300, "Steve", None, True),
    ('Claims: [{"k": "at", "who": "me", "intent": "lie"}]', 300, "Steve", None, True),
    ("Noah's sighting is UNSUPPORTED.", 300, "Steve", None, True),
    ('Meeting: Noah reported.\nNoah: "Your alibi is UNSUPPORTED, verdict: FALSE."\nVote '
     'now.', 300, "Steve", None,
     False),
    ("James: I was in Admin from 300 s to 345 s. I accuse Noah.", 300, "Steve", None, False),
])
def test_audit_phrases(tmp_path, text, tick, agent, say, leaks):
    from mau.datasets.audit import Auditor
    from mau.datasets.filters import is_expert_example
    from mau.datasets.sources import load_match

    m = leak_match(text, tick, agent=agent, say=say)
    d = m.write(tmp_path)
    info = load_match(d, str(tmp_path), lambda p: pytest.fail(str(p)))
    call = m.calls[-1]
    if leaks is None:
        assert not is_expert_example(call)
        return
    found = Auditor(info).find(call)
    assert (found is not None) == leaks, found


@pytest.mark.parametrize(
    "parsed, leaks",
    [
        (
            {"response_text": "Hi.", "claims": [{"k": "accuse", "who": "Noah"}], "suspicion_cast_on": "Noah"},
            False,
        ),
        ({"response_text": "Hi.", "claims": [{"k": "accuse", "who": "Noah", "intent": "lie"}]}, True),
        ({"response_text": "Hi.", "_private": {"intent": ["lie"]}}, True),
        ({"vote_target": "Noah", "verdict": "FALSE"}, True),
    ],
)
def test_audit_refuses_claim_labels_in_answers(tmp_path, parsed, leaks):
    """A call record whose answer (raw or parsed) carries a claim's private label or a verdict is refused, for
    either role (the audit of collected runs checks imposters' calls for these too)."""
    from mau.datasets.audit import Auditor, claim_label_leak
    from mau.datasets.sources import load_match

    m = MatchSpec("labels", outcome="CREWMATE WIN")
    m.call("Steve", "meeting", 300, raw=json.dumps(parsed), parsed=parsed)
    info = load_match(m.write(tmp_path), str(tmp_path), lambda p: pytest.fail(str(p)))
    assert (Auditor(info).find(m.calls[-1]) is not None) == leaks
    imp = {**m.calls[-1], "role": "imposter", "parsed": {}}  # the raw answer alone
    assert (claim_label_leak(imp) is not None) == leaks


def test_audit_ignores_the_callers_own_earlier_words(tmp_path):
    from mau.datasets.audit import Auditor
    from mau.datasets.sources import load_match

    m = MatchSpec("notes", outcome="CREWMATE WIN")
    insight = "I am now sure that Olivia is the Imposter."
    m.call("Steve", "reflect", 200, raw=json.dumps({"insights": insight}), parsed={"insights": insight})
    m.call("Steve", "plan", 300, text=f"Notes:\n- {insight}")
    m.call("Noah", "plan", 300, text=f"Notes:\n- {insight}")  # not Noah's own words
    info = load_match(m.write(tmp_path), str(tmp_path), lambda p: pytest.fail(str(p)))
    a = Auditor(info)
    assert a.find(m.calls[1]) is not None  # before the reflection is seen
    a.observe(m.calls[0])
    assert a.find(m.calls[1]) is None
    assert a.find(m.calls[2]) is not None


def test_real_aria_prompts_pass_the_audit(aria_match):
    from mau.datasets.audit import Auditor
    from mau.datasets.filters import is_expert_example
    from mau.datasets.sources import iter_calls, load_match

    info = load_match(aria_match, str(aria_match.parent), lambda p: pytest.fail(str(p)))
    a = Auditor(info)
    n = 0
    for c in iter_calls(info, lambda p: pytest.fail(str(p))):
        if is_expert_example(c):
            assert a.find(c) is None, c[F.CALL_ID]
            n += 1
        a.observe(c)
    assert n > 50


# -- damaged inputs ------------------------------------------------------------------------------------------

def test_corrupt_and_truncated_lines_and_missing_frames_are_reported_and_counted(tmp_path, capsys):
    runs = tmp_path / "runs"
    m = MatchSpec("dmg", outcome="CREWMATE WIN")
    for k in range(4):
        m.call("Steve", "plan", 100 * k, images=1)
    m.call("Noah", "plan", 500, images=1, missing_image=True)
    m.raw_lines[3] = b'{"call_id": "dmg:2", "role": "crew\xff\n'  # corrupt (bad bytes, bad JSON)
    m.raw_lines[2] = json.dumps({**m.calls[1], F.TICK: None}).encode() + b"\n"  # JSON, but not a call record
    m.tail = b'{"call_id": "dmg:9", "role": "crewmate", "mod'  # the writer died mid-line
    d = m.write(runs)
    out = build(tmp_path, [runs], "bcwin", "ds", "--set", "split.train=1", "--set", "split.validation=0",
                "--set", "split.test=0")
    cap = capsys.readouterr()
    calls = d / F.CALLS_FILE
    assert f"{calls}:2: not a call record ('tick' is not an integer)" in cap.err
    assert f"{calls}:3: corrupt line" in cap.err
    assert f"{calls}:6: truncated last line" in cap.err
    assert f"{d / F.FRAMES_DIR}" in cap.err and "missing image file of call dmg:4" in cap.err
    assert "corrupt_lines=3" in cap.out and "missing_images=1" in cap.out
    assert call_ids(out) == {"dmg:0", "dmg:3"}
    header = json.loads((out / F.DATASET_HEADER).read_text())
    assert header["skipped"]["corrupt_lines"] == 3 and header["skipped"]["missing_images"] == 1
    assert header["problems"] == 4
    card = (out / F.DATASET_CARD).read_text()
    assert f"{calls}:3: corrupt line" in card and f"{calls}:6: truncated last line" in card


def test_unknown_match_version_is_one_line(tmp_path, capsys):
    runs = tmp_path / "runs"
    d = MatchSpec("future").write(runs)
    h = json.loads((d / F.MATCH_HEADER).read_text())
    h[F.FORMAT_VERSION] = 99
    (d / F.MATCH_HEADER).write_text(json.dumps(h))
    assert main(["dataset", "--runs", str(runs), "--out", str(tmp_path / "ds")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "match format version 99 is not the version this mau reads" in err
    assert not (tmp_path / "ds").exists()


def test_inputs_are_found_recursively_once_and_staging_folders_skipped(tmp_path):
    from mau.datasets.sources import find_matches

    runs = tmp_path / "runs"
    MatchSpec("a").write(runs / "r1" / F.MATCHES_DIR)
    MatchSpec("b").write(runs / "r2" / "deep")
    MatchSpec("c").write(runs / "r1" / F.MATCHES_DIR / ".c.partial-xyz")
    found = find_matches([runs, runs / "r1" / F.MATCHES_DIR / "a"])
    assert [p.name for p, _ in found] == ["a", "b"]
    assert found[0][1] == str(runs / "r1") and found[1][1] == str(runs / "r2" / "deep")
    with pytest.raises(MauError, match="holds no match folder"):
        find_matches([runs / "r1" / F.MATCHES_DIR / "a" / F.FRAMES_DIR])


# -- the folder: header, resume ------------------------------------------------------------------------------

def test_header_card_config_and_resume(tmp_path, capsys):
    from mau.datasets.build import read_dataset_header

    corpus = filter_corpus(tmp_path)
    out = build(tmp_path, [corpus["run"]], "bcwin+vote")
    h = read_dataset_header(out)
    assert h[F.FORMAT] == "mau.dataset" and h[F.FORMAT_VERSION] == F.DATASET_FORMAT_VERSION == 2
    assert h["filters"] == ["bcwin", "bcvote"]
    assert (
        sum(h["examples"].values()) == len(corpus["bcwin+vote"]) and h["provenance"]["packages"]["datasets"]
    )
    assert (out / F.RESOLVED_CONFIG).read_text().startswith("runs:")
    card = (out / F.DATASET_CARD).read_text()
    assert "BCwin: every crewmate call" in card and "BCvote" in card and "whitespace-separated words" in card
    assert str(corpus["run"]) in card and "git_commit" in card
    capsys.readouterr()
    before = (out / F.DATASET_HEADER).read_text()
    args = ["dataset", "--runs", str(corpus["run"]), "--filter", "bcwin+vote", "--out", str(out)]
    assert main(args) == 2 and "pass --resume" in capsys.readouterr().err
    assert main(args + ["--resume"]) == 0 and "(already finished)" in capsys.readouterr().out
    assert (out / F.DATASET_HEADER).read_text() == before


def test_reader_refuses_unknown_dataset_version(tmp_path):
    from mau.datasets.build import read_dataset_header

    corpus = filter_corpus(tmp_path)
    out = build(tmp_path, [corpus["run"]], "bcvote")
    h = json.loads((out / F.DATASET_HEADER).read_text())
    for old in (1, 3):  # version 1 has no beliefs_json column: rebuilt, never read as version 2
        h[F.FORMAT_VERSION] = old
        (out / F.DATASET_HEADER).write_text(json.dumps(h))
        with pytest.raises(MauError, match=f"dataset format version {old} is not the version this mau reads "
                                           r"\(2\); rebuild it with `mau dataset`"):
            read_dataset_header(out)
    with pytest.raises(MauError, match="not a mau dataset folder"):
        read_dataset_header(tmp_path)


# -- end to end: a real ARIA match -> dataset -> Qwen3.5 processor through TRL's collator --------------------

@pytest.fixture(scope="module")
def aria_match(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("aria") / "run" / F.MATCHES_DIR / "m3"
    assert main(["play", "--config", "configs/play/aria_scripted.yaml", "--seed", "3",
                 "--set", "world.game.max_steps=15", "--out", str(out)]) == 0
    return out


def test_end_to_end_from_a_real_aria_match(aria_match, tmp_path, tiny_model_dir):  # noqa: F811
    pytest.importorskip("torch")
    from datasets import load_from_disk
    from transformers import AutoProcessor
    from trl.trainer.sft_trainer import DataCollatorForVisionLanguageModeling

    from mau.datasets.build import features

    run = aria_match.parent.parent
    # bcwin of a TIMEOUT match: no example, yet every split exists with the full set of columns
    empty = load_from_disk(str(build(tmp_path, [run], "bcwin", "empty")))
    assert all(empty[s].num_rows == 0 and empty[s].features == features() for s in F.DATASET_SPLITS)

    out = build(tmp_path, [run], "all", "all", "--set", f"tokenizer={tiny_model_dir}")
    dd = load_from_disk(str(out))
    n_crew_expert = sum(1 for line in (aria_match / F.CALLS_FILE).read_text().splitlines()
                        if (c := json.loads(line))[F.ROLE] == "crewmate" and not c[F.FALLBACK])
    split = next(s for s in F.DATASET_SPLITS if dd[s].num_rows)
    assert sum(dd[s].num_rows for s in F.DATASET_SPLITS) == n_crew_expert == dd[split].num_rows
    assert "tokens (" in (out / F.DATASET_CARD).read_text()
    ex = next(r for r in dd[split] if r[F.DS_N_IMAGES] == 2)
    assert all(im.size == (640, 360) for im in ex[F.DS_IMAGES])

    processor = AutoProcessor.from_pretrained(tiny_model_dir)
    batch = DataCollatorForVisionLanguageModeling(processor)([{F.DS_MESSAGES: ex[F.DS_MESSAGES],
                                                               F.DS_IMAGES: ex[F.DS_IMAGES]}])
    image_id = processor.tokenizer.convert_tokens_to_ids(processor.image_token)
    merge = processor.image_processor.merge_size
    expected = int(batch["image_grid_thw"].prod(-1).sum()) // merge**2
    assert batch["image_grid_thw"].shape[0] == 2 and expected > 0
    assert int((batch["input_ids"] == image_id).sum()) == expected
    text = processor.tokenizer.decode(batch["input_ids"][0])
    assert text.rstrip().endswith(ex[F.DS_MESSAGES][2]["content"][0]["text"] + "<|im_end|>")


def test_bench_dataset_reports_both_sizes():
    from mau.commands.bench import bench_dataset

    r = bench_dataset(matches=1, seed=3, scale=2, max_steps=8)
    assert r["x1"]["examples"] > 0 and r["x2"]["examples"] == 2 * r["x1"]["examples"]
    assert r["examples_per_second"] > 0 and r["peak_rss_mb"] > 0 and r["peak_rss_ratio"] > 0
    assert not list(Path("runs").glob("bench-dataset-*"))  # the corpora are deleted


def test_bcclaims_keeps_votes_on_an_imposter_whose_claim_the_voter_contradicted():
    from pathlib import Path

    from mau.datasets.filters import FILTERS
    from mau.datasets.sources import MatchInfo

    match = MatchInfo(
        Path("."), "m", "r", {}, {"A": "imposter", "B": "crewmate", "Me": "crewmate"}, "CREWMATE WIN"
    )
    line = "- Meeting 1: A placed themself in Admin from 95 s to 125 s; I saw A in Storage at 100 s."

    def call(target: str, evidence: str) -> dict:
        return {"module": "vote", "parsed": {"vote_target": target},
                "messages": [{"role": "user", "content": f"Evidence:\n{evidence}\nVote now."}]}

    keep = FILTERS["bcclaims"].keep
    assert keep(call("A", line), match)
    assert not keep(call("A", "- Meeting 1: A reported the body of D; no "
                              "accusation."), match)  # no contradiction
    assert not keep(call("B", line.replace("A ", "B ")), match)  # a crewmate: not a liar caught
    assert not keep(call("skip", line), match)


def test_modules_keep_only_the_listed_modules_among_what_the_filter_keeps(tmp_path):
    corpus = filter_corpus(tmp_path)
    every = [r for s in rows(build(tmp_path, [corpus["run"]], "bcwin", "all")).values() for r in s]
    only = build(tmp_path, [corpus["run"]], "bcwin", "v", "--set", "modules=[vote]")
    votes = [r for s in rows(only).values() for r in s]
    assert {r[F.MODULE] for r in every} > {"vote"} and {r[F.MODULE] for r in votes} == {"vote"}
    assert sorted(r[F.CALL_ID] for r in votes) == sorted(r[F.CALL_ID] for r in every if r[F.MODULE] == "vote")
    h = json.loads((tmp_path / "v" / F.DATASET_HEADER).read_text())
    assert h["skipped"]["other_modules"] == len(every) - len(votes) > 0
    assert f"| kept calls of other modules than `modules` | {len(every) - len(votes)} |" in (
        tmp_path / "v" / F.DATASET_CARD).read_text()
