"""``hydra/launcher=packed``: a sweep's jobs that differ only in scalar settings (:data:`PER_MEMBER_KEYS`) train
together in one process, their gradient steps packed (:mod:`lit_rl.packed`), each job still a run of its own.

Every job gets its folder as the basic launcher makes it (``.hydra/``, ``train.log``, ``metrics.csv``,
``summary.json``, ``checkpoints/``); its run is the launcher's ``train`` in a thread of its own. Jobs that differ in
anything else go to different packs; a pack holds at most ``pack_size`` jobs, and packs run one after another.
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.core.utils import JobReturn, JobStatus, configure_log, filter_overrides, setup_globals
from hydra.types import HydraContext
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from lit_rl.callbacks.preemption import REQUEUE_SIGNALS, SignalHandler, requeue_handler
from lit_rl.launcher.job_context import MemberJob, member_job

log = logging.getLogger(__name__)

def _positive(value: Any) -> Any:
    try:
        return float(value) > 0
    except (TypeError, ValueError):  # an unresolved interpolation: shared as it is written
        return value


# Config keys a pack's members may differ in: the algorithms' per-member settings (lit_rl.packed.members), each
# with what its pack-mates must still share: ent_coef's kind (learned or fixed), target smoothing on or off.
PER_MEMBER_KEYS: dict[str, Callable[[Any], Any] | None] = {
    "seed": None, "algo.learning_rate": None, "algo.tau": None, "algo.gamma": None, "algo.target_entropy": None,
    "algo.ent_coef": lambda v: "learned" if str(v).startswith("auto") else "fixed",
    "algo.target_policy_noise": _positive, "algo.target_noise_clip": _positive, "algo.action_noise_std": None,
}  # fmt: skip


@dataclass
class Job:
    """One job of the sweep: its index, overrides, full config (``hydra`` node included) and task config."""

    index: int
    overrides: Sequence[str]
    config: DictConfig
    task: DictConfig | None = None
    thread_name: str = ""


def check_pack_size(pack_size: object) -> int:
    if isinstance(pack_size, bool) or not isinstance(pack_size, int) or pack_size < 1:
        raise ValueError(f"hydra.launcher.pack_size={pack_size!r}: allowed: an integer >= 1 (jobs trained together)")
    return pack_size


def pack_key(job: Job) -> str:
    """What a job's pack-mates must share: its config but the per-member keys (interpolations unresolved)."""
    config = OmegaConf.to_container(job.config, resolve=False)
    assert isinstance(config, dict)
    del config["hydra"]
    for key, shared in PER_MEMBER_KEYS.items():
        *parents, leaf = key.split(".")
        node = config
        for parent in parents:
            node = node.get(parent) or {}
        if leaf in node:
            value = node.pop(leaf)
            if shared is not None:
                node[leaf] = shared(value)
    return json.dumps(config, sort_keys=True, default=str)


def group_jobs(jobs: Sequence[Job], pack_size: int) -> list[list[Job]]:
    """Packs of at most ``pack_size`` jobs that differ only in :data:`PER_MEMBER_KEYS`, in sweep order."""
    groups: dict[str, list[Job]] = {}
    for job in jobs:
        groups.setdefault(pack_key(job), []).append(job)
    return [group[i : i + pack_size] for group in groups.values() for i in range(0, len(group), pack_size)]


def check_packable(job: Job) -> None:
    """The job's algorithm has a packed update; else a ``ValueError`` before any folder is made."""
    target = str(OmegaConf.select(job.config, "algo._target_", default=""))
    name = target.rpartition(".")[2]
    from lit_rl.packed.run import PACKED_ALGORITHMS

    if name not in PACKED_ALGORITHMS:
        raise ValueError(
            f"algo._target_={target!r} (job {job.index}) has no packed update; allowed with hydra/launcher=packed: "
            f"{', '.join(PACKED_ALGORITHMS)}; other algorithms run with the basic launcher (leave hydra/launcher out)"
        )
    compile_setting = OmegaConf.select(job.config, "trainer.compile", default=False)
    if compile_setting not in (False, None, "false"):
        raise ValueError(
            f"trainer.compile={compile_setting!r} (job {job.index}): a pack compiles its members' steps together; "
            "allowed with hydra/launcher=packed: trainer.compile=false, and hydra.launcher.compile=true to compile"
        )


