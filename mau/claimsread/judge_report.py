"""The deception judge's run (``mau judge``): every match labelled by the logs where they decide and, given an
LLM judge (``judge.LLMJudge`` over a completion function the caller passes in), by the model; the
counts, the agreement on the decidable atoms, the usage; and the report's markdown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mau.claimsread import judge as J
from mau.claimsread.config import JudgeConfig
from mau.claimsread.judge import ATOMS, DECIDABLE, LLM_ONLY, PARTIAL, RULES


async def judge_matches(cfg: JudgeConfig, folders: list[Path], llm: Any = None,
                        extracted: dict[Path, dict[int, Any]] | None = None) -> dict[str, Any]:
    """judge.json's body (without its runs): per match the logs' and the LLM's findings, counts, agreement;
    ``extracted``: the claims read from the free speech of free-text matches ({folder: {event index:
    claims}}), judged as if said structured."""
    rows, per = [], []
    usage = {"prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0, "cached": 0, "failed": 0}
    for f in folders:
        m = J.load_match(f, (extracted or {}).get(f))
        det = J.deterministic(m)
        found, u = ([], None) if llm is None else await llm.judge(m)
        if u:
            for k in usage:
                usage[k] += u[k]
        per.append((m, det, found))
        rows.append({"match_id": m.match_id, "path": str(f), "imposters": m.imposters,
                     "logs": J.as_dicts(det), "llm": J.as_dicts(found) if llm else None, "usage": u})
    counts: dict[str, dict[str, int]] = {"logs": {}, "llm": {}}
    for _, det, found in per:
        for src, fs in (("logs", det), ("llm", found)):
            for x in fs:
                counts[src][x.atom] = counts[src].get(x.atom, 0) + 1
    judged_now = sum(1 for r in rows if r["usage"] and r["usage"]["cached"] < 2)
    usage["cost_usd_per_match"] = usage["cost_usd"] / judged_now if judged_now else 0.0
    return {"matches": len(rows), "judge": f"{cfg.judge_model} ({cfg.judge_backend})" if llm else "logs only",
            "llm": llm is not None, "prompt_version": J.PROMPT_VERSION, "counts": counts,
            "agreement": J.agreement_table(per) if llm else None, "usage": usage if llm else None,
            "llm_only": {"atoms": list(J.LLM_ONLY), "labelled": llm is not None,
                         "agreement_on_decidable": J.agreement_table(per)["pooled"] if llm else None},
            "rules": J.RULES,
            "per_match": rows}


def markdown(res: dict) -> str:
    lines = ["# Deception atoms (the paper's letters)", "", f"Matches: {res['matches']}. Judge: "
                                                            f"{res['judge']}. "
             "Findings on imposters only; each atom of the logs counted once per what its rule says "
             "(below).", ""]
    if res.get("extraction"):
        from mau.claimsread.report import caption

        x = res["extraction"]
        lines += [f"The speech of {x['extracted_utterances']} utterances of free-text matches was read as "
                  "claims before their verbal atoms were labelled.", *caption(x)]
    lines += ["| atom | name | family | labelled by | logs | LLM |", "|---|---|---|---|---|---|"]
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
    atoms = ", ".join(LLM_ONLY)
    if not res["llm"]:
        return (f"Atoms {atoms} come from an LLM judge only (no log decides them): not labelled in this "
                f"report "
                "(no --judge-model).")
    g = res["agreement"]["pooled"]
    k = "-" if g["kappa"] is None else f"{g['kappa']:.3f}"
    f1 = "-" if g["f1"] is None else f"{g['f1']:.3f}"
    return (f"Atoms {atoms} come from the LLM judge only: no log checks them. Its only measured quality is "
            f"its agreement with the logs where both label (the decidable atoms, below): kappa {k}, F1 {f1} "
            f"over {g['n']} cells.")
