"""Every ```python block of the README and the documentation runs as written.

Each block runs in a fresh interpreter in its own empty folder (files it saves land there). A block preceded by
``<!-- no-run: <reason> -->`` is not run; the reason must say what runs it instead or why it cannot run here.
The public-imports block of the Python API guide is checked name by name in tests/unit/test_import_paths.py and
runs here too.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass

import pytest

from tests.helpers import ROOT

BLOCK = re.compile(r"(?:^<!-- no-run: (?P<reason>[^>]+) -->\n)?^```python\n(?P<code>.*?)^```", re.S | re.M)


@dataclass
class Block:
    page: str
    line: int
    code: str
    skip_reason: str | None

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def documented_blocks() -> list[Block]:
    """The ```python blocks of README.md and docs/**/*.md, with where they start."""
    blocks = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = page.read_text()
        for match in BLOCK.finditer(text):
            line = text.count("\n", 0, match.start("code"))
            blocks.append(Block(str(page.relative_to(ROOT)), line, match.group("code"), match.group("reason")))
    return blocks


BLOCKS = documented_blocks()


def test_the_docs_have_python_blocks_and_skip_few():
    assert len(BLOCKS) >= 10, [b.id for b in BLOCKS]
    skipped = [b for b in BLOCKS if b.skip_reason]
    assert len(skipped) <= 2, f"blocks that do not run: {[(b.id, b.skip_reason) for b in skipped]}"
    assert all(len(b.skip_reason or "") > 20 for b in skipped), "a no-run block says why"


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_documented_python_block_runs(tmp_path, block):
    if block.skip_reason:
        pytest.skip(block.skip_reason)
    script = tmp_path / "block.py"
    script.write_text(block.code)
    env = dict(os.environ, WANDB_MODE="offline", PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning:lit_rl", str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"{block.id}\n{block.code}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
