"""MkDocs hooks: the documentation's generated tables, computed from ``conf/`` and the typed schemas at build time.

A page asks for a table with an HTML comment on a line of its own:

- ``<!-- generated: config-groups -->``: every group of ``conf/`` with its options and each file's first comment;
- ``<!-- generated: schema env -->`` (``env``, ``buffer``, ``nstep``, ``her``, ``trainer``, ``eval``, ``root``): the
  keys of one config schema with type, default and the comment beside the field;
- ``<!-- generated: algo crossq -->``: an algorithm's launcher keys (``algo.*``), generated from its constructor's
  signature, and its ``policy_kwargs`` keys from its policy's signature.

Nothing here is written by hand twice: a new option file, field or argument appears in the docs on the next build.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import typing
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"
MARKER = re.compile(r"^<!-- generated: ([\w-]+)(?: ([\w/.-]+))? -->$", re.M)
# Group folders of conf/ in the order a user meets them; anything else found there is appended.
GROUP_ORDER = ["algo", "env", "buffer", "trainer", "logger", "net", "experiment", "experiment/budget",
               "hparams_search", "hydra/launcher"]  # fmt: skip
HOW_TO_SELECT = {"net": "+net=", "hydra/launcher": "hydra/launcher="}


def first_comment(path: Path) -> str:
    """The first comment of a YAML file (its purpose), joined over its lines, without ``@package`` or ``Usage:``."""
    lines: list[str] = []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            if lines:
                break
            continue
        text = line.lstrip("#").strip()
        if text.startswith("@package"):
            continue
        if text.startswith("Usage:") or " Usage: " in text:
            text = text.split("Usage:")[0].strip()
            if text:
                lines.append(text)
            break
        lines.append(text)
    return " ".join(lines)


def cell(text: str) -> str:
    """Markdown-table-safe text."""
    return text.replace("|", "\\|").replace("\n", " ")


def config_groups() -> str:
    """A table of every config group in ``conf/``: option, how to select it, and what it is."""
    found = sorted({str(p.parent.relative_to(CONF)) for p in CONF.rglob("*.yaml") if p.parent != CONF})
    groups = [g for g in GROUP_ORDER if g in found] + [g for g in found if g not in GROUP_ORDER]
    rows = ["| group | option | what it is |", "|---|---|---|"]
    for group in groups:
        for path in sorted((CONF / group).glob("*.yaml")):
            select = HOW_TO_SELECT.get(group, f"{group}=")
            if group.startswith("experiment/"):
                select = f"experiment={group.split('/', 1)[1]}/"
            rows.append(f"| `{group}` | `{select}{path.stem}` | {cell(first_comment(path))} |")
    return "\n".join(rows)


def field_comments(cls: type) -> dict[str, str]:
    """``{field: comment}`` from the class source: the ``# ...`` after ``name: type = default``."""
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return {}
    comments = {}
    for match in re.finditer(r"^\s+(\w+): [^\n#]+#\s*(.+)$", source, re.M):
        if not match.group(2).startswith(("type:", "fmt:", "noqa")):
            comments[match.group(1)] = match.group(2).strip()
    return comments


def type_name(annotation: Any) -> str:
    """A readable type: ``int``, ``str | None``, ``list[int]``, ``Any``."""
    if isinstance(annotation, type) and not typing.get_args(annotation):
        return annotation.__name__.split("(")[0]
    text = str(annotation).replace("typing.", "")
    return re.sub(r"<class '([\w.]+)'>", lambda m: m.group(1).rsplit(".", 1)[-1], text)


