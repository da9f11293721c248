"""Mixed precision (``precision=``, ``trainer.precision``): bf16 updates land where fp32 ones do, state stays fp32.

Two copies of each algorithm from the same weights take N updates on the same batches from the same torch RNG
state, one in fp32 and one in ``bf16-mixed`` (eager, then compiled as one whole-step graph). bf16 keeps 8 bits
of mantissa, so a matrix product differs from fp32 by ~2^-9 relative; Adam's first steps are close to
``lr * sign(g)`` per element, so an element whose gradient is within that noise of zero steps the other way.
Measured over the N updates of these tiny networks (a network's parameter change as one vector):
| bf16 - fp32 | / | fp32 | is 0.6-8 % (SAC, TQC, DQN, TD3, CrossQ) and up to 11 % (DDPG's actor); a missed
update gives 100 %, a wrong-signed one 200 %. Losses agree to 1 % at the first update, 5 % after N.
"""

from __future__ import annotations

import lightning as L
import numpy as np
import pytest
import torch

from lit_rl import SAC, CrossQ
from lit_rl.core import precision as mixed_precision
from lit_rl.core.compiled import compile_stats
from lit_rl.core.precision import check_precision
from tests.unit.test_compile_equivalence import ALGOS, N_UPDATES, make_algo, make_batch, optimizers

UPDATE_TOL = 0.25  # relative difference of a network's N-update parameter change (measured: <= 0.11)
# Losses and other metrics: at the first update (the same weights) only rounding differs; later ones also see the
# parameters' drift.
METRIC_RTOL = (1e-2, 5e-2)


def run(algo, action_space) -> list[dict[str, torch.Tensor]]:
    metrics = []
    for i in range(N_UPDATES):
        torch.manual_seed(100 + i)
        metrics.append({k: v.detach().clone() for k, v in algo.gradient_step(make_batch(i, action_space)).items()})
    return metrics


