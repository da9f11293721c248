"""The folders say the architecture: a launcher wing, the algorithm core, one file per algorithm, a helpers' floor;
imports point one way (the design's arrows) and form no circle; old module paths still resolve."""

from __future__ import annotations

import ast
import importlib
import inspect
import warnings
from pathlib import Path

import pytest

import lit_rl
from lit_rl.utils.moved import MOVED

PACKAGE = Path(lit_rl.__file__).parent
# Layers from the top; a module may import its own layer's modules and any layer below, never one above.
# (policies, collect, buffers, data, callbacks) share a layer, as do (nets, envs): the design's parentheses.
LAYERS = [
    {"launcher", "train", "evaluate", "tune", "plot", "sweep_summary"},
    {"algorithms"},
    {"core"},
    {"policies", "collect", "buffers", "data", "callbacks", "noise"},
    {"nets", "envs"},
    {"utils"},
]
ALGORITHMS = {"crossq", "sac", "td3", "ddpg", "dqn", "tqc"}


def layer(module: str) -> int:
    """The layer index of ``lit_rl.<part>...`` (the package face ``lit_rl`` itself sits on top)."""
    parts = module.split(".")
    if len(parts) == 1:
        return -1
    return next(i for i, names in enumerate(LAYERS) if parts[1] in names)


def module_files() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports_of(module: str, path: Path, runtime_only: bool = True) -> set[str]:
    """The lit_rl modules ``module`` imports (at run time: ``if TYPE_CHECKING`` blocks left out)."""
    tree = ast.parse(path.read_text())
    skipped = set()
    if runtime_only:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                skipped |= {id(n) for n in ast.walk(node)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    modules = module_files()
    return {name for name in found if name in modules and name != module}


def test_the_top_level_holds_at_most_six_modules_the_entrypoint_aliases_and_the_noise_path():
    top = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__")
    assert top == ["evaluate", "noise", "plot", "sweep_summary", "train", "tune"]
    for name in ("train", "evaluate", "tune", "plot", "sweep_summary"):  # thin aliases of the launcher's modules
        assert len((PACKAGE / f"{name}.py").read_text().splitlines()) <= 10


def test_the_algorithms_folder_holds_one_file_per_algorithm():
    assert {p.stem for p in (PACKAGE / "algorithms").glob("*.py")} == ALGORITHMS | {"__init__"}


def test_imports_point_down_the_layers_and_no_algorithm_imports_another():
    against = []
    for module, path in module_files().items():
        if module == "lit_rl" or module.startswith("lit_rl.utils.moved"):
            continue
        for imported in imports_of(module, path):
            if imported.split(".")[1] == module.split(".")[1]:
                continue  # within one package
            if layer(imported) < layer(module):
                against.append(f"{module} -> {imported}")
        if module.startswith("lit_rl.algorithms.") and module.split(".")[-1] in ALGORITHMS:
            others = {f"lit_rl.algorithms.{a}" for a in ALGORITHMS} - {module}
            against += [f"{module} -> {m} (one algorithm imports another)" for m in imports_of(module, path) & others]
    assert not against, "imports against the design's direction:\n" + "\n".join(sorted(against))


def test_no_import_circle():
    modules = module_files()
    faces = {m for m, p in modules.items() if p.name == "__init__.py"}  # package faces re-export
    graph = {m: imports_of(m, p) - faces for m, p in modules.items() if m not in faces}
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in graph.get(node, ()):
            if state.get(nxt) == 1:
                pytest.fail("import circle: " + " -> ".join(trail[trail.index(nxt):] + [node, nxt]))
            if nxt not in state:
                visit(nxt, [*trail, node])
        state[node] = 2

    for node in graph:
        if node not in state:
            visit(node, [])


@pytest.mark.parametrize("old", sorted(MOVED))
def test_every_moved_module_path_resolves_its_public_names_with_a_warning(old):
    targets = [importlib.import_module(t) for t in MOVED[old]]
    names = [n for t in targets for n in dir(t) if not n.startswith("_") and not inspect.ismodule(getattr(t, n))]
    proxy = importlib.import_module(old)
    for name in names:
        with pytest.warns(DeprecationWarning, match=f"{old}.{name} moved to"):
            assert getattr(proxy, name) is next(getattr(t, name) for t in targets if hasattr(t, name))


def test_an_old_launcher_script_runs_under_its_old_imports():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(DeprecationWarning, match=r"lit_rl\.core\.off_policy"):
            from lit_rl.algorithms.off_policy import OffPolicyAlgorithm  # noqa: F401
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from lit_rl.algorithms.persistence import load_algorithm
        from lit_rl.trainer import make_trainer
    from lit_rl.core.persistence import load_algorithm as new_load
    from lit_rl.core.trainer import make_trainer as new_make

    assert load_algorithm is new_load and make_trainer is new_make
