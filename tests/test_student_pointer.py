"""The pointer read-out of the CPU student (docs/student.md, "A reader at the names"): the names' positions in
the Candidates line, the exact upper states, the head's probe fit, training through the head, the ``lm``
backend reading a saved head, and student-rl refusing a pointer policy."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("gguf")  # the ml + dev extras install it (the student extra)

from mau.harness.backends.base import ModelConfig, ModelRequest  # noqa: E402
from mau.harness.backends.lm import VOTE_PREFIX, Backend, load_text_model  # noqa: E402
from mau.harness.candidate_head import PointerHead, candidate_positions  # noqa: E402
from mau.student.examples import make_example, render  # noqa: E402
from mau.student.pointer import fit_head  # noqa: E402
from mau.student.split import SplitLM  # noqa: E402
from tests.student_fixtures import vote_loss_before_and_after, write_tiny_gguf  # noqa: E402

NAMES = ["Steve", "Michael", "Olivia"]


@pytest.fixture(scope="module")
def student(tmp_path_factory) -> Path:
    from mau.models.smollm import materialise

    d = tmp_path_factory.mktemp("student")
    return materialise(d / "model", write_tiny_gguf(d / "tiny.gguf")).out


def _messages(text: str) -> list[dict]:
    return [{"role": "system", "content": "You are James. Vote."},
            {"role": "user", "content": [{"type": "text", "text": text}]}]


def _prompt(evidence: str) -> str:
    return (f"What you know:\n- {evidence}\nCandidates: {', '.join(NAMES)}, skip.\n"
            'Answer {"vote_target": "<one candidate>"}')


def test_positions_are_the_names_in_the_candidates_line(student):
    tok, _ = load_text_model(str(student))
    context = render(tok, _messages(_prompt("Olivia accused Steve; Michael saw Olivia."))) + VOTE_PREFIX
    pos = candidate_positions(tok, context, NAMES + ["skip"])
    ids = tok(context, add_special_tokens=False)["input_ids"]
    line = context.rfind("Candidates:")
    offsets = tok(context, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    assert pos is not None and pos == sorted(pos) and len(set(pos)) == len(NAMES) + 1
    for name, k in zip(NAMES + ["skip"], pos):
        start, end = offsets[k]
        # the name's own token in the Candidates line, not an earlier mention
        assert start > line and context[start:end].strip().endswith(name)
        assert k < len(ids)
    assert candidate_positions(tok, "no such line: Steve, skip", ["Steve", "skip"]) is None
    assert candidate_positions(tok, "Candidates: Steve, skip.", ["Steve", "Noah"]) is None
    ex = make_example(tok, "k", _messages(_prompt("x")), "Steve")
    assert ex.positions is not None and len(ex.positions) == len(ex.candidates)


@pytest.mark.parametrize("train_last", [1, 2])
def test_upper_states_are_the_models_last_hidden_states(student, train_last):
    _, model = load_text_model(str(student))
    split = SplitLM(model.eval(), train_last=train_last)
    ids, pos = [5, 40, 77, 120, 3, 9, 200], [1, 4, 6]
    with torch.inference_mode():
        full = model.model(torch.tensor([ids])).last_hidden_state[0]
        assert torch.allclose(split.upper_states(split.lower(ids), pos), full[pos], atol=1e-5)


def test_the_probe_fit_ranks_by_the_states():
    """States whose first coordinate marks the target: the fitted head puts the target first, and the same
    head on planted states with the mark moved follows the mark (it reads the states, not the slot)."""
    from mau.student.examples import CandidateExample

    torch.manual_seed(0)
    states, ex = [], []
    for i in range(40):
        s = torch.randn(4, 8)
        t = i % 3
        s[t, 0] += 4.0
        states.append(s)
        ex.append(CandidateExample(str(i), [1], ["a", "b", "c", "skip"], [0, 1, 2, 3], t))
    head = fit_head(states, ex, vote_weight=1.0, belief_weight=0.0, l2=1e-3)
    hits = sum(int(head.scores(s, e.candidates).argmax()) == e.target for s, e in zip(states, ex))
    assert hits >= 36
    moved = torch.zeros(4, 8)
    moved[2, 0] = 6.0
    assert int(head.scores(moved, ex[0].candidates).argmax()) == 2


def test_training_through_the_head_lowers_the_loss(student):
    from mau.student.train import FeatureCache

    torch.manual_seed(0)
    tok, model = load_text_model(str(student))
    split = SplitLM(model, train_last=1)
    split.freeze_lower()
    ex = [make_example(tok, "a", _messages(_prompt("Steve was near the body.")), "Steve"),
          make_example(tok, "b", _messages(_prompt("Olivia was near the body.")), "Olivia")]
    cache = FeatureCache(split)
    cache.fill(split, ex)
    with torch.no_grad():
        states = [split.upper_states(cache.get(e), e.positions) for e in ex]
    split.head = PointerHead(torch.cat(states).mean(0), torch.cat(states).std(0) + 1e-4)
    params = split.trainable()
    assert any(p is split.head.weight for p in params)  # the head trains with the layers
    first, last = vote_loss_before_and_after(split, cache, ex)
    assert last < first - 0.05


def _pointer_student(student: Path, folder: Path) -> PointerHead:
    """A copy of the tiny student with a random head saved beside it."""
    import shutil

    shutil.copytree(student, folder)
    torch.manual_seed(1)
    hidden = json.loads((folder / "config.json").read_text())["hidden_size"]
    head = PointerHead(torch.zeros(hidden), torch.ones(hidden), torch.randn(hidden), torch.randn(hidden),
                       torch.tensor([0.3]))
    head.save(folder)
    return PointerHead.load(folder)


def test_lm_backend_votes_and_probes_through_a_saved_head(student, tmp_path):
    folder = tmp_path / "pointer"
    head = _pointer_student(student, folder)
    text = _prompt("Michael accused Olivia.")
    request = ModelRequest(messages=_messages(text), module="vote", agent="James",
                           context={"obs": {"name": "James", "meeting": {"alive_players": ["James", *NAMES]}},
                                    "match": "m", "seed": 1})
    backend = Backend(ModelConfig(backend="lm", model=str(folder), answer="candidates", temperature=0,
                                  device="cpu"))
    tok, model = load_text_model(str(folder))
    context = render(tok, request.messages) + VOTE_PREFIX
    pos = candidate_positions(tok, context, NAMES + ["skip"])
    with torch.inference_mode():
        ids = torch.tensor([tok(context, add_special_tokens=False)["input_ids"]])
        states = model.model(ids).last_hidden_state
        want = head.scores(states[0, pos], NAMES + ["skip"])
    backend.load()
    calls = []
    forward = backend._model.model.forward
    backend._model.model.forward = lambda *a, **k: calls.append(1) or forward(*a, **k)
    scored = asyncio.run(backend.score(request, VOTE_PREFIX, [f'{c}"' for c in NAMES + ["skip"]]))
    assert torch.allclose(torch.tensor(scored.logprobs), want, atol=1e-4)
    probe = asyncio.run(backend.score(request, VOTE_PREFIX, [f'{c}"' for c in NAMES]))
    # skip's score is its own: the players' do not move, and the probe reads the vote's forward pass
    assert torch.allclose(torch.tensor(probe.logprobs), torch.tensor(scored.logprobs[:3]), atol=1e-5)
    assert len(calls) == 1
    vote = asyncio.run(backend.complete(request))
    assert json.loads(vote.text) == {"vote_target": (NAMES + ["skip"])[int(want.argmax())]}
    bare = ModelRequest(messages=_messages("Vote now."), module="vote", agent="James",
                        context=request.context)
    assert asyncio.run(backend.score(bare, VOTE_PREFIX, ['Steve"'])).error.startswith("lm: a pointer student")


def test_student_rl_refuses_a_pointer_policy(student, tmp_path):
    from mau.errors import MauError
    from mau.student.config import StudentRLConfig
    from mau.student.grpo import train_candidates_rl

    folder = tmp_path / "pointer"
    _pointer_student(student, folder)
    cfg = StudentRLConfig.model_validate({"policy": {"path": str(folder)}, "reward": {
        "meeting_ejects_imposter": 0, "meeting_ejects_crewmate": 0, "crew_win": 0}})
    with pytest.raises(MauError, match="pointer student"):
        train_candidates_rl(cfg, tmp_path / "rl")
