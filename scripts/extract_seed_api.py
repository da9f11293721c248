"""Extract the seed classes' documented API into ``tests/api/seed_api.json``.

The seed documents (``../shared/seeds/``, not present in a CI clone) describe
``lit_sb3``, lit_rl's predecessor; every public name in them is a promise to
users. This script reads the API references (000: ``OffPolicyAlgorithm``,
004: ``CrossQ``, ``CrossQPolicy``, ``Actor``, ``CrossQCritic``) and writes, per
class, its constructor parameters (name, annotation and default as text), the
names its "Parameters" list documents without the signature having them, its
attributes, and its public methods with their parameters. The source listing
(002) is parsed too and must agree with 000 on ``OffPolicyAlgorithm``'s
signatures, so a misread reference fails here instead of in the tests.

    python scripts/extract_seed_api.py [--seeds DIR] [--out FILE]

``tests/api/test_seed_api.py`` reads the committed JSON (the record of the promise).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SEEDS = ROOT.parent / "shared" / "seeds"
DEFAULT_OUT = ROOT / "tests" / "api" / "seed_api.json"
# Which document holds which classes' API reference; the source listing cross-checks OffPolicyAlgorithm.
REFERENCES = {"000_": ["OffPolicyAlgorithm"], "004_": ["CrossQ", "CrossQPolicy", "Actor", "CrossQCritic"]}
SOURCE_LISTING = "002_"

HEADER = re.compile(r"^source (class|method) ([\w.]+)\((.*)\)(?: → (.+))?$")
BULLET = re.compile(r"^\s*• (\w+)(?: : (.+?))? — ")
SECTIONS = ("Parameters", "Attributes", "Methods", "Returns", "Raises", "Classes")


def parse_parameters(signature: str) -> list[dict]:
    """``"a: int = 1, b"`` -> ``[{"name", "annotation", "default", "kind"}]`` (texts as in the document; no self)."""
    func = ast.parse(f"def f({signature}): pass").body[0]
    args = func.args
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    params = [(a, d, "positional_or_keyword") for a, d in zip(positional, defaults, strict=True)]
    params += [(a, d, "keyword_only") for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)]
    if args.vararg or args.kwarg:
        raise ValueError(f"unexpected *args/**kwargs in documented signature ({signature})")
    return [
        {
            "name": a.arg,
            "annotation": ast.unparse(a.annotation) if a.annotation is not None else None,
            "default": ast.unparse(d) if d is not None else None,
            "kind": kind,
        }
        for a, d, kind in params
        if a.arg != "self"
    ]


def read_reference(text: str, names: list[str]) -> dict[str, dict]:
    """The classes ``names`` of one API-reference document."""
    classes: dict[str, dict] = {}
    current: dict | None = None  # the class or method whose sections are being read
    section = None
    for line in text.splitlines():
        header = HEADER.match(line.strip())
        if header:
            kind, qualname, signature, returns = header.groups()
            if kind == "class":
                current = {"parameters": parse_parameters(signature), "documented": [], "attributes": [], "methods": {}}
                classes[qualname] = current
                owner = current
            else:
                owner_name, _, method = qualname.rpartition(".")
                current = {"parameters": parse_parameters(signature), "returns": returns}
                classes[owner_name]["methods"][method] = current
            section = None
            continue
        stripped = line.strip()
        if stripped in SECTIONS:
            section = stripped
            continue
        bullet = BULLET.match(line)
        if bullet and current is not None and "documented" in current:
            owner = current
            if section == "Parameters":
                owner["documented"].append(bullet.group(1))
            elif section == "Attributes":
                owner["attributes"].append({"name": bullet.group(1), "annotation": bullet.group(2)})
    missing = set(names) - set(classes)
    if missing:
        raise ValueError(f"classes {sorted(missing)} not found in the reference document")
    return {name: classes[name] for name in names}


def read_source_listing(text: str, class_name: str) -> dict[str, list[dict]]:
    """Signatures of ``class_name``'s ``__init__`` and public methods in the source listing (002)."""
    # The listing is Python with the doc site's "[docs]" markers and a two-line title before the module docstring.
    lines = [line for line in text.splitlines() if line.strip() != "[docs]"]
    start = next(i for i, line in enumerate(lines) if line.startswith('"""'))
    tree = ast.parse("\n".join(lines[start:]))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name)
    signatures = {}
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and (node.name == "__init__" or not node.name.startswith("_")):
            node.args.args = [a for a in node.args.args if a.arg != "self"]
            signatures[node.name] = parse_parameters(ast.unparse(node.args))
    return signatures


def normalise(params: list[dict]) -> list[tuple]:
    # The reference renders ``1_000_000`` as ``1000000`` and quotes with '...'; compare values, not spellings.
    def value(text):
        try:
            return ast.literal_eval(text) if text is not None else None
        except ValueError:
            return text

    return [(p["name"], value(p["default"])) for p in params]


def extract(seeds: Path) -> dict:
    """The seed API of every class in :data:`REFERENCES`, cross-checked against the source listing."""
    files = {prefix: next(seeds.glob(f"{prefix}*.txt")) for prefix in [*REFERENCES, SOURCE_LISTING]}
    api: dict[str, dict] = {}
    for prefix, names in REFERENCES.items():
        api.update(read_reference(files[prefix].read_text(encoding="utf-8"), names))
    listing = read_source_listing(files[SOURCE_LISTING].read_text(encoding="utf-8"), "OffPolicyAlgorithm")
    reference = api["OffPolicyAlgorithm"]
    documented = {"__init__": reference["parameters"], **{m: v["parameters"] for m, v in reference["methods"].items()}}
    for name, params in documented.items():
        if name not in listing or normalise(listing[name]) != normalise(params):
            raise ValueError(f"OffPolicyAlgorithm.{name}: the API reference and the source listing disagree")
    for entry in api.values():
        signature = {p["name"] for p in entry["parameters"]}
        entry["documented_only"] = [n for n in dict.fromkeys(entry.pop("documented")) if n not in signature]
        entry["methods"] = {m: v for m, v in entry["methods"].items() if not m.startswith("_")}
    return {
        "source": {prefix.rstrip("_"): path.name for prefix, path in files.items()},
        "note": "Generated by scripts/extract_seed_api.py from the lit_sb3 seed documents; defaults are source text.",
        "classes": api,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=Path, default=DEFAULT_SEEDS, help="folder of the seed documents")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON file to write")
    args = parser.parse_args()
    if not args.seeds.is_dir():
        raise SystemExit(f"--seeds={str(args.seeds)!r} is not a folder; allowed: the folder holding 000_*.txt ...")
    api = extract(args.seeds)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(api, indent=1) + "\n", encoding="utf-8")
    counts = {name: (len(c["parameters"]), len(c["methods"])) for name, c in api["classes"].items()}
    print(f"wrote {args.out}: (constructor parameters, public methods) per class {counts}")


if __name__ == "__main__":
    main()
