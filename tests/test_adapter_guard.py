"""The adapter guard of ``mau eval`` (mau.eval.guard): an adapter arm that answers the fixed recorded prompts
at temperature 0 exactly as the baseline stops the eval with one line before any match is played (an OpenAI-
compatible server that ignores the adapter, as vLLM does for a Qwen3.5 adapter without the ``language_model``
segment, vLLM issue 49354; and a zero LoRA adapter on the hf backend); an arm that answers differently passes;
the adapters mau writes carry the ``language_model`` segment vLLM maps."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mau.cli import main
from tests.ml_fixtures import tiny_adapter_dir, tiny_model_dir  # noqa: F401 - the fixtures

REPO = Path(__file__).resolve().parents[1]


def _config(tmp_path: Path, arms: dict, **extra) -> Path:
    cfg = {"arms": arms, "baseline": "baseline", "seeds": [1],
           "imposters": {"scripted-i1": {"backend": "scripted", "model": "scripted-i1", "seed": 5000}},
           "world": {"game": {"max_steps": 2}}, **extra}
    path = tmp_path / "eval.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _served(url: str, model: str) -> dict:
    return {"backend": "openai", "base_url": url, "model": model, "temperature": 0.7, "max_tokens": 64,
            "max_retries": 0}


def test_an_adapter_the_server_ignores_stops_the_eval(tmp_path, capsys):
    from mau.harness.mock_server import mock_server

    # The mock server answers from the prompt alone: the "adapter" model answers exactly as the base.
    with mock_server(str(tmp_path / "mock.log")) as srv:
        cfg = _config(tmp_path, {"baseline": _served(srv.base_url, "Qwen/Qwen3.5-9B"),
                                 "bcwin": _served(srv.base_url, "bcwin")})
        run = tmp_path / "run"
        assert main(["eval", "--config", str(cfg), "--out", str(run), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "arms.bcwin: answered all 4 guard prompts exactly as the baseline" in err[0], err
    assert "issue 49354" in err[0] and "served model 'bcwin'" in err[0]
    assert not (run / "matches").exists()  # nothing played


def test_an_active_adapter_passes_and_is_recorded(tmp_path, capsys):
    import json

    from mau.config import load_config
    from mau.eval.config import EvalConfig
    from mau.eval.guard import adapter_arms, check_adapter_arms
    from mau.harness.mock_server import mock_server

    with mock_server(str(tmp_path / "mock.log"), vary_by_model=True) as srv:  # the model changes the answers
        arms = {"baseline": _served(srv.base_url, "Qwen/Qwen3.5-9B"), "bcwin": _served(srv.base_url, "bcwin"),
                "scripted": {"backend": "scripted", "model": "s"}}
        path = _config(tmp_path, arms)
        cfg = load_config(EvalConfig, path, {})
        assert adapter_arms(cfg) == ["bcwin"]  # the baseline and scripted arms are not checked
        res = check_adapter_arms(cfg)
        assert [r.arm for r in res] == ["bcwin"] and res[0].identical < res[0].prompts == 4
        run = tmp_path / "run"
        assert main(["eval", "--config", str(path), "--out", str(run), "--no-progress"]) == 0
        assert json.loads((run / "adapter_guard.json").read_text())[0]["arm"] == "bcwin"
        # the guard can be switched off (e.g. for an arm that is meant to equal the baseline)
        off = _config(tmp_path, {"baseline": _served(srv.base_url, "a"), "same": _served(srv.base_url, "a2")},
                      adapter_guard=False)
    assert load_config(EvalConfig, off, {}).adapter_guard is False


def test_a_zero_lora_adapter_on_the_hf_backend_is_caught(tmp_path, request):
    pytest.importorskip("torch")
    pytest.importorskip("peft")
    from mau.config import load_config
    from mau.errors import MauError
    from mau.eval.config import EvalConfig
    from mau.eval.guard import check_adapter_arms
    from tests.ml_fixtures import build_tiny_adapter

    model = request.getfixturevalue("tiny_model_dir")
    live = request.getfixturevalue("tiny_adapter_dir")  # random non-zero lora_B: changes the output
    dead = tmp_path / "zero-adapter"
    build_tiny_adapter(model, dead, seed=1, scale=0.0)  # lora_B = 0: the adapter changes nothing

    def arms(adapter: Path) -> dict:
        hf = {"backend": "hf", "model": str(model), "device": "cpu", "max_tokens": 8}
        return {"baseline": hf, "tuned": {**hf, "adapter": str(adapter)}}

    res = check_adapter_arms(load_config(EvalConfig, _config(tmp_path, arms(live)), {}))
    assert res[0].active
    with pytest.raises(MauError, match=r"arms.tuned: answered all 4 guard prompts exactly as the baseline .*"
                                       r"adapter .*zero-adapter"):
        check_adapter_arms(load_config(EvalConfig, _config(tmp_path, arms(dead)), {}))


def test_saved_adapters_name_the_language_model(request):
    """vLLM maps a Qwen3.5 adapter's weights only under ``language_model`` (issue 49354): every saved key of a
    PEFT adapter on the VLM carries it (the 9B shape's `mau train` adapter: tests/test_train_9b.py)."""
    pytest.importorskip("peft")
    from safetensors import safe_open

    adapter = request.getfixturevalue("tiny_adapter_dir")
    keys = list(safe_open(str(adapter / "adapter_model.safetensors"), "pt").keys())
    assert keys and all(k.startswith("base_model.model.model.language_model.layers.") for k in keys), keys[:3]


def test_the_production_eval_config_serves_the_baseline_without_lora_and_with_a_key():
    """configs/eval/qwen3_5_9b.yaml: the baseline (and the 9B imposters) from a server apart from the LoRA
    server (--enable-lora perturbs a hybrid model's base outputs, vLLM issue 49063); every served model reads
    the server's API key through a named variable; the guard checks the three adapter arms."""
    from mau.config import load_config
    from mau.eval.config import EvalConfig
    from mau.eval.guard import adapter_arms

    cfg = load_config(EvalConfig, REPO / "configs" / "eval" / "qwen3_5_9b.yaml", {})
    lora_urls = {cfg.arms[a].base_url for a in adapter_arms(cfg)}
    assert adapter_arms(cfg) == ["bcwin", "bcvote", "bcwin+vote"] and cfg.adapter_guard
    assert (
        cfg.arms["baseline"].base_url not in lora_urls
        and cfg.imposters["qwen35-9b"].base_url not in lora_urls
    )
    assert {m.api_key_env for m in [*cfg.arms.values(), *cfg.imposters.values()]} == {"VLLM_API_KEY"}


def test_a_scripted_baseline_checks_no_arm():
    """The scripted expert answers observations, not prompts: with it as the baseline there is no base model
    to compare with (it used to crash the eval on the guard's first prompt)."""
    from mau.config import load_config
    from mau.eval.config import EvalConfig
    from mau.eval.guard import adapter_arms, check_adapter_arms

    cfg = load_config(EvalConfig, "configs/eval/smoke.yaml",
                      {"arms": {"scripted-b": {"backend": "openai", "base_url": "http://127.0.0.1:9/v1"}}})
    assert cfg.arms[cfg.baseline or next(iter(cfg.arms))].backend == "scripted"
    assert adapter_arms(cfg) == [] and check_adapter_arms(cfg) == []
