"""The claims report as markdown (``claims.md`` of ``mau claims``), and the short section other reports
include (the collect summary; an eval's results.md through ``section``). Where the claims were read from free
text, the extractor's measured F1 comes first and again under every table (``caption``)."""

from __future__ import annotations

from typing import Any

from mau import schema as F
from mau.claims.check import FALSE, TRUE, UNSUPPORTED, UNVERIFIABLE
from mau.stats import fmt_estimate


def pct(e: dict[str, Any] | None, digits: int = 1) -> str:
    """``value [low, high] n=N`` in percent (``mau.stats.fmt_estimate``); ``-`` when undefined."""
    if not e or e.get("value") is None:
        return "-"
    return fmt_estimate(e, True, (digits, 3))


def _share(pair: list[int]) -> str:
    k, n = pair
    return f"{k} / {n} ({100 * k / n:.1f} %)" if n else "- (none)"


def checks_lines(ev: dict[str, Any]) -> list[str]:
    c = ev["checks"]
    cs, sz = c["checker_s_per_match"], c["sights_bytes_per_match"]
    return [
        "| check | result |", "|---|---|",
        f"| render -> parse gives every utterance's claims back | {_share(c['parsed_back'])} |",
        f"| facts without a label that are TRUE | {_share(c['unlabelled_facts_true'])} |",
        f"| facts labelled lie that are FALSE or UNSUPPORTED | {_share(c['lies_false_or_unsupported'])} |",
        f"| crew facts not TRUE that are labelled mistake | {_share(c['crew_not_true_labelled_mistake'])} |",
        f"| window exploit: kills where a majority-rule alibi (a place the killer was not in at the kill, a "
        f"window to the meeting holding it) would pass / of them, passing the checker | "
        f"{_exploit(c.get('window_exploit'))} |",
        *[f"| a random untimed alibi of {'an' if r[0] in 'aeiou' else 'a'} {r} passes (every room, every "
          f"speaker of every meeting) | "
          f"{_share(c['untimed_alibi_passes'][r])} |" for r in c.get("untimed_alibi_passes", {})],
        f"| verdicts identical to the match-end claims.jsonl | {_share(c['identical_to_match_end'])} |",
        f"| checker seconds per match (median, max) | {_num(cs['median'], 4)}, {_num(cs['max'], 4)} |",
        f"| sights.jsonl KB per match (median, max) | {_kb(sz['median'])}, {_kb(sz['max'])} |",
    ]


def _exploit(x: dict[str, int] | None) -> str:
    if not x:
        return "- (none)"
    return f"{x['applies']} of {x['kills']} kills / {x['passes']} pass"


def _num(x: float | None, d: int) -> str:
    return "-" if x is None else f"{x:.{d}f}"


def _kb(x: float | None) -> str:
    return "-" if x is None else f"{x / 1000:.1f}"


def verdict_lines(ev: dict[str, Any]) -> list[str]:
    out = ["| role | TRUE | FALSE | UNSUPPORTED | UNVERIFIABLE | stances | false_share (facts) |",
           "|---|---|---|---|---|---|---|"]
    for role, v in ev["verdicts"].items():
        share = ev["pooled"]["metrics"][f"false_share_{role}"]
        out.append(f"| {role} | {v[TRUE]} | {v[FALSE]} | {v[UNSUPPORTED]} | {v[UNVERIFIABLE]} | "
                   f"{v['stances']} | {pct(share)} |")
    return out


POOLED = [("claim accuracy (facts)", "claim_accuracy"), ("false share (facts)", "false_share"),
          ("FALSE share (facts)", "false_only_share"),
          ("unverifiable share (facts)", "unverifiable_share"), ("lie rate (labels)", "lie_rate"),
          ("lies FALSE or UNSUPPORTED (labels)", "lies_caught"),
          ("known-false rate (checker)", "known_false_rate"), ("spatial errors (at, saw)", "spatial_error"),
          ("accusations of an imposter", "accusation_accuracy"), ("grounded "
                                                                  "accusations", "grounded_accusations"),
          ("unsupported accusations", "unsupported_accusations")]


