"""The Stable-Baselines3 API of every algorithm: learn, save/load, parameters, replay buffer files."""

from __future__ import annotations

import copy
import glob
import io
import operator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

import lightning as L
import numpy as np
import torch
from typing_extensions import Self  # typing.Self is Python 3.11+

from lit_rl.buffers.replay import ReplayBuffer
from lit_rl.collect.collector import RolloutReturn
from lit_rl.collect.noise import ActionNoise
from lit_rl.core.acting import Acting
from lit_rl.core.arguments import UnsupportedSpaceError, parse_train_freq
from lit_rl.core.batching import DEFAULT_STEPS_PER_BATCH
from lit_rl.core.exact_resume import upgrade_state_dict
from lit_rl.core.hyperparameters import GymEnv, MaybeCallback, SB3VecEnv
from lit_rl.core.persistence import class_path, read_model_file, resolve_class, resolve_device, write_model_file
from lit_rl.core.sb3_logger import SB3Logger
from lit_rl.envs.actions import unscale_action
from lit_rl.envs.make import vector_env_name
from lit_rl.policies.sb3_methods import observation_batch

if TYPE_CHECKING:  # typing_extensions >= 4.10 (typing.TypeIs: Python 3.13+); annotations are not evaluated
    from typing_extensions import TypeIs


def tensorboard_run_name(folder: str | Path, name: str, new_run: bool) -> str:
    """SB3's TensorBoard run folder ``<name>_<n>``: the next ``n`` for a new run, the latest to continue one."""
    numbers = [int(p.name.rpartition("_")[2]) for p in Path(folder).glob(f"{glob.escape(name)}_*")
               if p.name.rpartition("_")[2].isdigit() and p.name.rpartition("_")[0] == name]  # fmt: skip
    latest = max(numbers, default=0)
    return f"{name}_{latest + 1 if new_run or latest == 0 else latest}"


def is_file_object(path: str | Path | io.BufferedIOBase, method: str) -> TypeIs[io.BufferedIOBase]:
    """A file object (SB3 types it ``io.BufferedIOBase``, e.g. ``io.BytesIO``) where a path is also allowed: has ``method``."""
    return hasattr(path, method)


def binary_io(file: io.BufferedIOBase) -> IO[bytes]:
    """``file`` for torch.save/torch.load: a BufferedIOBase has IO[bytes]' methods, but typeshed does not declare it one."""
    return cast(IO[bytes], file)


def with_zip_suffix(path: str | Path) -> Path:
    """SB3's save name: a path without a suffix gets ``.zip``."""
    path = Path(path)
    return path if path.suffix else path.with_suffix(".zip")


def existing_model_path(path: str | Path) -> Path:
    """``path``, or ``path.zip`` when only that exists (SB3 loads ``"name"`` saved as ``name.zip``)."""
    path = Path(path)
    return path if path.exists() or path.suffix else with_zip_suffix(path)


def delegated(path: str, doc: str, writable: bool = True) -> Any:
    """A property of the algorithm that reads (and, if ``writable``, sets) ``self.<part>.<name>`` (``path``)."""
    part, name = path.split(".")
    setter = (lambda self, value: setattr(getattr(self, part), name, value)) if writable else None
    return property(operator.attrgetter(path), setter, doc=doc)


