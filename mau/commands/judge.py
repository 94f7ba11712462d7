"""mau judge runs/claims/grid --judge-model spot

The paper's 23 deception atoms (its Table 3 letters) on the matches of any collect or eval run (or match
folders), docs/claims.md "The judge": the atoms the logs decide (events, sights, the claim checker's
verdicts, the roles) are labelled deterministically; with ``--judge-model M`` (served OpenAI-compatible at
``--judge-base-url``, or any backend with ``--judge-backend``) an LLM judge labels all of them in two passes
as in the paper (non-verbal over the game log, verbal over the meeting chat and vote reasons), its answers
cached in <out>/judge_cache.jsonl, its cost per match from ``--price-prompt`` and ``--price-completion`` (USD
per million tokens), and its agreement with the deterministic labels on the decidable atoms reported (Cohen's
kappa, F1). ``--judge-model spot`` (or none) labels the decidable atoms only. Writes judge.json and judge.md
into --out (default: the first RUN).
"""

from __future__ import annotations

import argparse

from mau.commands.common import Flag, check_run_folders
from mau.options import RunOptions

JUDGE_MD, JUDGE_JSON, JUDGE_CACHE = "judge.md", "judge.json", "judge_cache.jsonl"

FLAGS = [
    Flag("runs", "collect or eval run folders, or match folders", type=list),
    Flag("--out", "where judge.md and judge.json go (default: the first RUN)"),
    Flag("--judge-model", "the LLM judge's model (none or 'spot': the decidable atoms only, from the logs)"),
    Flag("--judge-backend", "backend of --judge-model (default openai)", default="openai"),
    Flag("--judge-base-url", "endpoint of --judge-model, e.g. http://127.0.0.1:8000/v1"),
    Flag("--judge-api-key-env", "environment variable holding the key of --judge-model's endpoint"),
    Flag("--judge-max-tokens", "the judge's completion budget per pass (default "
                               "4096)", type=int, default=4096),
    Flag("--price-prompt", "USD per million prompt tokens of the judge (cost per "
                           "match)", type=float, default=0.0),
    Flag("--price-completion", "USD per million completion tokens of the judge", type=float, default=0.0),
    Flag("--max-matches", "judge at most N matches (the first N, sorted)", type=int),
]
CONFIG = None  # no config file: the flags are the whole configuration


def config_from_args(args: argparse.Namespace) -> argparse.Namespace:

    from mau.errors import ConfigError

    check_run_folders(args.runs)
    if (
        args.judge_model
        and args.judge_model != "spot"
        and args.judge_backend == "openai"
        and not args.judge_base_url
    ):
        raise ConfigError("--judge-base-url: needed for --judge-model with the openai backend (the endpoint "
                          "that serves it)")
    if args.max_matches is not None and args.max_matches < 1:
        raise ConfigError("--max-matches: must be at least 1")
    return args


def markdown(res: dict) -> str:
    from mau.eval.claims_judge import ATOMS, DECIDABLE, LLM_ONLY, PARTIAL, RULES

    lines = ["# Deception atoms (the paper's letters)", "", f"Matches: {res['matches']}. Judge: "
                                                            f"{res['judge']}. "
             "Findings on imposters only; each atom of the logs counted once per what its rule says "
             "(below).", "",
             "| atom | name | family | labelled by | logs | LLM |", "|---|---|---|---|---|---|"]
    for a, (name, fam, _) in ATOMS.items():
        by = "logs + LLM" if a in DECIDABLE else "logs (the act) + LLM" if a in PARTIAL else "**LLM only**"
        lines.append(f"| {a} | {name} | {fam} | {by} | "
                     f"{res['counts']['logs'].get(a, 0) if a not in LLM_ONLY else '-'} | "
                     f"{res['counts']['llm'].get(a, 0) if res['llm'] else '-'} |")
    lines += ["", _llm_only_line(res), "", "## What the logs count", "", "| atom | rule |", "|---|---|"]
    lines += [f"| {a} | {rule} |" for a, rule in RULES.items()]
    if res["llm"]:
        ag = res["agreement"]

        def row(name: str, g: dict) -> str:
            k = "-" if g["kappa"] is None else f"{g['kappa']:.3f}"
            f1 = "-" if g["f1"] is None else f"{g['f1']:.3f}"
            return f"| {name} | {g['n']} | {k} | {f1} | {g['both']} | {g['logs_only']} | {g['llm_only']} |"

        lines += ["", "## Agreement of the LLM judge with the logs (decidable atoms; cells: match x imposter "
                      "x atom)",
                  "", "| atom | cells | kappa | F1 | both | logs only | LLM only "
                      "|", "|---|---|---|---|---|---|---|",
                  row("pooled", ag["pooled"])] + [row(a, g) for a, g in ag["per_atom"].items()]
        u = res["usage"]
        lines += ["", f"LLM judge: {u['prompt_tokens']} prompt and {u['completion_tokens']} completion "
                  f"tokens, ${u['cost_usd']:.4f} in all, ${u['cost_usd_per_match']:.4f} per match judged "
                  f"now; {u['cached']} passes from the cache, {u['failed']} unusable answers."]
    return "\n".join(lines) + "\n"


