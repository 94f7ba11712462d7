"""Claims from free text (docs/claims.md, "Extraction"): the phrasing reader on what people say (untimed,
relative, hedged, several claims, negations, misspelled names), F1 by claim kind computed here on a small
labelled file, the labelled corpus (reproduced from its sources, its held-out split), and the model extractor
through the harness backends: the mock OpenAI server started here (retries, parse failures, the cache, the F1
gate of mau claims) and the local ``lm`` backend with a tiny model written here."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from pathlib import Path

import pytest

from mau.claimsread import corpus as C
from mau.claimsread import extract as X
from mau.cli import main as cli
from mau.harness.mock_server import mock_server
from tests.test_claims import NAMES, PLACES
from tests.test_claims_reports import run  # noqa: F401  (the module's fixture of three played matches)

CTX = X.Context("Steve", NAMES, PLACES, meeting_s=300.0, since_s=200.0)


def _keys(text: str) -> list[tuple]:
    return sorted(map(X.match_key, X.spot(text, CTX)))


@pytest.mark.parametrize(
    "text, want",
    [
        (
            "I was in Admin.", [("at", "me", "Admin", "untimed")],
        ),  # some time since the last meeting: no window
        ("I think I stayed in Storage from 210 to 250 s.", [("at", "me", "Storage", "window", 210.0, 250.0)]),
        ("I was in Admin around 260 s.", [("at", "me", "Admin", "window", 260.0, 260.0)]),
        ("I was doing tasks in Admin just before the meeting.", [("at", "me", "Admin", "when", "end")]),
        (
            "I spotted Noha in Storage at 230 s.", [("saw", "Noah", "Storage", "at", 230.0)],
        ),  # a misspelled name
        (
            "I was never in Upper Engine. I was in the corridor between Admin and Storage.",
            [("at", "me", "corridor Admin-Storage", "untimed")],
        ),  # the negated one is no claim
        (
            "I saw Noah kill James. I suspect Noah.",
            [("accuse", "Noah"), ("saw_kill", "Noah", "James", None, "untimed")],
        ),
        (
            "I found the body of James in Storage, and Noah and Ethan were near it.",
            [("body", "James", "Storage", ("Ethan", "Noah"), "untimed")],
        ),
        (
            "Jason and I were together in Admin. Jason is innocent.",
            [("vouch", "Jason"), ("with", "Jason", "Admin", "untimed")],
        ),
        ("I do not suspect Jason at all.", []),
        ("I finished the task at station 7 at 280 s.", [("task", "me", 7, "at", 280.0)]),
        ("I saw him in Admin.", []),  # a pronoun with nobody named before it: no claim
        ("Noah was acting odd, I saw him in Admin.", [("saw", "Noah", "Admin", "untimed")]),
    ],
)
def test_the_phrasing_reader(text, want):
    assert _keys(text) == sorted(want)


def test_f1_by_kind_on_a_small_labelled_file(tmp_path):
    """Precision, recall and F1 per claim kind, counted by hand here: a claim matches on everything it states,
    its time as said included."""
    rows = [
        (
            "I was in Admin. I suspect Noah.",
            [{"k": "at", "who": "me", "room": "Admin"}, {"k": "accuse", "who": "Noah"}],
        ),
        ("I saw Noah in Storage at 250 s.", [{"k": "saw", "who": "Noah", "room": "Storage", "at_s": 250}]),
        (
            "I was in Storage from 210 to 240 s.",
            [
                {
                    "k": "at", "who": "me", "room": "Storage", "from_s": 210,
                    # the gold says 250: the reader's 240 misses
                    "to_s": 250,
                }
            ],
        ),
        ("Nothing to report.", [{"k": "vouch", "who": "Jason"}]),
    ]
    f = tmp_path / "small.jsonl"
    f.write_text("".join(json.dumps({"speaker": "Steve", "names": NAMES, "places": PLACES, "meeting_s": 300,
                                     "since_s": 200, "text": t, "claims": g}) + "\n" for t, g in rows))
    data = X.load_labelled(f)
    res = X.score([X.spot(t, c) for t, c, _ in data], [g for _, _, g in data])
    at = res["per_kind"]["at"]
    assert (at["tp"], at["fp"], at["fn"], at["f1"]) == (1, 1, 1, 0.5)
    assert res["per_kind"]["saw"]["f1"] == 1.0 and res["per_kind"]["accuse"]["f1"] == 1.0
    assert res["per_kind"]["vouch"] == {
        "precision": None, "recall": 0.0, "f1": 0.0, "tp": 0, "fp": 0, "fn": 1, "gold": 1,
    }
    assert res["pooled"]["tp"] == 3 and res["pooled"]["f1"] == pytest.approx(2 * 3 / (2 * 3 + 1 + 2))
    assert (
        X.score([X.spot(t, c) for t, c, _ in data], [g for _, _, g in data], X.loose_key)["per_kind"]["at"][
            "f1"
        ]
        == 1.0
    )  # times aside, both places are right


def test_the_corpus_is_reproduced_from_its_sources_and_large_enough():
    """Every sentence from its seed: the sentences drawn again from the sources are the shipped file, byte for
    byte; at least 1,000 sentences, a held-out split of half, every kind with gold claims in it."""
    legend, src = C.read_sources()
    shipped = C.SENTENCES.read_text().splitlines()
    head = json.loads(shipped[0])
    again = [C._dumps(x) for x in C.sentences(legend, src)]
    assert shipped[1:] == again and head["names"] == legend["names"]
    lines = [json.loads(x) for x in shipped[1:]]
    assert len(lines) >= 1000 and {x["split"] for x in lines} == {"dev", "held"}
    assert all(x["seed"] == f"mau-claims-corpus-{x['split']}-{x['id'].split('-')[1]}" for x in lines)
    held = X.load_labelled(C.SENTENCES, "held")
    kinds = {c["k"] for _, _, g in held for c in g}
    assert kinds == set(X.KINDS) and len(held) == C.PER_SPLIT["held"]
    dev_sources = {tuple(x["source"]) for x in lines if x["split"] == "dev"}
    held_sources = {tuple(x["source"]) for x in lines if x["split"] == "held"}
    assert not dev_sources & held_sources  # other matches


def test_the_shipped_reader_passes_the_gate_on_the_held_out_split():
    """docs/claims.md's per-kind table: F1 >= 0.9 for every kind of the held-out split."""
    held = X.load_labelled(C.SENTENCES, "held")
    res = X.score([X.spot(t, c) for t, c, _ in held], [g for _, _, g in held])
    assert all(v["f1"] >= 0.9 for v in res["per_kind"].values()), res["per_kind"]
    assert res["pooled"]["gold"] > 900