def parameter_changes(algo, before: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Each network's change over the run, as one vector (``policy.<network>``)."""
    changes: dict[str, list[torch.Tensor]] = {}
    for key, value in algo.state_dict().items():
        if value.is_floating_point() and "running_" not in key:
            changes.setdefault(key.split(".")[1], []).append((value - before[key]).flatten())
    return {net: torch.cat(parts) for net, parts in changes.items()}


def assert_close_to_fp32(reference, mixed, before, ref_metrics, mixed_metrics) -> None:
    ref_changes, mixed_changes = parameter_changes(reference, before), parameter_changes(mixed, before)
    for net, change in ref_changes.items():
        if change.norm() == 0:
            assert mixed_changes[net].norm() == 0, net
            continue
        rel = ((mixed_changes[net] - change).norm() / change.norm()).item()
        assert rel < UPDATE_TOL, f"{net}: bf16 update differs from fp32 by {rel:.1%}"
    for step, (r, m) in enumerate(zip(ref_metrics, mixed_metrics, strict=True)):
        assert r.keys() == m.keys(), step
        for key in r:
            assert m[key].dtype == torch.float32, key
            rtol = METRIC_RTOL[0] if step == 0 else METRIC_RTOL[1]
            torch.testing.assert_close(m[key], r[key], rtol=rtol, atol=1e-4, msg=lambda s, k=(step, key): f"{k}: {s}")


def assert_fp32_state(algo) -> None:
    """Weights, BatchRenorm statistics, targets and Adam moments stay float32 under mixed precision."""
    for key, value in algo.state_dict().items():
        if value.is_floating_point():
            assert value.dtype == torch.float32, key
    for opt in optimizers(algo):
        for state in opt.state.values():
            for name, value in state.items():
                assert value.dtype == torch.float32, name


@pytest.mark.parametrize(
    "name, compile_updates",
    [(n, False) for n in ALGOS] + [pytest.param(n, True, marks=[pytest.mark.slow] if n == "crossq" else [])
                                   for n in ALGOS if n != "dqn_clipped"],  # fmt: skip
)
def test_a_bf16_update_lands_where_the_fp32_one_does(name, compile_updates):
    cls, kwargs, action_space, graphs = ALGOS[name]
    reference = make_algo(cls, kwargs, action_space, compile_updates=False)
    mixed = make_algo(cls, {**kwargs, "precision": "bf16-mixed"}, action_space, compile_updates=compile_updates)
    before = {k: v.clone() for k, v in reference.state_dict().items()}
    for key, value in mixed.state_dict().items():
        assert torch.equal(value, before[key]), key
    ref_metrics, mixed_metrics = run(reference, action_space), run(mixed, action_space)
    assert_close_to_fp32(reference, mixed, before, ref_metrics, mixed_metrics)
    assert_fp32_state(mixed)
    if compile_updates:  # the autocast is inside the whole-step graph: one graph per flag combination, as in fp32
        assert compile_stats(mixed) == {"functions": graphs, "graphs": graphs, "recompilations": 0}


def test_bf16_changes_the_update_and_16_mixed_scales_its_losses():
    # The precision is in effect (not silently fp32): bf16 differs from fp32 in the last bits; 16-mixed keeps one
    # gradient scale per optimizer, which grows after clean steps and halves after an overflow.
    cls, kwargs, action_space, _ = ALGOS["sac"]
    runs = {}
    for precision in ("32-true", "bf16-mixed", "16-mixed"):
        algo = make_algo(cls, {**kwargs, "precision": precision}, action_space, compile_updates=False)
        run(algo, action_space)
        runs[precision] = algo
    fp32, bf16, fp16 = (runs[p].state_dict() for p in ("32-true", "bf16-mixed", "16-mixed"))
    assert any(not torch.equal(fp32[k], bf16[k]) for k in fp32)
    assert any(not torch.equal(fp32[k], fp16[k]) for k in fp32)
    scales = runs["16-mixed"].loss_scaling.state_dict()
    # GradScaler starts at 2^16 and halves at each overflow (the step skipped), as torch.amp documents; growth
    # comes after 2000 clean steps.
    assert len(scales) == 3 and all(s["scale"] in (2.0**16, 2.0**15, 2.0**14) for s in scales.values()), scales
    assert runs["bf16-mixed"].loss_scaling.state_dict() == {}


@pytest.mark.parametrize("value", ["bf16-true", "64-true", "fp8", True])
def test_a_precision_outside_the_mixed_settings_is_refused(value):
    allowed = r"allowed: \['32-true', 'bf16-mixed', '16-mixed', 'auto'\]"
    with pytest.raises(ValueError, match=rf"precision=.*not allowed; {allowed}"):
        SAC("MlpPolicy", "Pendulum-v1", precision=value)
    assert check_precision("bf16") == "bf16-mixed" and check_precision(32) == "32-true"  # Lightning's spellings


@pytest.mark.parametrize("matrix_units, same_as", [(False, "32-true"), (True, "bf16-mixed")])
def test_auto_updates_as_the_precision_the_hardware_pays_for(monkeypatch, matrix_units, same_as):
    # auto follows torch's probe for bf16 matrix units (AMX tiles, tensor cores): its updates are bitwise those
    # of the precision it stands for. The probe is set both ways, since a CPU host has one answer.
    monkeypatch.setattr(mixed_precision, "bf16_matrix_units", lambda *device: matrix_units)
    cls, kwargs, action_space, _ = ALGOS["sac"]
    states = []
    for precision in ("auto", same_as):
        algo = make_algo(cls, {**kwargs, "precision": precision}, action_space, compile_updates=False)
        run(algo, action_space)
        states.append(algo.state_dict())
    assert states[0].keys() == states[1].keys()
    assert all(torch.equal(states[0][k], states[1][k]) for k in states[0])
    cpu = torch.device("cpu")
    assert mixed_precision.resolve_precision("auto", cpu) == same_as
    assert mixed_precision.resolve_precision("16-mixed", cpu) == "16-mixed"  # a set precision is kept


def test_a_trainer_with_a_precision_plugin_is_refused_with_the_fix():
    model = SAC("MlpPolicy", "Pendulum-v1", policy_kwargs={"net_arch": [8]}, learning_starts=10)
    model.configure_run(50)
    trainer = L.Trainer(precision="bf16-mixed", logger=False, enable_progress_bar=False,
                        enable_checkpointing=False, enable_model_summary=False)  # fmt: skip
    with pytest.raises(ValueError, match=r"Trainer\(precision='bf16-mixed'\).*pass precision='bf16-mixed' to SAC"):
        trainer.fit(model, datamodule=model._learn_datamodule)


@pytest.mark.parametrize("precision", ["bf16-mixed", "16-mixed"])
def test_learn_save_load_and_predict_in_mixed_precision(tmp_path, precision):
    # Actions leave the policy as float32; the precision is a run setting (not saved with the model).
    model = CrossQ("MlpPolicy", "Pendulum-v1", policy_kwargs={"net_arch": [16]}, learning_starts=50, seed=0,
                   precision=precision).learn(120)  # fmt: skip
    action, _ = model.predict(np.zeros(3, dtype=np.float32))
    assert action.dtype == np.float32 and np.isfinite(action).all()
    model.save(tmp_path / "model")
    loaded = CrossQ.load(tmp_path / "model")
    assert loaded.precision == "32-true"
    np.testing.assert_allclose(loaded.predict(np.zeros(3, dtype=np.float32), deterministic=True)[0],
                               model.predict(np.zeros(3, dtype=np.float32), deterministic=True)[0],
                               atol=1e-2)  # fmt: skip
    assert CrossQ.load(tmp_path / "model", precision="bf16-mixed").precision == "bf16-mixed"
