"""The CPU this process runs on: its model name and instruction-set flags (bf16 units change the fast kernels)."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

BF16_FLAGS = ("amx_bf16", "avx512_bf16")


@functools.cache
def cpu_model_and_flags() -> tuple[str, frozenset[str]]:
    """The CPU's model name and flags, from ``lscpu`` (``/proc/cpuinfo`` where lscpu is missing or says less)."""
    fields: dict[str, str] = {}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        fields = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in out.splitlines())}
    except (OSError, subprocess.SubprocessError):
        pass
    model, flags = fields.get("Model name"), fields.get("Flags", "")
    if not model or not flags:
        try:
            for line in Path("/proc/cpuinfo").read_text().splitlines():
                k, _, v = line.partition(":")
                if k.strip() == "model name":
                    model = model or v.strip()
                elif k.strip() == "flags":
                    flags = flags or v.strip()
        except OSError:
            pass
    return model or "unknown", frozenset(flags.split())
