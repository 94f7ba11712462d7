"""In-match beliefs: what the crewmates believe while a match is played, written to ``probes.jsonl``.

- ``config.py``: ``ProbeConfig`` (``seats.<side>.aria.probes``) and ``ObserverConfig`` (its ``likelihood``);
- ``probe.py``: the belief probes of the crewmates' models (module ``probe``, their own RNG stream, recorded
  only in probes.jsonl) and the match's probe points;
- ``perceive.py``: what each crewmate perceived, as evidence, from the world and its event log, and the ideal
  observer's beliefs from it (the exact posterior over imposter pairs lives in ``mau.infer``).

Read-only measurements: a probe never changes the match. Not the harness module BELIEF
(``mau.harness.modules.BELIEF``, ``belief``), which is part of play: semantic memory's suspicion update after
a meeting utterance or a surveillance flag. The detection metrics computed from probes.jsonl after the match
live in ``mau.eval.detection`` (docs/evaluation.md, "Detection"); docs/architecture.md has the map.
"""
