"""The docs tell the truth about the code they describe."""

from __future__ import annotations

import re
from pathlib import Path

from mau import schema as F
from mau.docs_config import render


def test_config_reference_is_up_to_date():
    assert Path("docs/config.md").read_text() == render(), "run: python -m mau.docs_config > docs/config.md"


def test_every_event_type_is_documented():
    doc = Path("docs/formats.md").read_text()
    for t in F.EVENT_TYPES:
        assert f"`{t}`" in doc, t


def test_verb_docstrings_open_with_a_command_that_parses():
    from mau.cli import VERBS, build_parser

    for verb, (module, _) in VERBS.items():
        doc = __import__(module, fromlist=["x"]).__doc__
        first = doc.strip().splitlines()[0]
        assert first.startswith(f"mau {verb}"), first
        build_parser(verb).parse_args(first.split()[1:])  # the command parses as written


def test_readme_commands_exist():
    readme = Path("README.md").read_text()
    assert "make demo" in readme and "make test" in readme
    make = Path("Makefile").read_text()
    assert re.search(r"^demo:", make, re.M) and re.search(r"^test:", make, re.M)
    assert "make test" in Path(".ci/run").read_text()


def test_the_code_passes_ruff():
    """``ruff check`` (pyproject's [tool.ruff]) is part of the test run; ruff comes with the dev extra."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "ruff", "check", "."], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]


def test_commands_in_config_headers_parse_and_name_existing_configs():
    """The commands a config's header gives (how its documented figures were made) parse as written, and the
    configs they name exist."""
    import shlex

    from mau.cli import VERBS, build_parser

    seen = 0
    for path in sorted(Path("configs").rglob("*.yaml")):
        header = re.sub(r"\\\n#\s*", " ", path.read_text())  # a command continued on the next comment line
        for line in header.splitlines():
            m = re.match(r"#\s+(mau \S+.*)$", line)
            if not m:
                continue
            words = shlex.split(m.group(1), comments=True)
            assert words[1] in VERBS, f"{path}: {line}"
            args = build_parser(words[1]).parse_args(words[1:])
            if getattr(args, "config", None):
                assert Path(args.config).exists(), f"{path}: {line}"
            seen += 1
    assert seen > 30