# -- a model through the harness backends --------------------------------------------------------------------
def _fixed(*answers):
    seq = list(answers)

    async def complete(messages):
        return (seq.pop(0) if len(seq) > 1 else seq[0]), 10, 5
    return complete


def test_the_extractor_checks_a_models_claims_retries_and_counts_parse_failures(tmp_path):
    good = json.dumps({"claims": [{"k": "at", "who": "me", "room": "Admin"},
                                  {"k": "saw", "who": "Nobody", "room": "Admin", "at_s": 250}]})
    ex = X.Extractor("m", _fixed("not json", good), tmp_path / "cache.jsonl")
    assert [c["room"] for c in asyncio.run(ex.read("anything", CTX))] == ["Admin"]
    assert (ex.stats["retries"], ex.stats["parse_failures"], ex.stats["dropped"]) == (1, 0, 1)
    # a new reader finds the answer in the cache
    again = X.Extractor("m", _fixed(None), tmp_path / "cache.jsonl")
    assert (
        asyncio.run(again.read("anything", CTX)) and again.stats["cached"] == 1 and again.stats["calls"] == 0
    )
    bad = X.Extractor("m", _fixed("still not json"), tmp_path / "cache2.jsonl", retries=2)
    assert asyncio.run(bad.read("I was in Storage.", CTX)) == []
    assert (bad.stats["calls"], bad.stats["parse_failures"]) == (3, 1)
    assert not (tmp_path / "cache2.jsonl").exists()  # a failed answer is asked again next time


