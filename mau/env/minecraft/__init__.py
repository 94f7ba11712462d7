"""The Python side of the ``minecraft`` world backend: the map in blocks (``blocks``), the Node host process
(``host``). The backend itself is ``mau.env.backends.minecraft``; the Node side is the repo's
``minecraft/``."""
