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
from mau.harness.candidate_head import (  # noqa: E402
    NAMES_AND_MENTIONS,
    PointerHead,
    candidate_positions,
    head_inputs,
    name_mentions,
)
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


def test_mentions_are_every_earlier_whole_word_use_of_a_name(student):
    tok, _ = load_text_model(str(student))
    context = render(tok, _messages(_prompt("Olivia accused Steve; Michael saw Olivia near Stevens."))) \
        + VOTE_PREFIX
    line = context.rfind("Candidates:")
    offsets = tok(context, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    found = name_mentions(tok, context, NAMES + ["skip"])
    assert found is not None
    # Steve once (not inside "Stevens"), Michael once, Olivia twice, skip never; none in the Candidates line
    assert [len(m) for m in found] == [1, 1, 2, 0]
    for name, ks in zip(NAMES, found):
        for k in ks:
            start, end = offsets[k]
            assert end <= line and context[start:end].strip().endswith(name[-1])
            assert name in context[max(0, end - len(name) - 2):end]
    assert name_mentions(tok, "no such line: Steve", ["Steve"]) is None
    ex = make_example(tok, "k", _messages(_prompt("Olivia accused Steve.")), "Steve")
    assert ex.mentions is not None and [len(m) for m in ex.mentions] == [1, 0, 1, 0]


def test_head_inputs_put_the_mentions_mean_beside_the_name():
    hidden = torch.arange(24, dtype=torch.float32).reshape(6, 4)
    assert torch.equal(head_inputs(hidden, [4, 5], None, "names"), hidden[[4, 5]])
    both = head_inputs(hidden, [4, 5], [[0, 2], []], NAMES_AND_MENTIONS)
    assert both.shape == (2, 8)
    assert torch.equal(both[0], torch.cat([hidden[4], (hidden[0] + hidden[2]) / 2]))
    assert torch.equal(both[1], torch.cat([hidden[5], torch.zeros(4)]))  # nobody named: zeros
    with pytest.raises(ValueError, match="mentions"):
        head_inputs(hidden, [4], None, NAMES_AND_MENTIONS)


@pytest.mark.parametrize("train_last", [1, 2])
def test_upper_hidden_is_the_models_last_hidden_states(student, train_last):
    _, model = load_text_model(str(student))
    split = SplitLM(model.eval(), train_last=train_last)
    ids, pos = [5, 40, 77, 120, 3, 9, 200], [1, 4, 6]
    with torch.inference_mode():
        full = model.model(torch.tensor([ids])).last_hidden_state[0]
        assert torch.allclose(split.upper_hidden(split.lower(ids))[pos], full[pos], atol=1e-5)


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


@pytest.mark.parametrize("reads", ["names", NAMES_AND_MENTIONS])
def test_training_through_the_head_lowers_the_loss(student, reads):
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
        states = [head_inputs(split.upper_hidden(cache.get(e)), e.positions, e.mentions, reads) for e in ex]
    split.head = PointerHead(torch.cat(states).mean(0), torch.cat(states).std(0) + 1e-4, reads=reads)
    params = split.trainable()
    assert any(p is split.head.weight for p in params)  # the head trains with the layers
    first, last = vote_loss_before_and_after(split, cache, ex)
    assert last < first - 0.05


def _pointer_student(student: Path, folder: Path, reads: str = "names") -> PointerHead:
    """A copy of the tiny student with a random head saved beside it."""
    import shutil

    shutil.copytree(student, folder)
    torch.manual_seed(1)
    d = json.loads((folder / "config.json").read_text())["hidden_size"] * (1 if reads == "names" else 2)
    head = PointerHead(torch.zeros(d), torch.ones(d), torch.randn(d), torch.randn(d), torch.tensor([0.3]),
                       reads)
    head.save(folder)
    loaded = PointerHead.load(folder)
    assert loaded.reads == reads and torch.equal(loaded.weight, head.weight)
    return loaded


def test_a_head_saved_without_reads_reads_the_names(tmp_path):
    from safetensors.torch import save_file

    from mau.harness.candidate_head import HEAD_FILE

    save_file({k: torch.zeros(4) for k in ["mean", "scale", "weight", "skip_weight"]} |
              {"skip_bias": torch.zeros(1)}, str(tmp_path / HEAD_FILE))
    assert PointerHead.load(tmp_path).reads == "names"
    with pytest.raises(ValueError, match="reads"):
        PointerHead(torch.zeros(4), torch.ones(4), reads="everything")


@pytest.mark.parametrize("reads", ["names", NAMES_AND_MENTIONS])
def test_lm_backend_votes_and_probes_through_a_saved_head(student, tmp_path, reads):
    folder = tmp_path / "pointer"
    head = _pointer_student(student, folder, reads)
    text = _prompt("Michael accused Olivia; Olivia saw Steve.")
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
        mentions = name_mentions(tok, context, NAMES + ["skip"])
        want = head.scores(head_inputs(states[0], pos, mentions, reads), NAMES + ["skip"])
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
