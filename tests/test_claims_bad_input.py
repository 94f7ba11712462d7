"""Bad input to mau claims and mau judge (issue 30): every damaged or missing file of a match is one line on
stderr naming the file and the fix, exit code != 0, no traceback; nothing is checked silently wrong."""

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


CASES = [(_sights_cut_mid_line, F.SIGHTS_FILE, "not valid JSON"),
         (_sights_cut_at_a_line, F.SIGHTS_FILE, "but match.json records"),
         (_sights_empty, F.SIGHTS_FILE, "but match.json records"),
         (_sights_missing, F.SIGHTS_FILE, "missing, but match.json records"),
         (_sights_bad_index, F.SIGHTS_FILE, "not a pair of indices"),
         (_unknown_kind, F.EVENTS_FILE, "k: must be one of"),
         (_time_not_a_number, F.EVENTS_FILE, "from_s: expected game seconds"),
         (_claims_file_cut, F.CLAIMS_FILE, "not valid JSON"), (_events_cut, F.EVENTS_FILE, "not valid JSON"),
         (_header_missing, F.MATCH_HEADER, "no match.json")]


@pytest.mark.parametrize("damage, name, why", CASES, ids=[c[0].__name__.strip("_") for c in CASES])
@pytest.mark.parametrize("verb", ["claims", "judge"])
def test_a_damaged_match_is_one_line_and_a_failure(played, tmp_path, capsys, damage, name, why, verb):
    if verb == "judge" and name == F.CLAIMS_FILE:
        pytest.skip("mau judge does not read the match-end claims.jsonl")
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
        + (["--resamples", "20"] if verb == "claims" else [])
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