def test_mau_claims_through_the_mock_server_gates_a_weak_extractor(run, tmp_path, capsys):  # noqa: F811
    """The mock answers no claims: F1 0 on the held-out split, so mau claims refuses to print lie rates (one
    line, exit code 2) unless --allow-weak-extractor; answers are cached; malformed answers are retried and
    counted as parse failures."""
    m = run / "matches" / "m5"
    with mock_server(str(tmp_path / "mock.log"), latency_ms=1) as srv:
        args = ["claims", str(m), "--out", str(tmp_path / "x"), "--resamples", "20", "--extract-model", "mx",
                "--extract-base-url", srv.base_url, "--extract-limit", "5"]
        assert cli(args) == 2
        out = capsys.readouterr()
        assert (
            "F1 below 0.9" in out.err
            and len(out.err.strip().splitlines()) == 1
            and "Traceback" not in out.err
        )
        assert "| all |" in out.out and not (tmp_path / "x" / "claims.md").exists()
        assert cli(args + ["--allow-weak-extractor"]) == 0
        first = json.loads(urllib.request.urlopen(srv.stats_url).read())["requests"]
        assert cli(args + ["--allow-weak-extractor"]) == 0
        assert json.loads(urllib.request.urlopen(srv.stats_url).read())["requests"] == first  # the cache
    md = (tmp_path / "x" / "claims.md").read_text()
    assert "**Weak extractor**" in md and md.count("*Claims read from free text by model mx") >= 5
    with mock_server(str(tmp_path / "mock2.log"), faults="malformed=1.0") as srv:
        args = ["claims", str(m), "--out", str(tmp_path / "y"), "--resamples", "20", "--extract-model", "my",
                "--extract-base-url", srv.base_url, "--extract-limit", "3", "--allow-weak-extractor"]
        assert cli(args) == 0
    st = json.loads((tmp_path / "y" / "claims.json").read_text())["extraction"]["stats"]
    assert st["utterances"] == st["parse_failures"] == 3 and st["retries"] == 6
    assert "parse failures 3 (100.0 %)" in (tmp_path / "y" / "claims.md").read_text()


def test_the_extractor_runs_on_the_local_lm_backend(tmp_path):
    """The CPU student's backend (docs/student.md) with a tiny random model written here: its answers are no
    JSON, so every utterance is a parse failure after its retries; nothing crashes."""
    pytest.importorskip("torch")
    pytest.importorskip("gguf")
    from mau.harness.completion import completion_fn, model_config
    from mau.models.smollm import materialise
    from tests.student_fixtures import write_tiny_gguf

    folder = materialise(tmp_path / "model", write_tiny_gguf(tmp_path / "tiny.gguf")).out
    complete, backend = completion_fn(model_config(str(folder), "lm", None, None, max_tokens=8))

    async def go():
        try:
            ex = X.Extractor("tiny", complete, retries=1)
            out = [await ex.read(t, CTX) for t in ("I was in Admin.", "I suspect Noah.")]
            return out, ex.stats
        finally:
            await backend.aclose()

    out, stats = asyncio.run(go())
    assert (
        out == [[], []] and stats["utterances"] == 2 and stats["parse_failures"] == 2 and stats["calls"] == 4
    )


def test_a_bad_labelled_file_is_one_line(tmp_path):
    from mau.errors import MauError

    f = tmp_path / "bad.jsonl"
    f.write_text('{"speaker": "Steve", "text": "x"}\n')
    with pytest.raises(MauError, match=r"bad.jsonl:1: not a labelled utterance"):
        X.load_labelled(f)
    missing = Path(tmp_path / "none.jsonl")
    with pytest.raises(MauError, match="no such labelled file"):
        X.load_labelled(missing)