def default_of(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
        return dataclasses.asdict(value) if dataclasses.is_dataclass(value) else value
    return "(required)"


def show(value: Any) -> str:
    if value == "???":
        return "(required)"
    return f"`{value!r}`" if not isinstance(value, str) or value != "(required)" else value


def schema_rows(cls: type, prefix: str, skip: tuple[str, ...] = ()) -> list[str]:
    comments = field_comments(cls)
    hints = typing.get_type_hints(cls) if not cls.__name__.endswith("Config") or cls.__module__ else {}
    rows = []
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name in skip or f.name == "_target_":
            continue
        annotation = hints.get(f.name, f.type)
        rows.append(f"| `{prefix}{f.name}` | {cell(type_name(annotation))} | {cell(show(default_of(f)))} | "
                    f"{cell(comments.get(f.name, ''))} |")  # fmt: skip
    return rows


def schema(name: str) -> str:
    """The keys of one config schema (``lit_rl/launcher/config.py``) with type, default and comment."""
    from lit_rl.launcher import config

    classes = {
        "env": (config.EnvConfig, "env."),
        "buffer": (config.BufferConfig, "buffer."),
        "nstep": (config.NStepBufferConfig, "buffer."),
        "her": (config.HerBufferConfig, "buffer."),
        "trainer": (config.TrainerConfig, "trainer."),
        "eval": (config.EvalConfig, "eval."),
        "root": (config.TrainConfig, ""),
    }
    if name not in classes:
        raise ValueError(f"generated: schema {name!r} is unknown; allowed: {', '.join(classes)}")
    cls, prefix = classes[name]
    skip = ("algo", "env", "buffer", "trainer", "logger", "eval") if name == "root" else ()
    rows = ["| key | type | default | what it is |", "|---|---|---|---|", *schema_rows(cls, prefix, skip)]
    if name == "env":
        rows += schema_rows(config.NormalizeConfig, "env.normalize_kwargs.")
    return "\n".join(rows)


def algo(name: str) -> str:
    """An algorithm's launcher keys from its generated schema: ``algo.<key>`` and ``algo.policy_kwargs.<key>``."""
    from lit_rl.launcher import config

    if name not in config.ALGORITHMS:
        raise ValueError(f"generated: algo {name!r} is unknown; allowed: {', '.join(config.ALGORITHMS)}")
    algo_class = config.ALGORITHMS[name]
    schema_class = config.algo_schema(algo_class)
    policy_class = config.policy_schema(algo_class)
    signature = inspect.signature(algo_class)
    rows = ["| launcher key | Python argument type | default |", "|---|---|---|"]
    for f in dataclasses.fields(schema_class):
        if f.name in ("_target_", "steps_per_batch", "policy_kwargs"):
            continue
        parameter = signature.parameters.get(f.name)
        annotation = parameter.annotation if parameter is not None else f.type
        rows.append(f"| `algo.{f.name}` | {cell(str(annotation))} | {cell(show(default_of(f)))} |")
    for f in dataclasses.fields(policy_class):
        value = default_of(f)
        if f.name == "net":
            value = "the standard networks (see Network options)"
            rows.append(f"| `algo.policy_kwargs.net` | network options | {value} |")
            continue
        rows.append(f"| `algo.policy_kwargs.{f.name}` | {cell(type_name(f.type))} | {cell(show(value))} |")
    return "\n".join(rows)


def expand(match: re.Match[str]) -> str:
    kind, argument = match.group(1), match.group(2)
    if kind == "config-groups":
        return config_groups()
    if kind == "schema" and argument:
        return schema(argument)
    if kind == "algo" and argument:
        return algo(argument)
    raise ValueError(f"unknown generated block {match.group(0)!r}; allowed: config-groups, schema <name>, algo <name>")


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """MkDocs hook: replace each ``<!-- generated: ... -->`` line with its table."""
    return MARKER.sub(expand, markdown)


# The docstrings cross-reference with Sphinx roles (``:class:`~lit_rl.policies.SACPolicy```), which mkdocstrings
# renders as the literal role before the code: show the code alone (``~`` keeps the last dotted component).
SPHINX_ROLE = re.compile(r":(?:class|meth|func|mod|attr|obj|exc|data|ref|py:\w+):<code>(~?)([^<]+)</code>")


def drop_sphinx_roles(html: str) -> str:
    """``:class:<code>~a.b.C</code>`` -> ``<code>C</code>``; ``:mod:<code>a.b</code>`` -> ``<code>a.b</code>``."""
    return SPHINX_ROLE.sub(lambda m: f"<code>{m.group(2).rsplit('.', 1)[-1] if m.group(1) else m.group(2)}</code>", html)


def on_page_content(html: str, **kwargs: Any) -> str:
    """MkDocs hook: the rendered page without Sphinx role markers."""
    return drop_sphinx_roles(html)