def prepare(job: Job) -> None:
    """The job's folder, ``.hydra/`` record and resolved task config, as Hydra's ``run_job`` makes them."""
    config = job.config
    HydraConfig.instance().set_config(config)
    output_dir = Path(str(OmegaConf.select(config, "hydra.sweep.dir"))) / str(
        OmegaConf.select(config, "hydra.sweep.subdir")
    )
    with read_write(config.hydra.runtime), open_dict(config.hydra.runtime):
        config.hydra.runtime.output_dir = str(output_dir.absolute())
    HydraConfig.instance().set_config(config)
    task = copy.deepcopy(config)
    with read_write(task), open_dict(task):
        del task["hydra"]
    OmegaConf.resolve(task)  # ${hydra:runtime.output_dir} and the like: each member's own, read now
    output_dir.mkdir(parents=True, exist_ok=True)
    if config.hydra.output_subdir is not None:
        record = output_dir / str(config.hydra.output_subdir)
        record.mkdir(parents=True, exist_ok=True)
        (record / "config.yaml").write_text(OmegaConf.to_yaml(task))
        (record / "hydra.yaml").write_text(OmegaConf.to_yaml(copy.deepcopy(HydraConfig.instance().cfg)))
        (record / "overrides.yaml").write_text(OmegaConf.to_yaml(config.hydra.overrides.task))
    job.task = task


class _JobFile(logging.FileHandler):
    """A member's ``train.log``: the records of its own thread."""

    def __init__(self, path: Path, thread_name: str) -> None:
        super().__init__(path)
        self.addFilter(lambda record: record.threadName == thread_name)


class _JobPrefix(logging.Formatter):
    """The console's format, with ``[job N]`` before a member's records."""

    def __init__(self, inner: logging.Formatter | None) -> None:
        super().__init__()
        self.inner = inner or logging.Formatter()

    def format(self, record: logging.LogRecord) -> str:
        line = self.inner.format(record)
        thread = record.threadName or ""
        return f"[{thread}] {line}" if thread.startswith("job ") else line


def configure_member_logs(config: DictConfig, jobs: Sequence[Job]) -> list[logging.Handler]:
    """Hydra's job logging, its file replaced by one ``train.log`` per member; returns the files' handlers."""
    configure_log(config.hydra.job_logging, config.hydra.verbose)
    root = logging.getLogger()
    files = [h for h in root.handlers if isinstance(h, logging.FileHandler)]
    formatter = files[0].formatter if files else None
    for handler in files:
        root.removeHandler(handler)
        handler.close()
    for console in root.handlers:
        console.setFormatter(_JobPrefix(console.formatter))
    added: list[logging.Handler] = []
    for job in jobs:
        name = str(OmegaConf.select(job.config, "hydra.job.name", default="train"))
        handler = _JobFile(Path(job.config.hydra.runtime.output_dir) / f"{name}.log", job.thread_name)
        handler.setFormatter(formatter or logging.Formatter("[%(asctime)s][%(name)s][%(levelname)s] - %(message)s"))
        root.addHandler(handler)
        added.append(handler)
    return added


def run_pack(
    jobs: Sequence[Job], hydra_context: HydraContext, task_function: Callable[[DictConfig], Any], compile: bool
) -> list[JobReturn]:
    """The jobs of one pack, each in its own thread; their returns in order."""
    from lit_rl.packed.callback import PackMember
    from lit_rl.packed.run import PackRun

    for i, job in enumerate(jobs):
        prepare(job)
        job.thread_name = f"job {job.index}"
        if i > 0 and job.task is not None:  # one progress bar per pack: the members move in step
            with open_dict(job.task):
                job.task.trainer.enable_progress_bar = False
    run = PackRun(len(jobs), compile=compile)
    returns = [JobReturn(overrides=list(job.overrides), cfg=job.task, hydra_cfg=copy.deepcopy(job.config))
               for job in jobs]  # fmt: skip
    files = configure_member_logs(jobs[0].config, jobs)

    def run_member(i: int, job: Job) -> None:
        member = PackMember(run, i)
        try:
            with member.set_up_alone(), member_job(MemberJob(job.config.hydra, [member])):
                returns[i].return_value = task_function(job.task or job.config)
            returns[i].status = JobStatus.COMPLETED
        except BaseException as error:  # noqa: BLE001  # a member's failure is its job's return
            returns[i].return_value, returns[i].status = error, JobStatus.FAILED
        finally:
            run.leave(i)  # ended, failed, or never started training: the others wait for it no more

    for job in jobs:
        hydra_context.callbacks.on_job_start(config=job.config, task_function=task_function)
    # Daemon threads: a second Ctrl-C ends the process at once (checkpoints are replaced whole, never torn).
    threads = [threading.Thread(target=run_member, args=(i, job), name=job.thread_name, daemon=True)
               for i, job in enumerate(jobs)]  # fmt: skip
    with relayed_stop_signals(run) as requeue:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    for handler in files:
        logging.getLogger().removeHandler(handler)
        handler.close()
    for job, ret in zip(jobs, returns, strict=True):
        ret.working_dir, ret.task_name = str(Path.cwd()), str(job.config.hydra.job.name)
        hydra_context.callbacks.on_job_end(config=job.config, job_return=ret)
    if run.stop_signal is not None:
        name = signal.Signals(run.stop_signal).name
        if run.stop_signal in requeue:  # a time limit: submitit requeues the pack's task, and resume=auto continues
            log.warning("Received %s: each job of the pack saved its checkpoint; requeueing the pack", name)
            requeue[run.stop_signal](run.stop_signal, None)  # requeues and exits
        sweep = jobs[0].config.hydra.sweep.dir
        message = (f"Received {name}: each job of the pack saved its checkpoint; continue the sweep with the same "
                   f"command and resume=auto hydra.sweep.dir={sweep}")  # fmt: skip
        print(message, file=sys.stderr)
        raise SystemExit(128 + run.stop_signal)
    return returns


