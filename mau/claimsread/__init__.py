"""Claims read after the match (docs/claims.md): what reads match folders once they are written, beside
``mau.claims`` (what a match uses).

``extract``: free text read as claims (the phrasing reader ``spot``, or a model through a completion function
its caller passes in) and the F1 of a reader on labelled utterances; ``corpus``: the labelled corpus drawn
from scripted claims; ``data/``: the labelled files (the corpus, its sources, the hand-written sets);
``freetext``: a run's free text read as claims, the reader's F1 first (the gate); ``metrics`` and ``report``:
``mau claims``' numbers and report; ``judge`` and ``judge_report``: the paper's 23 deception atoms (``mau
judge``); ``config``: the configs of ``mau claims`` and ``mau judge``."""
