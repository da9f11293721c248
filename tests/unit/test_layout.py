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
    {"launcher", "train", "evaluate", "tune", "plot", "sweep_summary", "doctor", "packed"},
    {"algorithms"},
    {"core", "logger"},
    {"policies", "collect", "buffers", "data", "callbacks", "noise", "evaluation"},
    {"nets", "envs"},
    {"utils"},
]
ALGORITHMS = {"crossq", "sac", "td3", "ddpg", "dqn", "qrdqn", "tqc"}


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


def test_the_top_level_holds_only_the_entrypoint_aliases_and_the_sb3_noise_logger_and_evaluation_paths():
    top = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__")
    assert top == ["doctor", "evaluate", "evaluation", "logger", "noise", "plot", "sweep_summary", "train", "tune"]
    for name in ("train", "evaluate", "tune", "plot", "sweep_summary", "doctor"):  # thin aliases of the launcher's modules
        assert len((PACKAGE / f"{name}.py").read_text().splitlines()) <= 10
    for name in ("noise", "logger", "evaluation"):  # SB3's import paths: re-exports of one home module, no own code
        tree = ast.parse((PACKAGE / f"{name}.py").read_text())
        body = [n for n in tree.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
        assert all(isinstance(n, (ast.ImportFrom, ast.Assign)) for n in body), ast.unparse(tree)
        (home,) = {n.module for n in body if isinstance(n, ast.ImportFrom)}
        module = importlib.import_module(f"lit_rl.{name}")
        assert {getattr(module, n).__module__ for n in module.__all__} == {home}


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


# Where the algorithm object's attributes may be assigned: its constructor and its setup (networks, env, run).
SETUP_METHODS = {
    "__init__", "init_algorithm", "set_hyperparameters", "build_networks", "build_networks_for", "setup_for_env",
    "use_env", "configure_run", "on_fit_start", "on_train_start", "configure_optimizers", "lr_schedule",
}  # fmt: skip


def algorithm_classes() -> dict[str, type]:
    """OffPolicyAlgorithm, its mixins and every algorithm built on it, by class name."""
    from lit_rl.algorithms import DDPG, DQN, QRDQN, SAC, TD3, TQC, CrossQ

    classes = {c for cls in (CrossQ, DDPG, DQN, QRDQN, SAC, TD3, TQC) for c in cls.__mro__}
    return {c.__name__: c for c in classes if c.__module__.startswith("lit_rl.")}


def attribute_assignments(path: Path, classes: dict[str, type]) -> list[tuple[str, str, str]]:
    """``(attribute, class.method, file)`` for each ``self.x = ...`` in the methods of ``classes`` in ``path``,
    and each ``model.x = ...`` / ``algo.x = ...`` anywhere in it."""
    found = []
    tree = ast.parse(path.read_text())

    def unpacked(target: ast.expr) -> list[ast.expr]:
        return [t for e in target.elts for t in unpacked(e)] if isinstance(target, (ast.Tuple, ast.List)) else [target]

    def targets(node: ast.AST) -> list[ast.expr]:
        if isinstance(node, ast.Assign):
            return [t for target in node.targets for t in unpacked(target)]
        if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            return [node.target]
        return []

    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name in classes):
        for method in (n for n in cls.body if isinstance(n, ast.FunctionDef)):
            for node in ast.walk(method):
                for t in targets(node):
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                        found.append((t.attr, f"{cls.name}.{method.name}", path.name))
    for node in ast.walk(tree):
        for t in targets(node):
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id in ("model", "algo"):
                found.append((t.attr, f"{t.value.id}.{t.attr} (outside the class)", path.name))
    return found


def test_the_algorithm_has_at_most_three_base_classes_besides_lightning_module():
    import lightning as L

    from lit_rl.core.off_policy import OffPolicyAlgorithm

    bases = [b for b in OffPolicyAlgorithm.__bases__ if b is not L.LightningModule]
    assert len(bases) <= 3, bases


def test_every_attribute_of_the_algorithm_is_assigned_in_one_file_by_its_constructor_or_setup():
    classes = algorithm_classes()
    assignments = [a for folder in ("core", "algorithms", "launcher", "callbacks", "collect")
                   for path in sorted((PACKAGE / folder).rglob("*.py")) for a in attribute_assignments(path, classes)]  # fmt: skip
    assert {a for a, _, _ in assignments} >= {"policy", "observation_space", "clock", "collector", "buffer_setup"}
    def related(a: str, b: str) -> bool:  # one class inherits from the other: the same object's attribute
        ca, cb = classes.get(a.partition(".")[0]), classes.get(b.partition(".")[0])
        return ca is None or cb is None or issubclass(ca, cb) or issubclass(cb, ca)

    twice = sorted({f"{a}: {w1} ({f1}) and {w2} ({f2})" for a, w1, f1 in assignments for b, w2, f2 in assignments
                    if a == b and f1 < f2 and related(w1, w2)})  # fmt: skip
    assert not twice, "attributes assigned in more than one file:\n" + "\n".join(twice)
    outside = [f"{where} sets {a} ({file})" for a, where, file in assignments
               if where.rpartition(".")[2] not in SETUP_METHODS]  # fmt: skip
    assert not outside, "assigned outside the constructor and setup:\n" + "\n".join(outside)