def end_member_for_requeue(signum: int, frame: Any) -> None:
    """A member's requeue on a time limit: its thread ends; the launcher's main thread requeues the whole pack."""
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def relayed_stop_signals(run: Any) -> Iterator[dict[int, SignalHandler]]:
    """SIGTERM and SIGINT stop every member at its next round (signal handlers run in the main thread only); a
    second SIGINT interrupts at once. Inside a submitit job its time-limit signals stop them too; yields the
    requeue authority's handlers of those signals, to call once every member has saved."""
    if threading.current_thread() is not threading.main_thread():
        yield {}
        return
    requeue: dict[int, SignalHandler] = {s: h for s in REQUEUE_SIGNALS if (h := requeue_handler(s)) is not None}

    def on_signal(signum: int, frame: Any) -> None:
        if run.stop_signal is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt
        run.stop(signum, end_member_for_requeue if signum in requeue else None)

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT, *requeue)}
    try:
        yield requeue
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def load_job(hydra_context: HydraContext, config: DictConfig, overrides: Sequence[str], index: int,
             job_id: str | None = None) -> Job:
    """Job ``index`` of the sweep, its config composed from ``overrides`` as Hydra's launchers compose it."""
    job_config = hydra_context.config_loader.load_sweep_config(config, list(overrides))
    with open_dict(job_config):
        job_config.hydra.job.id, job_config.hydra.job.num = job_id or index, index
    return Job(index, overrides, job_config)


def plan_packs(
    hydra_context: HydraContext, config: DictConfig, job_overrides: Sequence[Sequence[str]], initial_job_idx: int,
    pack_size: int,
) -> list[list[Job]]:
    """The sweep's jobs in packs (:func:`group_jobs`), each job checked before any folder is made."""
    pack_size = check_pack_size(pack_size)
    jobs = [load_job(hydra_context, config, overrides, initial_job_idx + i) for i, overrides in enumerate(job_overrides)]
    for job in jobs:
        check_packable(job)
    packs = group_jobs(jobs, pack_size)
    log.info("Launching %d jobs in %d pack(s) of up to %d", len(jobs), len(packs), pack_size)
    for pack in packs:
        log.info("\tpack: %s", ", ".join(f"#{job.index} : {' '.join(filter_overrides(job.overrides))}" for job in pack))
    return packs


def launch_packed(
    hydra_context: HydraContext,
    task_function: Callable[[DictConfig], Any],
    config: DictConfig,
    job_overrides: Sequence[Sequence[str]],
    initial_job_idx: int,
    pack_size: int,
    compile: bool = False,
) -> list[JobReturn]:
    """Hydra's ``Launcher.launch`` for the packed launcher: the packs one after another, in this process."""
    setup_globals()
    configure_log(config.hydra.hydra_logging, config.hydra.verbose)
    packs = plan_packs(hydra_context, config, job_overrides, initial_job_idx, pack_size)
    Path(str(config.hydra.sweep.dir)).mkdir(parents=True, exist_ok=True)
    returns: dict[int, JobReturn] = {}
    launcher_config = HydraConfig.instance().cfg  # each member's is set while its folder is prepared
    for pack in packs:
        for job, ret in zip(pack, run_pack(pack, hydra_context, task_function, compile), strict=True):
            returns[job.index] = ret
        configure_log(config.hydra.hydra_logging, config.hydra.verbose)
        HydraConfig.instance().cfg = launcher_config
    return [returns[index] for index in sorted(returns)]
