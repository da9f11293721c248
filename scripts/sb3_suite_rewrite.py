"""Import rewriting and failure-reason grouping for scripts/sb3_suite.py (kept apart so tests import it cheaply)."""

from __future__ import annotations

import ast
import importlib
import re

# The one table: every name lit_rl provides in place of SB3's / sb3-contrib's, and where lit_rl has it
# (candidates in order; the first module that exports the name wins, else the first is used and the
# import error shows up in the report). Everything else (make_vec_env, VecEnvs, envs, evaluate_policy,
# common utils) stays SB3's.
LIT_RL_NAMES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(["SAC", "TD3", "DDPG", "DQN", "CrossQ", "TQC"], ("lit_rl",)),
    "HerReplayBuffer": ("lit_rl.buffers", "lit_rl"),
    **dict.fromkeys(["ReplayBuffer", "DictReplayBuffer", "NStepReplayBuffer"], ("lit_rl.buffers",)),
    **dict.fromkeys(
        ["BaseFeaturesExtractor", "FlattenExtractor", "CombinedExtractor", "NatureCNN"], ("lit_rl.nets.extractors",)
    ),
    "GoalSelectionStrategy": ("lit_rl.buffers", "lit_rl.buffers.her", "lit_rl"),
    **dict.fromkeys(
        ["ActionNoise", "NormalActionNoise", "OrnsteinUhlenbeckActionNoise", "VectorizedActionNoise"],
        ("lit_rl.noise", "lit_rl.collect.noise"),
    ),
    # The SB3-style callbacks' documented home (lit_rl.callbacks also exports Lightning callbacks).
    **dict.fromkeys(
        [
            "BaseCallback",
            "CallbackList",
            "CheckpointCallback",
            "ConvertCallback",
            "EvalCallback",
            "EventCallback",
            "EveryNTimesteps",
            "LogEveryNTimesteps",
            "StopTrainingOnMaxEpisodes",
            "StopTrainingOnNoModelImprovement",
            "StopTrainingOnRewardThreshold",
        ],
        ("lit_rl.callbacks.sb3",),
    ),
}
SOURCE_PACKAGES = ("stable_baselines3", "sb3_contrib")


def resolve_targets(table: dict[str, tuple[str, ...]] = LIT_RL_NAMES) -> tuple[dict[str, str], list[str]]:
    """(name -> the lit_rl module to import it from, the names no candidate module exports yet).

    A name is taken from the first candidate that exports it; a missing name keeps its first candidate, so the
    rewritten import fails as a user's would."""
    resolved, missing = {}, []
    for name, candidates in table.items():
        found = [m for m in candidates if _exports(m, name)]
        resolved[name] = (found or candidates)[0]
        if not found:
            missing.append(name)
    return resolved, sorted(missing)


def _exports(module: str, name: str) -> bool:
    try:
        return hasattr(importlib.import_module(module), name)
    except ImportError:
        return False


def _is_source(module: str | None) -> bool:
    return module is not None and module.split(".")[0] in SOURCE_PACKAGES


def rewrite_imports(source: str, targets: dict[str, str]) -> tuple[str, list[str]]:
    """Move `from stable_baselines3... import X` of the names in `targets` to lit_rl; return (source, moved names)."""
    lines = source.splitlines(keepends=True)
    moved: list[str] = []
    nodes = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ImportFrom) and _is_source(n.module)]
    for node in sorted(nodes, key=lambda n: n.lineno, reverse=True):
        keep = [a for a in node.names if a.name not in targets]
        move = [a for a in node.names if a.name in targets]
        if not move:
            continue
        indent = " " * node.col_offset
        statements = []
        if keep:
            statements.append(f"from {node.module} import {_aliases(keep)}")
        by_module: dict[str, list[ast.alias]] = {}
        for alias in move:
            by_module.setdefault(targets[alias.name], []).append(alias)
        statements += [f"from {module} import {_aliases(aliases)}" for module, aliases in by_module.items()]
        moved += [a.name for a in move]
        lines[node.lineno - 1 : node.end_lineno] = [f"{indent}{s}\n" for s in statements]
    return "".join(lines), sorted(set(moved))


def _aliases(aliases: list[ast.alias]) -> str:
    return ", ".join(a.name if a.asname is None else f"{a.name} as {a.asname}" for a in aliases)


# Failure messages differ by addresses, paths, numbers and quoted values; these make one reason of many.
_NORMALISE = [
    (re.compile(r"0x[0-9a-fA-F]+"), "0x…"),
    (re.compile(r"(/[\w.\-]+){2,}/?"), "<path>"),
    (re.compile(r"(?<![\w.])-?\d+(\.\d+)?(e-?\d+)?(?![\w])"), "N"),
    # one cause, one reason for every algorithm: 'TD3Policy' / 'SACPolicy', "SAC does not ..." / "TD3 does not ..."
    (re.compile(r"(?<![A-Z])(SAC|TD3|DDPG|DQN|CrossQ)"), "<algo>"),
]


def normalise_reason(message: str, source: str = "", limit: int = 160) -> str:
    """The first line of an exception message with addresses, paths and numbers replaced, cut to `limit`;
    with the failing assertion's `source` line appended (the message then cut to 80: the line tells the cause)."""
    line = (message or "").strip().splitlines()[0] if (message or "").strip() else "(no message)"
    for pattern, replacement in _NORMALISE:
        line = pattern.sub(replacement, line)
    if source:
        line, limit = f"{_cut(line, 80)} ({source})", limit + 80
    return _cut(line, limit)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def group_reasons(failures: dict[str, str | tuple[str, str]]) -> list[tuple[str, int, list[str]]]:
    """{test id: message or (message, failing source line)} -> [(reason, count, test ids)], most frequent first."""
    groups: dict[str, list[str]] = {}
    for test_id, failure in failures.items():
        message, source = (failure, "") if isinstance(failure, str) else failure
        groups.setdefault(normalise_reason(message, source), []).append(test_id)
    return [(reason, len(ids), sorted(ids)) for reason, ids in sorted(groups.items(), key=lambda g: (-len(g[1]), g[0]))]
