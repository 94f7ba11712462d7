"""Structured claims in meeting speech, and what the world says of them (docs/claims.md).

``grammar``: the eight kinds of claim and their validation (a pydantic grammar); ``render``: the fixed
templates that put claims into the transcript, and the parser of exactly those sentences; ``config``: the
``world.claims`` switch; ``speaker``: the claims a scripted player makes from its own perception (truthful
crewmates, imposters lying per temperament); ``sights``: the reader of ``sights.jsonl``; ``check``: the
role-blind checker (TRUE / FALSE / UNSUPPORTED / UNVERIFIABLE); ``extract``: claims from free text (an LLM in
JSON mode, or the template parser and word spotting); ``metrics`` and ``report``: claim accuracy, lie rates and
liar votes with intervals; ``judge``: the paper's 23 deception atoms. The unit imports only mau's base
modules; a model is reached through a completion function its caller passes in."""
