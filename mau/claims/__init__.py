"""Structured claims in meeting speech, and what the world says of them (docs/claims.md): what a match uses.

``grammar``: the eight kinds of claim and their validation (a pydantic grammar), times optional; ``render``:
the fixed templates that put claims into the transcript, and the parser of exactly those sentences;
``paraphrase``: claims said in words, each sentence with its gold claims; ``config``: the ``world.claims``
switch; ``speaker``: the claims a scripted player makes from its own perception (truthful crewmates,
imposters lying per temperament); ``sights``: the reader of ``sights.jsonl``; ``check``: the role-blind
checker (TRUE / FALSE / UNSUPPORTED / UNVERIFIABLE); ``foresee``: the verdicts a claim may get, from a
speaker's own perception. What reads match folders afterwards (extraction from free text, the labelled
corpus, ``mau claims``' numbers, the judge) is in
``mau.claimsread``. The unit imports only mau's base modules."""
