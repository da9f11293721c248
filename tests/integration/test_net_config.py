"""``algo.policy_kwargs.net`` has a schema: a misspelt network option fails through the real launcher before the
run folder exists, naming the key, the value and the allowed keys; the valid ways still compose."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from lit_rl.launcher.config import register_configs
from lit_rl.nets.net_options import NetOptions, net_options
from tests.helpers import run_launcher

CONF = Path(__file__).resolve().parents[2] / "conf"
ALLOWED = "residual, dropout, layer_norm, weight_norm, critic_head, n_bins, v_min, v_max"


@pytest.fixture(scope="module")
def bad_net_file(tmp_path_factory):
    """A conf/net option with a misspelt key, on Hydra's search path."""
    root = tmp_path_factory.mktemp("conf")
    (root / "net").mkdir()
    (root / "net" / "typo.yaml").write_text("# @package algo.policy_kwargs\nnet:\n  dropuot: 0.1\n  layer_norm: true\n")
    return f"hydra.searchpath=[file://{root}]"


CASES = {
    # Hydra's + adds keys even to a typed node: lit_rl's check rejects it before the run folder is made
    "added with +": (["+algo.policy_kwargs.net.dropuot=0.1"], ["algo.policy_kwargs.net.dropuot=0.1", "allowed keys"]),
    "set": (["algo.policy_kwargs.net.dropuot=0.1"], ["algo.policy_kwargs.net.dropuot", "=0.1", f"allowed keys: {ALLOWED}"]),
    "in a conf/net file": (["+net=typo", "{bad_net_file}"], ["net/typo", "'dropuot'", f"allowed keys: {ALLOWED}"]),
    "wrong type": (["algo=sac", "algo.policy_kwargs.net.n_bins=many"], ["algo.policy_kwargs.net.n_bins", "many"]),
    "bad value": (["algo.policy_kwargs.net.dropout=1.5"], ["algo.policy_kwargs.net.dropout=1.5", "[0, 1)"]),
}


@pytest.mark.parametrize("case", CASES)
def test_a_bad_network_option_fails_before_the_run_folder_exists(tmp_path, bad_net_file, case):
    overrides, words = CASES[case]
    run_dir = tmp_path / "outputs" / "run"
    proc = run_launcher(run_dir, "trainer=smoke", "env=Pendulum-v1", *(o.format(bad_net_file=bad_net_file) for o in overrides),
                        timeout=120)  # fmt: skip
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output[-2000:]
    for word in words:
        assert word in output, output[-2000:]
    assert not (tmp_path / "outputs").exists()  # nothing written: no run folder, no .hydra/, no train.log


def compose_train(*overrides: str):
    register_configs()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(config_name="train", overrides=list(overrides))


@pytest.mark.parametrize("algo", ["crossq", "sac", "td3", "ddpg", "tqc"])
def test_unset_options_are_the_standard_networks(algo):
    assert net_options(dict(compose_train(f"algo={algo}").algo.policy_kwargs.net)).is_default
    assert compose_train(f"algo={algo}", "algo.policy_kwargs.net=null").algo.policy_kwargs.net is None  # as before


def test_options_are_set_without_plus_and_presets_fill_the_rest():
    cfg = compose_train("algo=sac", "algo.policy_kwargs.net.dropout=0.1", "algo.policy_kwargs.net.layer_norm=true")
    assert net_options(dict(cfg.algo.policy_kwargs.net)) == NetOptions(dropout=0.1, layer_norm=True)
    cfg = compose_train("algo=sac", "+net=categorical", "algo.policy_kwargs.net.v_min=-5")
    assert net_options(dict(cfg.algo.policy_kwargs.net)) == NetOptions(critic_head="categorical", v_min=-5.0)
