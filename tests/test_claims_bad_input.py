"""Bad input to mau claims, mau judge, mau beliefs and mau dataset (issues 30 and 44): every damaged or
missing file of a match is one line on stderr naming the file and the fix, exit code != 0, no traceback;
nothing is checked silently wrong and no result is silently smaller (an events.jsonl cut at a line boundary is
refused against match.json's n_events, a claims.jsonl against its recorded lines); a folder that is no run is
refused."""

from __future__ import annotations

import json
import shutil

import pytest

from mau import schema as F
from mau.cli import main as cli
from tests.test_claims_reports import _match


@pytest.fixture(scope="module")
def played(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad_input")
    return _match(root / "m3", 3)


def _sights_cut_mid_line(m):
    text = (m / F.SIGHTS_FILE).read_text()
    cut = len(text) // 2
    while text[cut - 1] == "\n" or text[cut] == "\n":  # inside a line, whatever the match
        cut -= 1
    (m / F.SIGHTS_FILE).write_text(text[:cut])


def _sights_cut_at_a_line(m):
    lines = (m / F.SIGHTS_FILE).read_text().splitlines(keepends=True)
    (m / F.SIGHTS_FILE).write_text("".join(lines[: len(lines) // 2]))


def _sights_empty(m):
    (m / F.SIGHTS_FILE).write_text("")


def _sights_missing(m):
    (m / F.SIGHTS_FILE).unlink()


def _sights_bad_index(m):
    lines = (m / F.SIGHTS_FILE).read_text().splitlines()
    line = json.loads(lines[2])
    line[F.SIGHT_PLACES] = [[99, 0]]
    lines[2] = json.dumps(line)
    (m / F.SIGHTS_FILE).write_text("\n".join(lines) + "\n")


def _edit_claim(m, change):
    events = [json.loads(x) for x in (m / F.EVENTS_FILE).read_text().splitlines()]
    e = next(e for e in events if e.get(F.CLAIMS))
    change(e[F.CLAIMS][0])
    (m / F.EVENTS_FILE).write_text("".join(json.dumps(x) + "\n" for x in events))


def _unknown_kind(m):
    _edit_claim(m, lambda c: c.update(k="rumour"))


def _time_not_a_number(m):
    def change(c):
        c.clear()
        c.update({"k": "at", "who": "me", "room": "Admin", "from_s": "ten", "to_s": 20})
    _edit_claim(m, change)


def _claims_file_cut(m):
    text = (m / F.CLAIMS_FILE).read_text()
    (m / F.CLAIMS_FILE).write_text(text[: len(text) // 2])


def _events_cut(m):
    text = (m / F.EVENTS_FILE).read_text()
    (m / F.EVENTS_FILE).write_text(text[: len(text) // 2])


def _header_missing(m):
    (m / F.MATCH_HEADER).unlink()


def _events_missing(m):
    (m / F.EVENTS_FILE).unlink()


def _events_lines(m) -> list[str]:
    return (m / F.EVENTS_FILE).read_text().splitlines(keepends=True)


def _events_cut_at_a_line(m):
    lines = _events_lines(m)
    (m / F.EVENTS_FILE).write_text("".join(lines[: len(lines) // 2]))


def _events_empty(m):
    (m / F.EVENTS_FILE).write_text("")


def _events_list_line(m):
    lines = _events_lines(m)
    lines[3] = json.dumps([1, 2, 3]) + "\n"
    (m / F.EVENTS_FILE).write_text("".join(lines))


def _edit_utterance(m, change):
    events = [json.loads(x) for x in _events_lines(m)]
    change(next(e for e in events if e[F.TYPE] == F.EV_UTTERANCE))
    (m / F.EVENTS_FILE).write_text("".join(json.dumps(x) + "\n" for x in events))


def _text_not_a_string(m):
    _edit_utterance(m, lambda e: e.update({F.UTTERANCE_TEXT: 5}))


def _gold_a_string(m):
    _edit_utterance(m, lambda e: e.update({F.CLAIMS_GOLD: "I was in Admin"}))


def _claims_file_cut_at_a_line(m):
    lines = (m / F.CLAIMS_FILE).read_text().splitlines(keepends=True)
    (m / F.CLAIMS_FILE).write_text("".join(lines[: len(lines) // 2]))


def _claims_file_empty(m):
    (m / F.CLAIMS_FILE).write_text("")


def _claims_file_missing(m):
    (m / F.CLAIMS_FILE).unlink()


CASES = [(_sights_cut_mid_line, F.SIGHTS_FILE, "not valid JSON"),
         (_sights_cut_at_a_line, F.SIGHTS_FILE, "but match.json records"),
         (_sights_empty, F.SIGHTS_FILE, "but match.json records"),
         (_sights_missing, F.SIGHTS_FILE, "missing, but match.json records"),
         (_sights_bad_index, F.SIGHTS_FILE, "not a pair of indices"),
         (_unknown_kind, F.EVENTS_FILE, "k: must be one of"),
         (_time_not_a_number, F.EVENTS_FILE, "from_s: expected game seconds"),
         (_claims_file_cut, F.CLAIMS_FILE, "not valid JSON"), (_events_cut, F.EVENTS_FILE, "not valid JSON"),
         (_header_missing, F.MATCH_HEADER, "no match.json"),
         (_events_missing, F.EVENTS_FILE, "missing"), (_events_cut_at_a_line, F.EVENTS_FILE, "n_events"),
         (_events_empty, F.EVENTS_FILE, "n_events"), (_events_list_line, F.EVENTS_FILE, "a JSON list"),
         (_text_not_a_string, F.EVENTS_FILE, "'text' or 'speaker' is not a string"),
         (_gold_a_string, F.EVENTS_FILE, "'gold_claims' is not a list"),
         (_claims_file_cut_at_a_line, F.CLAIMS_FILE, "but match.json records"),
         (_claims_file_empty, F.CLAIMS_FILE, "but match.json records"),
         (_claims_file_missing, F.CLAIMS_FILE, "missing, though match.json records")]


@pytest.mark.parametrize("damage, name, why", CASES, ids=[c[0].__name__.strip("_") for c in CASES])
@pytest.mark.parametrize("verb", ["claims", "judge", "beliefs"])
def test_a_damaged_match_is_one_line_and_a_failure(played, tmp_path, capsys, damage, name, why, verb):
    if verb == "judge" and name == F.CLAIMS_FILE:
        pytest.skip("mau judge does not read the match-end claims.jsonl")
    if verb == "beliefs" and (name == F.SIGHTS_FILE or damage in (_unknown_kind, _time_not_a_number)):
        pytest.skip("mau beliefs reads the match-end verdicts, not sights.jsonl nor the claims to check them")
    if verb == "claims" and name == F.CLAIMS_FILE and damage is not _claims_file_cut:
        pytest.skip("mau claims recomputes the verdicts; it reads claims.jsonl to compare when it is there")
    m = tmp_path / "m"
    shutil.copytree(played, m)
    damage(m)
    if name == F.MATCH_HEADER:  # no header: not a match folder; the run folder form names it too
        target = tmp_path
        (tmp_path / F.MATCHES_DIR).mkdir()
        shutil.move(str(m), tmp_path / F.MATCHES_DIR / "m")
        m = tmp_path / F.MATCHES_DIR / "m"
    else:
        target = m
    rc = cli(
        [verb, str(target), "--out", str(tmp_path / "out")]
        + (["--resamples", "20"] if verb in ("claims", "beliefs") else [])
    )
    err = capsys.readouterr().err
    if name == F.MATCH_HEADER:  # an unfinished match is not listed: nothing to report, said in one line
        assert rc == 0 or (rc != 0 and len(err.strip().splitlines()) == 1)
        return
    assert rc != 0 and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1 and name in err and why in err, err
    assert "restore" in err or "play" in err or "delete" in err or "copy it back" in err  # the fix


def test_damaged_extraction_cache_is_one_line(played, tmp_path, capsys):
    from mau.claimsread.extract import Extractor
    from mau.errors import MauError

    cache = tmp_path / "extract_cache.jsonl"
    cache.write_text('{"key": "a", "answer"\n')

    async def never(messages):
        raise AssertionError

    with pytest.raises(MauError, match="extract_cache.jsonl:1: not a cache line"):
        Extractor("m", never, cache)


def test_the_match_as_written_reads_in_every_verb(played, tmp_path, capsys):
    """The undamaged match passes each verb the tests above damage it for (their failures are the damage)."""
    for verb in ("claims", "judge", "beliefs"):
        more = ["--resamples", "20"] if verb != "judge" else []
        rc = cli([verb, str(played), "--out", str(tmp_path / verb)] + more)
        assert rc == 0, capsys.readouterr().err


@pytest.mark.parametrize("verb", ["claims", "judge", "beliefs"])
def test_a_folder_that_is_no_run_is_refused(tmp_path, capsys, verb):
    (tmp_path / "notes").mkdir()
    (tmp_path / "empty_run" / F.MATCHES_DIR).mkdir(parents=True)
    for folder, why in ((tmp_path / "notes", "neither a run folder"),
                        (tmp_path / "empty_run", "no finished match")):
        rc = cli([verb, str(folder), "--out", str(tmp_path / "out")])
        err = capsys.readouterr().err
        assert rc != 0 and len(err.strip().splitlines()) == 1 and why in err and str(folder) in err, err
    assert not (tmp_path / "out").exists()


def test_mau_dataset_names_a_damaged_event_log(tmp_path, capsys):
    """A cut events.jsonl is named as such, not blamed on a role leak (the ejection that made a role public is
    in the part cut away), and nothing is written."""
    pytest.importorskip("datasets")
    from tests.test_dataset import leak_match

    runs = tmp_path / "runs"
    d = leak_match("Ejected: Olivia (was an Imposter).", 600).write(runs)
    lines = (d / F.EVENTS_FILE).read_text().splitlines(keepends=True)
    (d / F.EVENTS_FILE).write_text("".join(lines[:1]))  # cut before the ejection
    rc = cli(["dataset", "--runs", str(runs), "--filter", "bcwin", "--out", str(tmp_path / "ds")])
    err = capsys.readouterr().err.strip()
    assert rc != 0 and "\n" not in err and "role leak" not in err, err
    assert f"{d / F.EVENTS_FILE}" in err and "n_events" in err and "restore" in err
    assert not (tmp_path / "ds").exists()