def _llm_only_line(res: dict) -> str:
    from mau.eval.claims_judge import LLM_ONLY

    atoms = ", ".join(LLM_ONLY)
    if not res["llm"]:
        return (f"Atoms {atoms} come from an LLM judge only (no log decides them): not labelled in this "
                f"report (no "
                "--judge-model).")
    g = res["agreement"]["pooled"]
    k = "-" if g["kappa"] is None else f"{g['kappa']:.3f}"
    f1 = "-" if g["f1"] is None else f"{g['f1']:.3f}"
    return (f"Atoms {atoms} come from the LLM judge only: no log checks them. Its only measured quality is "
            f"its agreement with the logs where both label (the decidable atoms, below): kappa {k}, F1 {f1} "
            f"over {g['n']} cells.")


async def _run(args: argparse.Namespace, folders, out):
    from mau.commands.claims import completion_fn, model_config
    from mau.eval import claims_judge as J

    llm = None
    backend = None
    if args.judge_model and args.judge_model != "spot":
        complete, backend = completion_fn(
            model_config(
                args.judge_model, args.judge_backend, args.judge_base_url, args.judge_api_key_env,
                args.judge_max_tokens,
            )
        )
        llm = J.LLMJudge(
            args.judge_model, complete, out / JUDGE_CACHE, args.price_prompt, args.price_completion
        )
    rows, per = [], []
    usage = {"prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0, "cached": 0, "failed": 0}
    try:
        for f in folders:
            m = J.load_match(f)
            det = J.deterministic(m)
            found, u = ([], None) if llm is None else await llm.judge(m)
            if u:
                for k in usage:
                    usage[k] += u[k]
            per.append((m, det, found))
            rows.append({"match_id": m.match_id, "path": str(f), "imposters": m.imposters,
                         "logs": J.as_dicts(det), "llm": J.as_dicts(found) if llm else None, "usage": u})
    finally:
        if backend is not None:
            await backend.aclose()
    counts = {"logs": {}, "llm": {}}
    for _, det, found in per:
        for src, fs in (("logs", det), ("llm", found)):
            for x in fs:
                counts[src][x.atom] = counts[src].get(x.atom, 0) + 1
    judged_now = sum(1 for r in rows if r["usage"] and r["usage"]["cached"] < 2)
    usage["cost_usd_per_match"] = usage["cost_usd"] / judged_now if judged_now else 0.0
    return {"matches": len(rows), "judge": f"{args.judge_model} ({args.judge_backend})" if llm else "logs "
                                                                                                    "only",
            "llm": llm is not None, "prompt_version": J.PROMPT_VERSION, "counts": counts,
            "agreement": J.agreement_table(per) if llm else None, "usage": usage if llm else None,
            "llm_only": {"atoms": list(J.LLM_ONLY), "labelled": llm is not None,
                         "agreement_on_decidable": J.agreement_table(per)["pooled"] if llm else None},
            "rules": J.RULES,
            "per_match": rows}


def main(args: argparse.Namespace, opts: RunOptions = RunOptions()) -> int:
    import asyncio
    import json
    from pathlib import Path

    from mau.eval.claims_metrics import match_folders

    folders = match_folders(args.runs)
    if args.max_matches:
        folders = folders[: args.max_matches]
    out = Path(args.out or args.runs[0])
    out.mkdir(parents=True, exist_ok=True)
    res = asyncio.run(_run(args, folders, out))
    md = markdown(res)
    (out / JUDGE_MD).write_text(md)
    (out / JUDGE_JSON).write_text(json.dumps({"runs": [str(r) for r in args.runs], **res}, indent=1))
    print(md)
    print(f"judge: {res['matches']} matches -> {out}/{{{JUDGE_MD},{JUDGE_JSON}}}")
    return 0
