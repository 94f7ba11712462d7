"""Belief probes, the ideal observer and detection metrics (docs/evaluation.md, "Detection").

Read-only measurements of what a crewmate believes (module ``probe``, written to probes.jsonl only); not the
harness module BELIEF (``mau.harness.modules.BELIEF``, ``belief``), which is part of play: semantic memory's
suspicion update after a meeting utterance or a surveillance flag."""