def pooled_lines(t: dict[str, Any]) -> list[str]:
    m = t["metrics"]
    out = ["| metric (%, 95 % match bootstrap) | crewmates | imposters |", "|---|---|---|"]
    out += [f"| {name} | {pct(m[f'{key}_crewmate'])} | {pct(m[f'{key}_imposter'])} |" for name, key in POOLED]
    out += [f"| {name} | {pct(m[key])} | |" for name, key in (
        ("meetings with an imposter's false fact", "meetings_with_a_lie"),
        ("liar-vote recall (crew votes)", "liar_vote_recall"), ("liar-vote precision (crew votes)",
                                                                "liar_vote_precision"))]
    return out


IMPOSTER_COLUMNS = {"false share": "false_share_imposter", "lie rate": "lie_rate_imposter",
                    "lies FALSE or UNSUPPORTED": "lies_caught_imposter",
                    "meetings with a false fact": "meetings_with_a_lie"}
CREW_COLUMNS = {"claim accuracy": "claim_accuracy_crewmate", "FALSE share": "false_only_share_crewmate",
                "spatial errors": "spatial_error_crewmate", "liar-vote recall": "liar_vote_recall",
                "liar-vote precision": "liar_vote_precision",
                "grounded accusations": "grounded_accusations_crewmate"}


def group_lines(ev: dict[str, Any], cap: list[str] = ()) -> list[str]:
    return [*_group_table("### Imposter claims by imposter model", cap, "imposter model", IMPOSTER_COLUMNS,
                          ev["by_imposter"]), "",
            *_group_table("### Crew claims and votes by crewmate model (or arm)", cap, "crewmate model",
                          CREW_COLUMNS, ev["by_crewmate"])]


def _group_table(title: str, cap: list[str], first: str, columns: dict[str, str],
                 groups: dict[str, Any]) -> list[str]:
    """A table with a row per group (a model or an arm): its matches and each metric of ``columns``."""
    out = [title, "", *cap, "| " + " | ".join([first, "matches", *columns]) + " |",
           "|" + "---|" * (len(columns) + 2)]
    for k, t in groups.items():
        cells = [str(k), str(t["matches"]), *(pct(t["metrics"][m]) for m in columns.values())]
        out.append("| " + " | ".join(cells) + " |")
    return out


def caption(x: dict[str, Any] | None) -> list[str]:
    """The line under every table of a report whose claims were read from free text: which reader, its F1."""
    if not x:
        return []
    f = x["score"]["pooled"]["f1"]
    low = min((k for k in x["score"]["per_kind"].values() if k["f1"] is not None), key=lambda k: k["f1"],
              default=None)
    worst = f"; lowest per kind {low['f1']:.3f}" if low else ""
    return [f"*Claims read from free text by {x['extractor']}: F1 {_f(f)} on {_where(x, 'corpus_name')}"
            f"{worst}.*", ""]


def _where(x: dict[str, Any], key: str = "corpus") -> str:
    """The labelled file (and split) an extractor was measured on."""
    return (f"the {x['split']} split of " if x.get("split") else "") + str(x[key])


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def extraction_lines(x: dict[str, Any]) -> list[str]:
    """The extractor's measured quality: per claim kind on the labelled corpus, parse failures, and (free
    mode) against the words' own gold."""
    sc = x["score"]
    out = [f"Claims of utterances without structured claims were read from their text by {x['extractor']} "
           f"(prompt version {x['prompt_version']}). Measured on {_where(x)} "
           f"({x['n']} sentences, {sc['pooled']['gold']} gold claims; a claim matches on kind, subject, "
           f"place or object and its time as said): F1 **{_f(sc['pooled']['f1'])}** (times aside: "
           f"{_f(x['loose']['f1'])}).", "",
           "| kind | gold claims | precision | recall | F1 |", "|---|---|---|---|---|"]
    for k, v in [("all", sc["pooled"]), *sc["per_kind"].items()]:
        out.append(f"| {k} | {v['gold']} | {_f(v['precision'])} | {_f(v['recall'])} | {_f(v['f1'])} |")
    nc = x.get("no_claim")
    if nc and nc["sentences"]:
        out += ["", f"Sentences that state no claim of their speaker (reported speech, questions, plans): "
                f"{nc['yield_a_claim']} of {nc['sentences']} yield a claim."]
    st = x.get("stats") or {}
    if st.get("utterances"):
        out += ["", f"Model answers: {st['utterances']} utterances, {st.get('calls', 0)} calls, "
                f"{st.get('retries', 0)} retries, {st.get('cached', 0)} from the cache; parse failures "
                f"{st.get('parse_failures', 0)} ({100 * st.get('parse_failures', 0) / st['utterances']:.1f} "
                f"%), claims the grammar dropped {st.get('dropped', 0)}."]
    if x.get("speech"):
        sp = x["speech"]["pooled"]
        out += ["", f"Against the gold of the matches' own words (world.claims.mode free): F1 {_f(sp['f1'])} "
                f"(precision {_f(sp['precision'])}, recall {_f(sp['recall'])}, {sp['gold']} gold claims)."]
    if x.get("weak"):
        then = ("the numbers below were printed because of "
                "--allow-weak-extractor" if x.get("allowed_weak") else
                "no lie rate is printed from it")
        out += ["", f"**Weak extractor**: its F1 is below {x['gate']} ({x['weak']}); {then}."]
    out.append(f"{x['extracted_utterances']} utterances of the runs read.")
    return out


