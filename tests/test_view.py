"""``mau view`` in a real headless Chromium (Playwright driving Debian's ``chromium``): the match page at a
step shows exactly what the match folder says (positions, frames, chat, votes, calls), roles stay hidden
until the toggle, the run page lists and links every match, a damaged match still opens and names what is
missing.

Screenshots of every page go to ``$MAU_VIEW_ARTIFACTS`` (default: pytest's tmp path), named by test.
The browser tests skip where chromium or Playwright is not installed (optional, README), except when
``MAU_REQUIRE_BROWSER=1`` (set by .ci/run), where a missing browser fails them.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from mau import schema as F
from mau.cli import main as cli_main
from mau.view.bench import BROWSER_ARGS

ARIA = "configs/play/aria_scripted.yaml"
SEED = 3  # a kill at step 7, a report and a meeting at step 8 (checked below)


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def match(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("view") / "m3"
    assert (
        cli_main(
            [
                "play", "--config", ARIA, "--seed", str(SEED), "--set", "world.game.max_steps=40", "--out",
                str(out),
            ]
        )
        == 0
    )
    return out


@pytest.fixture(scope="module")
def browser():
    exe = shutil.which("chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    if exe is None or sync_playwright is None:
        if os.environ.get("MAU_REQUIRE_BROWSER") == "1":
            pytest.fail("MAU_REQUIRE_BROWSER=1 but chromium or playwright is missing (see .ci/run)")
        pytest.skip("chromium or playwright not installed (optional: README, 'The viewer')")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=BROWSER_ARGS)
        yield b
        b.close()


@pytest.fixture
def artifacts(request, tmp_path) -> Path:
    d = Path(os.environ.get("MAU_VIEW_ARTIFACTS", tmp_path))
    d.mkdir(parents=True, exist_ok=True)
    return d


def _open(browser, url: str):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    page.wait_for_selector("body[data-ready='1']", timeout=10_000)
    page.errors = errors
    return page


def _site(folder: Path, out: Path) -> Path:
    assert cli_main(["view", str(folder), "--out", str(out)]) == 0
    return out / "index.html"


def _at(tracks: list[dict], step: int) -> dict:
    return [t for t in tracks if t[F.STEP] <= step][-1]


# -- the match folder records positions ---------------------------------------------------------------------
def test_tracks_are_recorded_and_match_the_world(match):
    """tracks.jsonl: one line after the reset, one per roam step, one per meeting; header counts them."""
    h = json.loads((match / F.MATCH_HEADER).read_text())
    tracks = _jsonl(match / F.TRACKS_FILE)
    assert h[F.TRACKS] == {"version": F.TRACKS_VERSION, "lines": len(tracks)}
    events = _jsonl(match / F.EVENTS_FILE)
    meetings = sum(1 for e in events if e[F.TYPE] == F.EV_MEETING_END)
    assert [t[F.TRACK_AFTER] for t in tracks].count("roam") == h[F.STEPS]
    assert [t[F.TRACK_AFTER] for t in tracks].count("meeting") == meetings >= 1
    assert tracks[0][F.STEP] == 0 and len(tracks[0][F.TRACK_PLAYERS]) == len(h[F.PLAYERS])
    kill = next(e for e in events if e[F.TYPE] == F.EV_KILL)
    after_kill = next(t for t in tracks if t[F.STEP] == kill[F.STEP])
    assert [kill["victim"], round(kill["x"], 2), round(kill["z"], 2)] in after_kill[F.TRACK_BODIES]
    assert kill["victim"] not in after_kill[F.TRACK_PLAYERS]


def test_sim_tracks_are_the_state():
    from tests.conftest import make_world

    w = make_world()
    w.reset(5)
    for _ in range(3):
        w.step({})
    last = w.tracks[-1]
    assert last[F.STEP] == 3 and last[F.TRACK_AFTER] == "roam"
    for p in w.state.players:
        assert last[F.TRACK_PLAYERS][p.name][:2] == [round(p.x, 2), round(p.z, 2)]
    snap = w.snapshot()
    w.step({})
    w.step({})
    w.restore(snap)
    assert [t[F.STEP] for t in w.tracks] == [0, 1, 2, 3]  # restore forgets the lines after the snapshot
    w.step({})
    assert [t[F.STEP] for t in w.tracks] == [0, 1, 2, 3, 4]


# -- the match page ------------------------------------------------------------------------------------------
def test_match_page_shows_the_folder_at_a_step(match, browser, tmp_path, artifacts):
    index = _site(match, tmp_path / "site")
    events = _jsonl(match / F.EVENTS_FILE)
    tracks = _jsonl(match / F.TRACKS_FILE)
    calls = _jsonl(match / F.CALLS_FILE)
    meeting = next(e for e in events if e[F.TYPE] == F.EV_MEETING_START)
    step = meeting[F.STEP]
    who = meeting["caller"]
    page = _open(browser, f"{index.as_uri()}#step={step}&p={who}")
    assert page.inner_text("#steplabel").startswith(f"step {step} /")

    # positions drawn = the last tracks line at this step
    line = _at(tracks, step)
    drawn = page.eval_on_selector_all(
        "#dots g.player",
        "gs => gs.map(g => [g.dataset.name, +g.dataset.x, "
        "+g.dataset.z, +g.querySelector('circle').getAttribute('cx')])",
    )
    assert sorted(d[0] for d in drawn) == sorted(line[F.TRACK_PLAYERS])
    for name, x, z, cx in drawn:
        assert [x, z] == line[F.TRACK_PLAYERS][name][:2] and cx == x

    # the frame shown = the files of this player at this step, loaded
    expected = sorted(f"frames/{p.name}" for p in (match / F.FRAMES_DIR).glob(f"{step:04d}_{who}_*.jpg"))
    assert expected
    srcs = page.eval_on_selector_all(
        "#frames img.frame", "is => is.map(i => [i.getAttribute('src'), i.naturalWidth])"
    )
    assert sorted(s for s, _ in srcs) == expected and all(w > 0 for _, w in srcs)

    # chat and votes = this meeting's utterances and votes in events.jsonl
    i0 = meeting[F.EVENT_INDEX]
    end = next(e for e in events[i0:] if e[F.TYPE] == F.EV_MEETING_END)[F.EVENT_INDEX]
    said = [
        f"{e[F.SPEAKER]}: {e['text'] if e[F.TYPE] == F.EV_UTTERANCE else '(passes)'}"
        for e in events[i0:end]
        if e[F.TYPE] in (F.EV_UTTERANCE, F.EV_PASS)
    ]
    assert page.eval_on_selector_all("#transcript li", "ls => ls.map(l => l.innerText)") == said
    votes = [[e["voter"], e["target"]] for e in events[i0:end] if e[F.TYPE] == F.EV_VOTE]
    assert (
        page.eval_on_selector_all("#votes tbody tr", "rs => rs.map(r => [...r.cells].map(c => c.innerText))")
        == votes
    )

    # calls of the selected player at this step, in order, with their raw output
    mine = [c for c in calls if c[F.AGENT] == who and c[F.STEP] == step]
    assert mine
    page.wait_for_selector("#calls .call")
    assert page.eval_on_selector_all("#calls .call", "cs => cs.map(c => c.dataset.module)") == [
        c[F.MODULE] for c in mine
    ]
    assert page.eval_on_selector_all("#calls pre.raw", "ps => ps.map(p => p.textContent)") == [
        c[F.RAW_OUTPUT] for c in mine
    ]
    page.screenshot(path=str(artifacts / "match_page.png"))
    assert not page.errors


def test_keys_timeline_and_url_fragment(match, browser, tmp_path):
    index = _site(match, tmp_path / "site")
    page = _open(browser, f"{index.as_uri()}#step=3&p=Noah")
    page.keyboard.press("ArrowRight")
    assert page.inner_text("#steplabel").startswith("step 4 /")
    assert "step=4" in page.evaluate("location.hash") and "p=Noah" in page.evaluate("location.hash")
    page.keyboard.press("Shift+ArrowLeft")
    assert page.inner_text("#steplabel").startswith("step 0 /")
    kill = next(e for e in _jsonl(match / F.EVENTS_FILE) if e[F.TYPE] == F.EV_KILL)
    page.click(f"#timeline li.kill[data-i='{kill[F.EVENT_INDEX]}']")
    assert page.inner_text("#steplabel").startswith(f"step {kill[F.STEP]} /")
    bodies = page.eval_on_selector_all("#bodies g.body", "gs => gs.map(g => g.dataset.name)")
    assert kill["victim"] in bodies
    page.click("#play")
    page.wait_for_function(f"MAU.state.step > {kill[F.STEP]}")
    page.click("#play")
    assert not page.errors


def test_roles_hidden_until_revealed(match, browser, tmp_path, artifacts):
    index = _site(match, tmp_path / "site")
    roles = json.loads((match / F.MATCH_HEADER).read_text())[F.ROLES]
    kill = next(e for e in _jsonl(match / F.EVENTS_FILE) if e[F.TYPE] == F.EV_KILL)
    page = _open(browser, f"{index.as_uri()}#step={kill[F.STEP]}")
    assert "imposter" not in page.inner_text("#players").lower()
    kill_li = f"#timeline li.kill[data-i='{kill[F.EVENT_INDEX]}']"
    assert kill["killer"] not in page.inner_text(kill_li)
    assert page.locator("#dots g.player.imp").count() == 0
    page.click("#reveal")
    for name, role in roles.items():
        assert f"{name} {role}" in page.inner_text(f"#players .pl[data-name='{name}']")
    assert kill["killer"] in page.inner_text(kill_li)
    assert "roles=1" in page.evaluate("location.hash")
    page.screenshot(path=str(artifacts / "match_page_roles.png"))
    page.click("#reveal")
    assert "imposter" not in page.inner_text("#players").lower()


def test_belief_curves_only_with_probes(match, browser, tmp_path):
    plain = tmp_path / "plain-match"
    shutil.copytree(match, plain)
    (plain / "probes.jsonl").unlink(missing_ok=True)  # the ideal observer writes probes by default (issue 10)
    index = _site(plain, tmp_path / "plain")
    page = _open(browser, index.as_uri())
    assert page.inner_text("#beliefs-box") == ""
    probed = tmp_path / "probed"
    shutil.copytree(match, probed)
    names = list(json.loads((match / F.MATCH_HEADER).read_text())[F.ROLES])
    with open(probed / "probes.jsonl", "w") as f:
        for step in (5, 10, 20):
            for source in ("model", "ideal"):
                f.write(
                    json.dumps(
                        {
                            "agent": "Steve", "step": step, "source": source,
                            "beliefs": {n: step / 40 for n in names if n != "Steve"},
                        }
                    )
                    + "\n"
                )
        f.write(
            json.dumps(
                {
                    "format_version": 1, "agent": "Steve", "step": 30, "source": "model", "beliefs": None,
                    "fallback": True, "fallback_reason": "not JSON",
                }
            )
            + "\n"
        )
        f.write("{damaged\n")
    index = _site(probed, tmp_path / "probed_site")
    page = _open(browser, f"{index.as_uri()}#p=Steve&step=12")
    assert page.locator("#beliefs polyline.model").count() == len(names) - 1
    assert page.locator("#beliefs polyline.ideal").count() == len(names) - 1
    assert "probes.jsonl line 8: damaged" in page.inner_text("#problems")
    assert not page.errors


def test_damaged_match_still_opens(match, browser, tmp_path, artifacts):
    bad = tmp_path / "bad"
    shutil.copytree(match, bad)
    shutil.rmtree(bad / F.FRAMES_DIR)
    (bad / F.TRACKS_FILE).unlink()
    lines = (bad / F.EVENTS_FILE).read_text().splitlines()
    lines[3] = lines[3][:20]
    (bad / F.EVENTS_FILE).write_text("\n".join(lines) + "\n")
    with open(bad / F.CALLS_FILE, "a") as f:
        f.write('{"call_id": "cut off\n')
    seen = next(
        c for c in _jsonl(match / F.CALLS_FILE) if c[F.STEP] >= 5 and "frames/" in json.dumps(c[F.MESSAGES])
    )
    index = _site(bad, tmp_path / "site")
    page = _open(browser, f"{index.as_uri()}#step={seen[F.STEP]}&p={seen[F.AGENT]}")
    problems = page.inner_text("#problems")
    assert "frames/" in problems and "missing" in problems
    assert "events.jsonl line 4: damaged" in problems
    assert "calls.jsonl line" in problems and "tracks.jsonl is missing" in problems
    assert "this match has no frames" in page.inner_text("#frames")
    page.wait_for_selector("#calls .call")
    assert "missing frame" in page.text_content("#calls")  # inside the closed prompt <details>
    page.screenshot(path=str(artifacts / "damaged_match.png"))
    assert not page.errors


# -- the run page --------------------------------------------------------------------------------------------
def _collect_run(match: Path, root: Path, n: int) -> Path:
    from mau.collect.summary import write_summary

    run = root / "run"
    (run / F.MATCHES_DIR).mkdir(parents=True)
    (run / F.RUN_HEADER).write_text(
        json.dumps({F.FORMAT: F.RUN_FORMAT, F.FORMAT_VERSION: 1, "planned_matches": n + 1})
    )
    h = json.loads((match / F.MATCH_HEADER).read_text())
    with open(run / F.GRID_FILE, "w") as grid:
        for k in range(n + 1):
            mid = f"{k:05d}_rr_I-m{k % 2}_C-m{k % 3}_r0"
            g = {
                "index": k, F.MATCH_ID: mid, F.SEED: 100 + k, F.CASE: "rr", F.IMPOSTER_MODEL: f"m{k % 2}",
                F.CREWMATE_MODEL: f"m{k % 3}", F.REP: 0,
            }
            grid.write(json.dumps(g) + "\n")
            if k < n:  # the last one is planned but not played
                d = run / F.MATCHES_DIR / mid
                shutil.copytree(match, d)
                (d / F.MATCH_HEADER).write_text(
                    json.dumps({**h, F.MATCH_ID: mid, F.SEED: 100 + k, F.GRID: g})
                )
    write_summary(run, n + 1)
    return run


def test_run_page_lists_and_links_every_match(match, browser, tmp_path, artifacts):
    run = _collect_run(match, tmp_path, 3)
    index = _site(run, tmp_path / "site")
    page = _open(browser, index.as_uri())
    ids = sorted(p.name for p in (run / F.MATCHES_DIR).iterdir())
    rows = page.eval_on_selector_all("#matches tbody tr", "rs => rs.map(r => r.dataset.id)")
    assert len(rows) == 4 and sorted(rows[:3]) == ids
    assert page.locator("#matches a.mlink").count() == 3
    summary = json.loads((run / F.SUMMARY_JSON).read_text())
    want = [[m, role, f"{r['wins']} / {r['n']}"]
            for m, roles in summary["win_rates"].items() for role, r in roles.items()]
    first3 = "rs => rs.map(r => [...r.cells].slice(0, 3).map(c => c.innerText))"
    got = page.eval_on_selector_all("#winrates tbody tr", first3)
    assert got == want
    page.screenshot(path=str(artifacts / "run_page.png"))
    page.fill("#filter", "I-m1")
    assert page.inner_text("#shown") == "2 of 4 shown"  # k = 1 (played) and 3 (planned only)
    page.fill("#filter", "")
    for mid in ids:
        page.click(f"#matches a.mlink >> text={mid}")
        page.wait_for_selector("body[data-ready='1']")
        assert page.inner_text("#match-id") == mid
        assert page.locator("#dots g.player").count() > 0
        page.click("#run-link")
        page.wait_for_selector("body[data-ready='1']")
    assert not page.errors


def test_served_over_loopback(match, browser, tmp_path):
    from mau.view.serve import SiteServer

    _site(match, tmp_path / "site")
    with SiteServer(tmp_path / "site") as srv:
        assert srv.port > 0
        page = _open(browser, srv.url + "#step=2")
        assert page.inner_text("#steplabel").startswith("step 2 /")
        page.wait_for_selector("#calls .call, #calls .note")
        assert not page.errors


# -- the command ---------------------------------------------------------------------------------------------
def test_view_refuses_what_it_cannot_show(tmp_path, capsys):
    assert cli_main(["view", str(tmp_path / "nope")]) == 2
    assert "no such folder" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert cli_main(["view", str(tmp_path / "empty")]) == 2
    assert "neither a match folder" in capsys.readouterr().err


def test_view_never_overwrites_a_foreign_folder(match, tmp_path, capsys):
    other = tmp_path / "mine"
    other.mkdir()
    (other / "precious.txt").write_text("x")
    assert cli_main(["view", str(match), "--out", str(other)]) == 2
    assert (other / "precious.txt").exists()
    assert cli_main(["view", str(match), "--out", str(tmp_path / "site")]) == 0
    assert cli_main(["view", str(match), "--out", str(tmp_path / "site")]) == 0  # our own site: rebuilt


def test_video(match, tmp_path):
    try:
        import imageio_ffmpeg  # noqa: F401
    except ImportError:
        if os.environ.get("MAU_REQUIRE_BROWSER") == "1":
            pytest.fail("imageio-ffmpeg missing (pip install '.[view]')")
        pytest.skip("imageio-ffmpeg not installed (optional: the view extra)")
    out = tmp_path / "m.mp4"
    assert cli_main(["view", str(match), "--video", "--out", str(out)]) == 0
    data = out.read_bytes()
    assert data[4:8] == b"ftyp" and len(data) > 10_000


def test_eval_run_page_shows_results_with_intervals(match, browser, tmp_path, artifacts):
    run = tmp_path / "eval"
    mid = "00000_A-base_I-scripted_s7"
    (run / F.MATCHES_DIR).mkdir(parents=True)
    (run / F.RUN_HEADER).write_text(
        json.dumps({F.FORMAT: F.EVAL_FORMAT, F.FORMAT_VERSION: 1, "planned_matches": 1})
    )
    g = {"index": 0, F.MATCH_ID: mid, F.SEED: 7, F.ARM: "base", F.EVAL_IMPOSTER: "scripted", F.CASE: "eval"}
    (run / F.GRID_FILE).write_text(json.dumps(g) + "\n")
    shutil.copytree(match, run / F.MATCHES_DIR / mid)
    h = json.loads((match / F.MATCH_HEADER).read_text())
    (run / F.MATCHES_DIR / mid / F.MATCH_HEADER).write_text(
        json.dumps({**h, F.SEED: 7, F.ARM: "base", F.GRID: g})
    )
    (run / F.RESULTS_CSV).write_text("arm,imposter,metric,value,ci_low,ci_high,n,method\n"
                                     "base,scripted,crew_win_rate,0.25,0.05,0.7,4,wilson\n"
                                     "base,scripted,kills,1.5,,,4,mean\n")
    index = _site(run, tmp_path / "site")
    page = _open(browser, index.as_uri())
    cells = "rs => rs.map(r => [...r.cells].map(c => c.innerText))"
    assert page.eval_on_selector_all("#results tbody tr", cells) == [
        ["base", "scripted", "0.25", "[0.05, 0.7]", "4", "wilson"]]
    page.select_option("#metric", "kills")
    assert page.eval_on_selector_all("#results tbody tr", cells) == [
        ["base", "scripted", "1.5", "–", "4", "mean"]
    ]
    row = page.eval_on_selector_all("#matches tbody tr", cells)
    assert row[0][:4] == [mid, h[F.OUTCOME], "base", "scripted"] and row[0][4] == "7"
    page.screenshot(path=str(artifacts / "eval_run_page.png"))
    assert not page.errors


def test_claims_show_as_chips_and_a_planted_lie_as_a_cross(browser, tmp_path, artifacts):
    """Claims on: each claim is a chip; with "reveal truth" the checker's verdict shows (✗ on a lie planted
    in the log, with the checker's reason and the label), hidden before."""
    from mau.claims.check import check_match
    from mau.claims.sights import read_lines

    folder = tmp_path / "claims"
    assert cli_main(["play", "--config", "configs/play/scripted.yaml", "--seed", str(SEED), "--set",
                     "world.claims.mode=structured", "--out", str(folder)]) == 0
    events = _jsonl(folder / F.EVENTS_FILE)
    said = next(e for e in events if e[F.TYPE] == F.EV_UTTERANCE and e.get(F.CLAIMS))
    plant = {"k": "at", "who": "me", "room": "Reactor", "from_s": 0.0, "to_s": said[F.TICK] / 20}
    # The planted lie: the speaker says it was in Reactor the whole match so far (nobody starts there).
    said[F.CLAIMS] = [plant] + said[F.CLAIMS]
    said[F.CLAIM_INTENT] = ["lie"] + (said.get(F.CLAIM_INTENT) or [None] * (len(said[F.CLAIMS]) - 1))
    (folder / F.EVENTS_FILE).write_text("".join(json.dumps(e) + "\n" for e in events))
    records = check_match(events, read_lines(folder))
    (folder / F.CLAIMS_FILE).write_text("".join(json.dumps(r) + "\n" for r in records))
    planted = next(r for r in records if r["i"] == said[F.EVENT_INDEX] and r["n"] == 0)
    assert planted["verdict"] == "FALSE"
    index = _site(folder, tmp_path / "site")
    page = _open(browser, f"{index.as_uri()}#step={said[F.STEP]}")
    chips = page.locator("#transcript .claim")
    assert chips.count() >= len(said[F.CLAIMS])
    first = page.locator("#transcript li").nth(
        [e for e in events if e[F.TYPE] in (F.EV_UTTERANCE, F.EV_PASS) and e[F.TICK] == said[F.TICK]].index(
            said
        )
    )
    chip = first.locator(".claim").first
    assert "I was in Reactor from 0 s" in chip.inner_text() and "✗" not in page.inner_text("#transcript")
    assert "lie" not in chip.inner_text()
    page.click("#reveal-truth")
    chip = first.locator(".claim").first
    assert chip.get_attribute("data-verdict") == "FALSE" and chip.inner_text().startswith("✗")
    assert planted["reason"] in chip.get_attribute("title") and "lie" in chip.inner_text()
    assert "truth=1" in page.evaluate("location.hash")
    marks = page.locator("#transcript .claim .mark").all_inner_texts()
    assert set(marks) <= {"✓", "✗", "~", "?"} and "✓" in marks
    page.screenshot(path=str(artifacts / "match_page_claims.png"))
    page.click("#reveal-truth")
    assert "✗" not in page.inner_text("#transcript")
    # A click draws the claim on the map: the claimed place dashed (no verdict colour without "reveal truth"),
    # and the speaker's real track over the window, which never enters Reactor.
    assert page.locator("#claimed rect").count() == 0
    first.locator(".claim").first.click()
    place = page.locator("#claimed rect.claimed")
    assert place.count() >= 1 and place.first.get_attribute("data-place") == "Reactor"
    assert place.first.get_attribute("class") == "claimed"
    track = page.locator("#claimed polyline.claim-track")
    assert track.count() == 1 and track.first.get_attribute("data-name") == said[F.SPEAKER]
    rect = [float(place.first.get_attribute(k)) for k in ("x", "y", "width", "height")]
    pts = [tuple(map(float, p.split(","))) for p in track.first.get_attribute("points").split()]
    assert len(pts) > 3 and not any(rect[0] <= x < rect[0] + rect[2] and rect[1] <= z < rect[1] + rect[3]
                                    for x, z in pts)
    assert "Reactor" in page.inner_text("#claim-note") and "FALSE" not in page.inner_text("#claim-note")
    page.click("#reveal-truth")
    assert page.locator("#claimed rect.claimed.v-false").count() == place.count()
    assert "FALSE" in page.inner_text("#claim-note")
    page.screenshot(path=str(artifacts / "match_page_claim_on_map.png"))
    page.click("#claim-clear")
    assert page.locator("#claimed rect").count() == 0 and page.inner_text("#claim-note") == ""
    assert not page.errors


def test_the_probes_a_match_writes_today_are_drawn(match, tmp_path):
    """probes.jsonl as the recorder writes it now (format_version 3) reaches the page; another version is
    named as a problem."""
    from mau.view.match import build_match

    written = [json.loads(x) for x in (match / F.PROBES_FILE).read_text().splitlines()]
    assert written and {r[F.PROBES_VERSION_FIELD] for r in written} == {F.PROBES_FORMAT_VERSION}
    build_match(match, tmp_path / "page")
    text = (tmp_path / "page" / "data.js").read_text()
    data = json.loads(text[text.index("(") + 1: text.rindex(")")])
    assert len(data["probes"]) == sum(1 for r in written if not r.get(F.FALLBACK)) > 0
    assert not [p for p in data["problems"] if "probes" in p]
    future = tmp_path / "future"
    shutil.copytree(match, future)
    (future / F.PROBES_FILE).write_text(json.dumps({**written[0], F.PROBES_VERSION_FIELD: 99}) + "\n")
    build_match(future, tmp_path / "page2")
    text = (tmp_path / "page2" / "data.js").read_text()
    assert "format_version ['99'] is not one this mau reads" in text
