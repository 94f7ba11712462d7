"""The embedded default backend: the pure-Python sim (``mau.env.sim``)."""

from mau.env.sim import SimWorld as World

__all__ = ["World"]