def markdown(ev: dict[str, Any], runs: list[str], extraction: dict[str, Any] | None = None) -> str:
    cap = caption(extraction)
    lines = ["# Claims report", "", f"Runs: {', '.join(runs)}. Matches: {ev['matches']}. Definitions: "
                                    f"docs/claims.md.",
             ""]
    if extraction is not None:
        lines += ["## Extraction from free text", ""] + extraction_lines(extraction) + [""]
    lines += ["## Checks", "", *cap] + checks_lines(ev)
    lines += ["", "## Verdicts by role", "", *cap] + verdict_lines(ev)
    lines += ["", "## Pooled", "", *cap] + pooled_lines(ev["pooled"])
    lines += [""] + group_lines(ev, cap)
    return "\n".join(lines) + "\n"


def section(ev: dict[str, Any]) -> list[str]:
    """A short "Claims" section (collect summary, eval results.md): verdicts by role and the pooled table."""
    if not ev["matches"] or not any(sum(v.values()) for v in ev["verdicts"].values()):
        return []
    return ["## Claims (docs/claims.md)", ""] + verdict_lines(ev) + [""] + pooled_lines(ev["pooled"]) + [""]


def run_claims(run: Any, resamples: int = 1000, seed: int = 0) -> dict[str, Any] | None:
    """For a run folder whose matches have claims (their match-end claims.jsonl, not checked again): the
    pooled numbers ({matches, verdicts, pooled, by_crewmate: the same per crewmate model or eval arm};
    ``section`` renders the pooled ones), or None for a run without claims. What a
    run's summary (collect) and results.md (eval) include; ``mau claims`` gives the whole report."""
    from mau.claimsread import metrics
    from mau.matchdir import finished_matches, read_header

    found = [p for p in finished_matches(run)
             if (p / F.CLAIMS_FILE).is_file() or read_header(p).get(F.CLAIMS_HEADER)]
    if not found:
        return None
    ms = [metrics.load(p, recorded_only=True) for p in found]
    arms = sorted({m.groups["crewmate"] for m in ms})  # collect: crewmate model; eval: arm
    return {
        "matches": len(ms), "verdicts": metrics.verdict_counts(ms),
        "pooled": metrics.table(ms, resamples, seed),
        "by_crewmate": {
            a: metrics.table([m for m in ms if m.groups["crewmate"] == a], resamples, seed) for a in arms
        },
    }


def summary_json(ev: dict[str, Any]) -> dict[str, Any]:
    """The compact numbers a run summary keeps."""
    m = ev["pooled"]["metrics"]
    keep = [f"{k}_{r}" for k in ("claim_accuracy", "false_share", "lie_rate", "spatial_error") for r in
            (F.CREWMATE, F.IMPOSTER)] + ["liar_vote_recall", "liar_vote_precision", "meetings_with_a_lie"]
    return {"matches": ev["matches"], "verdicts": ev["verdicts"], **{k: m[k] for k in keep}}