class StableBaselinesAPI(Acting):
    """Mixin of :class:`~lit_rl.core.off_policy.OffPolicyAlgorithm` (uses its attributes)."""

    # The algorithm's parts (off_policy.py) by SB3's names: reading and setting them reads and sets the parts.
    num_timesteps = delegated("clock.num_timesteps", "env steps so far")
    total_timesteps = delegated("clock.total_timesteps", "the env step at which the running fit ends")
    _n_updates = delegated("clock.n_updates", "gradient updates so far (SB3's name)")
    _n_envs = delegated("clock.n_envs", "envs of the running fit's vector env (SB3's name)")
    round_gradient_step = delegated("clock.round_gradient_step", "index of the running update within its round")
    continue_training = delegated("clock.continue_training", "False once a callback stopped the run", writable=False)
    replay_buffer = delegated("buffer_setup.buffer", "the replay buffer (None before an env is known, as SB3's)")
    replay_buffer_class = delegated("buffer_setup.buffer_class", "the replay buffer's class", writable=False)
    replay_buffer_kwargs = delegated("buffer_setup.buffer_kwargs", "the replay buffer's arguments", writable=False)
    latest_metrics = delegated("metrics.latest", "what the loggers last received", writable=False)
    learning_phase_fps = delegated("metrics.learning_phase_fps", "env steps/s after learning_starts", writable=False)
    _last_obs = delegated("collector.last_obs", "SB3's name of the collector's current observations (None: reset "
                          "at the next learn)")  # fmt: skip
    # SB3's statistics of the last training episodes (the collector keeps them).
    ep_returns = delegated("collector.ep_returns", "returns of the last training episodes", writable=False)
    ep_lengths = delegated("collector.ep_lengths", "lengths of the last training episodes", writable=False)
    ep_info_buffer = delegated("collector.ep_info_buffer", "SB3's {'r', 'l', 't'} of the last training episodes",
                               writable=False)  # fmt: skip
    ep_success_buffer = delegated("collector.ep_success_buffer", "SB3's info['is_success'] of the last episodes",
                                  writable=False)  # fmt: skip

    @property  # SB3's logger where Lightning's has its own type: SB3Logger forwards the rest to Lightning's
    def logger(self) -> SB3Logger:  # type: ignore[override]  # SB3's model.logger API on Lightning's name
        """SB3's ``model.logger`` (record, record_mean, name_to_value, dump); other attributes: Lightning's logger."""
        return self.sb3_logger

    # SB3's aliases of the policy's networks.
    actor = delegated("policy.actor", "``policy.actor``", writable=False)
    critic = delegated("policy.critic", "``policy.critic``", writable=False)
    actor_target = delegated("policy.actor_target", "``policy.actor_target``", writable=False)
    critic_target = delegated("policy.critic_target", "``policy.critic_target``", writable=False)

    def train(self, mode: bool = True, gradient_steps: int | None = None, batch_size: int | None = None) -> Any:
        """``nn.Module.train(mode)``, or SB3's ``train(gradient_steps, batch_size)``: that many updates now.

        The SB3 form needs the optimizers of an earlier ``learn()`` and a replay buffer with data in it.
        """
        if gradient_steps is None:
            return super().train(mode)
        if self._trainer is None or self.replay_buffer is None or len(self.replay_buffer) == 0:
            raise RuntimeError("train(gradient_steps=...) needs a model that has run learn() and stored transitions")
        self.run_gradient_steps(gradient_steps, batch_size or self.batch_size)
        return self

    def _on_step(self) -> None:
        """SB3's per-env-step hook (DQN: target update and exploration schedule): :meth:`on_env_step`."""
        self.on_env_step()

    def get_vec_normalize_env(self) -> Any:
        """The SB3 ``VecNormalize`` wrapper of the training env, or None (SB3's method)."""
        from lit_rl.envs.sb3_vec_env import sb3_vec_normalize

        env = self.get_env()
        return None if env is None else sb3_vec_normalize(env)

    def learn(
        self,
        total_timesteps: int,
        env: GymEnv | str | None = None,
        callback: MaybeCallback = None,
        log_every_n_steps: int | None = None,
        tb_log_name: str | None = None,
        reset_num_timesteps: bool = True,
        progress_bar: bool = False,
        default_root_dir: str | Path | None = None,
        log_interval: int | None = 4,
        accelerator: str | None = None,
        logger: Any = False,
        eval_freq: int = 0,
        n_eval_episodes: int = 10,
    ) -> Self:
        """Train for ``total_timesteps`` env steps on ``env`` (an id, an Env or a VectorEnv; None: the model's).

        ``callback``: an SB3-style callback (:mod:`lit_rl.callbacks.sb3`), a
        list of them, a function ``(locals, globals) -> bool``, or Lightning
        callbacks (mixed in one list is fine). ``log_every_n_steps``: env steps between the
        loggers' rows (default 1000). At ``verbose >= 1``, SB3's log table is printed every
        ``log_interval`` training episodes (None: never), as SB3 does. ``logger=True`` writes
        a CSV log under ``default_root_dir``/``tb_log_name``; the constructor's
        ``tensorboard_log`` a TensorBoard log in ``tensorboard_log/<tb_log_name>_<n>`` (SB3's
        names: a new ``n`` per run, the same one when ``reset_num_timesteps=False``). The Trainer runs
        on the model's ``device`` (``accelerator`` overrides). ``eval_freq`` > 0
        (an env id only) evaluates every ``eval_freq`` env steps and at the end,
        as the launcher does, and with ``default_root_dir`` writes
        ``<default_root_dir>/<tb_log_name>/checkpoints/{last,best}.ckpt``. The
        Trainer, evaluation and checkpoints are the launcher's
        (:func:`lit_rl.core.trainer.make_trainer`); a second call with
        ``reset_num_timesteps=False`` continues the same env, counters and
        optimizer states. ``verbose=0`` prints nothing but errors; no verbosity prints Lightning's banners.
        """
        tb_log_name = tb_log_name or type(self).__name__  # SB3 and the seed: the algorithm's name
        from lit_rl.callbacks.evaluation import PeriodicEvaluation
        from lit_rl.callbacks.progress import SB3LogTable
        from lit_rl.callbacks.sb3 import SB3CallbackAdapter, as_sb3_callback
        from lit_rl.core.trainer import make_trainer, quiet_lightning, trainer_device

        evaluation = None
        if eval_freq:
            checkpoints = Path(default_root_dir) / tb_log_name / "checkpoints" if default_root_dir else None
            evaluation = PeriodicEvaluation(eval_freq, n_eval_episodes, checkpoint_dir=checkpoints, seed=self.seed)
        if env is not None and env is not self.get_env():
            self.set_env(env)
        if self._learn_datamodule is None:
            raise TypeError("learn() needs an env: an env id (str), a gymnasium.Env or a gymnasium VectorEnv")
        if evaluation is not None and not isinstance(self._learn_datamodule.env_spec, str):
            raise ValueError(f"learn(eval_freq={eval_freq}) builds its evaluation env from an env id; the model's env "
                             "is an object: allowed: an env id, or an SB3-style EvalCallback(eval_env) callback")  # fmt: skip
        self._learn_datamodule.want_eval_env = evaluation is not None
        log_freq = log_every_n_steps or 1_000
        self.configure_run(total_timesteps, log_freq=log_freq, reset_num_timesteps=reset_num_timesteps,
                           steps_per_batch=self.steps_per_batch or DEFAULT_STEPS_PER_BATCH)  # fmt: skip
        given = callback if isinstance(callback, (list, tuple)) else [callback] if callback is not None else []
        lightning_callbacks = [cb for cb in given if isinstance(cb, L.Callback)]
        step_callback = as_sb3_callback([cb for cb in given if not isinstance(cb, L.Callback)] or None)
        if step_callback is not None:
            lightning_callbacks.append(SB3CallbackAdapter(step_callback))
        if self.verbose >= 1 and log_interval is not None:
            lightning_callbacks.append(SB3LogTable(log_interval))
        if logger is False and self.tensorboard_log is not None:  # SB3's constructor argument and folder names
            run = tensorboard_run_name(self.tensorboard_log, tb_log_name, reset_num_timesteps)
            logger = L.pytorch.loggers.TensorBoardLogger(self.tensorboard_log, name="", version=run)
        if logger is True:
            logger = L.pytorch.loggers.CSVLogger(default_root_dir or ".", name=tb_log_name)
        device_accelerator, devices = trainer_device(self.device_name)
        with quiet_lightning():
            trainer = make_trainer(
                callbacks=lightning_callbacks,
                evaluation=evaluation,
                progress_bar=progress_bar,
                logger=logger,
                default_root_dir=default_root_dir,
                accelerator=accelerator or device_accelerator,
                devices=devices,
            )
            trainer.fit(self, datamodule=self._learn_datamodule)
        return self

    def collect_rollouts(
        self, env: Any = None, callback: Any = None, train_freq: Any = None, replay_buffer: Any = None,
        action_noise: ActionNoise | None = None, learning_starts: int = 0, log_interval: int | None = None,
    ) -> RolloutReturn:  # fmt: skip
        """Collect ``train_freq`` env steps (or episodes) into the buffer (SB3's arguments; None: the model's own).

        As in SB3, actions are uniformly random while ``num_timesteps < learning_starts`` (default 0: none).
        """
        collector = self.collector
        if env is not None and env is self.get_env():  # model.env / get_env(): the env the collector steps
            env = self.train_env
        if env is not None and env is not collector.env:
            collector.attach(env, replay_buffer or self.replay_buffer, vector_env_name(env))
            self.start_episodes(env)
        elif replay_buffer is not None:
            collector.buffer = replay_buffer
        if action_noise is not None:
            collector.action_noise = action_noise
        freq = parse_train_freq(train_freq if train_freq is not None else self.train_freq)
        result = collector.collect(self.rollout_act, freq.frequency, freq.unit == "episode", callback, learning_starts)
        self.clock.continue_training = result.continue_training
        if log_interval is not None and result.n_episodes:
            self.dump_logs()
        return result

    def train_dataloader(self) -> Any:
        """The token stream that paces ``training_step`` (the seed's; a datamodule passed to fit supplies its own)."""
        from lit_rl.data.datamodule import token_loader

        return token_loader()

    def make_datamodule(self, env: Any) -> Any:
        """The datamodule that builds ``env`` (an id, an Env or a VectorEnv) for ``learn``."""
        from lit_rl.data.datamodule import RLDataModule

        return RLDataModule(env, seed=self.seed, eval_env=False)

    def predict(
        self,
        observation: np.ndarray | dict[str, np.ndarray],
        state: tuple[np.ndarray, ...] | None = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = False,
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...] | None]:
        """Env actions for one observation or a batch, and the (unused, recurrent-only) ``state``: SB3's ``predict``."""
        if self.observation_space is None or self.action_space is None:  # both set when the networks are built
            raise RuntimeError(f"{type(self).__name__}.predict needs a trained or loaded model (call learn() or load())")
        batch, single = observation_batch(self.observation_space, observation)
        actions = unscale_action(self.action_space, self.act(batch, deterministic))
        return (np.asarray(actions[0]) if single else actions), state  # one observation: an array, as SB3

    def save(
        self, path: str | Path | io.BufferedIOBase, exclude: Any = None, include: Any = None
    ) -> Path | io.BufferedIOBase:
        """Write hyperparameters, spaces, weights and optimizer states to one file (not the replay buffer).

        As SB3: a path without a suffix gets ``.zip``; hyperparameters are saved with their current
        values (``model.verbose = 2`` is kept); ``exclude`` names ones to leave out (the loaded model
        gets the constructor's default), ``include`` puts back some of those.
        """
        if self.observation_space is None:
            raise RuntimeError(f"{type(self).__name__}.save needs a model with networks (call learn() first)")
        left_out = set(exclude or ()) - set(include or ())
        hparams = {k: self.current_value(k, v) for k, v in self.hparams.items() if k not in left_out}
        checkpoint = {
            "state_dict": upgrade_state_dict(self.state_dict()),  # a user's torch.compile(policy): plain keys
            "hyper_parameters": hparams,
            "rl_state": {**self.rl_state(with_training_state=False), "last_obs": copy.deepcopy(self.collector.last_obs),
                         "n_envs": self.replay_buffer.n_envs if self.replay_buffer is not None else self._n_envs},
            "pytorch-lightning_version": L.__version__,  # so the launcher's ckpt_path accepts the file too
        }
        if self._trainer is not None:
            checkpoint["optimizer_states"] = [opt.state_dict() for opt in self.trainer.optimizers]
        if is_file_object(path, "write"):
            torch.save(checkpoint, binary_io(path))
            return path
        return write_model_file(checkpoint, with_zip_suffix(path))

    def current_value(self, name: str, saved: Any) -> Any:
        """A hyperparameter's value now: the attribute when it is a plain number or string the user may have set."""
        value = getattr(self, name, saved)
        plain = (bool, int, float, str)
        return value if isinstance(value, plain) and isinstance(saved, plain) else saved

    @classmethod
    def load(
        cls,
        path: str | Path | io.BufferedIOBase,
        env: GymEnv | str | None = None,
        device: str | torch.device = "auto",
        custom_objects: dict[str, Any] | None = None,
        print_system_info: bool = False,
        force_reset: bool = True,
        **kwargs: Any,
    ) -> Self:
        """Load a file written by :meth:`save` or a launcher checkpoint (``last.ckpt``, ``best.ckpt``).

        SB3's arguments: ``env`` (set with :meth:`set_env`; its spaces must match),
        ``custom_objects`` replace saved values of the keys the file has, ``kwargs``
        replace or add hyperparameters (e.g. ``learning_starts=0``); a changed
        ``policy_kwargs`` is refused. ``learn(..., reset_num_timesteps=False)``
        continues the counters and the optimizers' states.
        """
        device = resolve_device(device)
        checkpoint = read_model_file(path if hasattr(path, "read") else existing_model_path(path), device)
        state = checkpoint["rl_state"]
        algo_class = resolve_class(state["algorithm"]) if "algorithm" in state else cls
        if not issubclass(algo_class, cls):
            raise ValueError(
                f"{path} holds a {algo_class.__name__} model, not a {cls.__name__}; load it with "
                f"{algo_class.__name__}.load or lit_rl.algorithms.load_algorithm"
            )
        saved = checkpoint.get("hyper_parameters", {})
        if "policy_kwargs" in kwargs and kwargs["policy_kwargs"] != saved.get("policy_kwargs"):
            raise ValueError(
                f"policy_kwargs={kwargs['policy_kwargs']!r} differs from the saved {saved.get('policy_kwargs')!r}; "
                "allowed: the saved policy_kwargs (the weights were trained for them)"
            )
        for key in ("normalize_obs", "normalize_reward"):  # the weights were trained on (un)normalised inputs
            if key in kwargs and kwargs[key] != saved.get(key, False):
                raise ValueError(f"{key}={kwargs[key]!r} differs from the saved {saved.get(key, False)!r}; allowed: "
                                 "the saved value (the model's statistics and weights go together)")  # fmt: skip
        custom = {k: v for k, v in (custom_objects or {}).items() if k in saved}
        hparams = {**saved, **custom, "device": str(device), **kwargs}
        hparams.setdefault("replay_buffer_class", resolve_class(state.get("replay_buffer_class", class_path(ReplayBuffer))))
        hparams.pop("steps_per_batch", None)  # format 1 kept this run setting among the hyperparameters
        hparams.pop("env", None)
        if print_system_info:
            print(f"lit_rl {state.get('lit_rl_version', '')} model, written by Lightning "
                  f"{checkpoint.get('pytorch-lightning_version')}; this system: torch {torch.__version__}")  # fmt: skip
        model = algo_class(**hparams)  # prints "Using <device> device" at verbose >= 1, as SB3's load does
        model.build_networks_for(state["observation_space"], state["action_space"])
        model.load_state_dict(checkpoint["state_dict"])
        model.restore_counters(state)
        if "optimizer_states" in checkpoint:
            model.resume.pending["optimizer_states"] = checkpoint["optimizer_states"]
        model.to(device)
        if env is not None:
            model.set_env(env, force_reset=force_reset)
            if not force_reset:  # SB3: the env kept its state, so the episode goes on from the saved observations
                model.collector.last_obs = state.get("last_obs")
        if model.replay_buffer is None:  # SB3: an empty buffer (set_env built it for the env; else the saved n_envs)
            saved_obs = state.get("last_obs")  # files written before n_envs was saved: one row per env
            n_envs = state.get("n_envs", len(saved_obs) if isinstance(saved_obs, np.ndarray) else 1)
            model.buffer_setup.buffer = model.make_replay_buffer(model.train_env, device, n_envs)
        return model

    def env_datamodule(self) -> Any:
        """The datamodule of the training env: ``learn``'s (or ``set_env``'s), else the launcher Trainer's, else None."""
        datamodule = self._learn_datamodule
        if datamodule is None and self._trainer is not None:
            datamodule = getattr(self.trainer, "datamodule", None)  # set by Lightning, undeclared (lit_rl.data.trainer_fields)
        return datamodule

    @property
    def train_env(self) -> Any:
        """The training env as the collector steps it: a gymnasium same-step-autoreset vector env."""
        datamodule = self.env_datamodule()
        return None if datamodule is None else datamodule.train_env

    @property
    def env(self) -> SB3VecEnv | None:
        """The training env with SB3's VecEnv API (:meth:`get_env`), or None: SB3's and the seed's ``model.env``."""
        return self.get_env()

    def get_env(self) -> SB3VecEnv | None:
        """The training env with SB3's VecEnv API (``reset() -> obs``, 4-tuple ``step``), or None before one is set.

        An SB3 VecEnv the user gave comes back as itself; other envs as a view that steps the same env.
        """
        from lit_rl.envs.sb3_view import sb3_view

        datamodule = self.env_datamodule()
        if datamodule is None:
            return None
        if datamodule.train_env is None:
            datamodule.setup("fit")
        given = getattr(datamodule.train_env.unwrapped, "venv", None)  # SB3VecEnvAdapter keeps the user's VecEnv
        if given is None and getattr(datamodule, "sb3_view", None) is None:
            datamodule.sb3_view = sb3_view(datamodule.train_env)
        return given if given is not None else datamodule.sb3_view

    def set_env(self, env: GymEnv | str, force_reset: bool = True) -> None:
        """Train on ``env`` from the next ``learn``; its spaces must be the model's (SB3's ``set_env``).

        ``force_reset=False`` keeps the current episode when ``env`` is the same env (SB3's semantics).
        """
        same = env is self.get_env()
        env = getattr(env, "env", env) if type(env).__name__ == "VecEnvView" else env  # our own view: its env
        datamodule = self.make_datamodule(env)
        datamodule.setup("fit")
        if self.observation_space is not None:
            new = datamodule.train_env
            for kind, mine, theirs in (("observation", self.observation_space, new.single_observation_space),
                                       ("action", self.action_space, new.single_action_space)):  # fmt: skip
                if mine != theirs:
                    raise UnsupportedSpaceError(f"set_env: the env's {kind} space {theirs} differs from the model's {mine}")
        if not same and self.replay_buffer is not None and self.replay_buffer.size() == 0:  # nothing to keep
            self.buffer_setup.buffer = self.make_replay_buffer(datamodule.train_env, self.device)
        if self.replay_buffer is not None and datamodule.train_env.num_envs != self.replay_buffer.n_envs:
            raise UnsupportedSpaceError(f"set_env: the env has {datamodule.train_env.num_envs} envs, the model's replay "
                                        f"buffer {self.replay_buffer.n_envs}; allowed: the same number (SB3 too)")  # fmt: skip
        if same and not force_reset:
            return
        self.use_env(datamodule)

    def get_parameters(self) -> dict[str, dict[str, Any]]:
        """SB3's ``get_parameters``: ``{"policy": state_dict, "optimizer_<i>": state}`` (copies)."""
        params: dict[str, dict[str, Any]] = {"policy": {k: v.detach().clone() for k, v in self.state_dict().items()}}
        if self._trainer is not None:
            for i, opt in enumerate(self.trainer.optimizers):
                params[f"optimizer_{i}"] = copy.deepcopy(opt.state_dict())
        return params

    def set_parameters(
        self, load_path_or_dict: str | Path | dict[str, Any], exact_match: bool = True, device: Any = "auto"
    ) -> None:
        """SB3's ``set_parameters``: objects from :meth:`get_parameters`'s dict or from a model file.

        Unknown object names raise ValueError; with ``exact_match`` so do missing
        objects, and torch raises RuntimeError for missing tensors inside one.
        """
        if isinstance(load_path_or_dict, dict):
            params = load_path_or_dict
        else:
            checkpoint = read_model_file(existing_model_path(load_path_or_dict), self.device)
            params = {"policy": checkpoint["state_dict"]}
            params.update({f"optimizer_{i}": s for i, s in enumerate(checkpoint.get("optimizer_states", []))})
        objects = set(self.get_parameters())
        unknown, missing = set(params) - objects, objects - set(params)
        if unknown:
            raise ValueError(f"set_parameters: {sorted(unknown)} are not objects of this model; allowed: {sorted(objects)}")
        if exact_match and missing:
            raise ValueError(f"set_parameters: {sorted(missing)} are missing (exact_match=True); given: {sorted(params)}")
        if "policy" in params:
            self.load_state_dict(params["policy"], strict=exact_match)
        for i, opt in enumerate(self.trainer.optimizers if self._trainer is not None else []):
            if f"optimizer_{i}" in params:
                opt.load_state_dict(params[f"optimizer_{i}"])

    def save_replay_buffer(self, path: str | Path | io.BufferedIOBase) -> Path | io.BufferedIOBase:
        """Write the replay buffer's filled part to a file (atomically) or a file object (``io.BytesIO``)."""
        if self.replay_buffer is None:
            raise RuntimeError("save_replay_buffer: the model has no replay buffer yet (call learn() first)")
        state = {"replay_buffer": self.replay_buffer.state_dict()}
        if is_file_object(path, "write"):
            torch.save(state, binary_io(path))
            return path
        return write_model_file(state, path)

    def load_replay_buffer(self, path: str | Path | io.BufferedIOBase, truncate_last_traj: bool = True) -> None:
        """Load a buffer file; it is put in place now or, before the first ``learn``, when training starts.

        ``truncate_last_traj`` (HER buffers) marks each unfinished last episode
        as ended (truncated), as SB3 does, whenever the state is put in place.
        """
        source: Path | IO[bytes]
        if is_file_object(path, "read"):
            source = binary_io(path)
        else:
            source = Path(path)
            if not source.is_file():
                raise FileNotFoundError(f"replay buffer file {str(source)!r} does not exist")
        state = torch.load(source, map_location="cpu", weights_only=False)
        if not isinstance(state, dict) or "replay_buffer" not in state:
            raise ValueError(f"{source!r} is not a replay buffer file (written by save_replay_buffer)")
        if self.replay_buffer is None and self.observation_space is not None and self.train_env is not None:
            self.buffer_setup.buffer = self.make_replay_buffer(self.train_env, self.device)  # SB3 code may have dropped it
        elif self.train_env is None and self.replay_buffer is not None and self.replay_buffer.size() == 0:
            # loaded without an env: the empty buffer takes the file's number of envs
            self.buffer_setup.buffer = self.make_replay_buffer(None, self.device, state["replay_buffer"].get("n_envs"))
        if self.replay_buffer is None:
            # on_fit_start applies both (lit_rl.core.exact_resume.apply_pending_state)
            self.resume.pending["replay_buffer"] = state["replay_buffer"]
            self.resume.pending["truncate_last_traj"] = truncate_last_traj
            return
        assert self.replay_buffer is not None  # the branch above returned otherwise
        self.replay_buffer.load_state_dict(state["replay_buffer"])
        if truncate_last_traj and hasattr(self.replay_buffer, "truncate_last_trajectory"):
            self.replay_buffer.truncate_last_trajectory()
