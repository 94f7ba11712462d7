"""What each crewmate perceived, as ideal-observer evidence: its own observations, taken in as it got them.

Each crewmate has an ``EvidenceLog`` (``mau.infer.evidence``) fed with the observation of its own state mode
(``aria.state``: privileged or ego) at every decision point, and with the kills its frames showed (the
engine's view rules decide who saw a kill: ``PlayerState.witnessed``). It is the evidence of the scripted
teacher and of ARIA's evidence memory, built the same way, so the ideal observer is that reasoning with
perfect attention. It never reads the event log's hidden parts nor prompt text.
"""

from __future__ import annotations

from typing import Any

from mau.infer.evidence import EvidenceLog


class Perception:
    """Per crewmate, the evidence it has. ``update()`` at every decision point (roam steps, meeting turns)."""

    def __init__(self, world, modes: dict[str, str]):
        self.world = world
        st = world.state
        self.crew = [p.name for p in st.players if not p.is_imposter]
        self.roster = [p.name for p in st.players]
        self.modes = modes  # crewmate -> its state mode
        self.logs = {n: EvidenceLog(n, self.roster) for n in self.crew}
        self._at: tuple[int, int, int] | None = None  # (tick, meeting turn marker, events) last taken in

    def update(self) -> None:
        """Take in each living crewmate's observation now (once per moment) and the kills it saw."""
        st = self.world.state
        m = st.meeting
        at = (st.tick, len(m.transcript) if m is not None else -1, len(st.events))
        if at == self._at:
            return
        self._at = at
        for name in self.crew:
            p = st.player(name)
            if not p.active:
                continue
            log = self.logs[name]
            log.observe(self.world.observe(name, self.modes.get(name, "privileged")))
            for w in p.witnessed:
                log.saw_kill(w["killer"], w["victim"], w["room"], w["tick"])

    def items(self, name: str) -> list[dict[str, Any]]:
        """The evidence of crewmate ``name`` as the likelihood model reads it."""
        log = self.logs.get(name)
        return log.items() if log is not None else []
