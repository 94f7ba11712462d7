"""Helpers importable by tests (conftest holds the fixtures)."""

from tests.conftest import events_of, make_world, park_everyone, place, roles  # noqa: F401
