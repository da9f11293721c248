"""A launcher's pack member sets up alone: from the start of its run until it joins the pack it holds the lock of
the global generators, so that no other member's start (Lightning restores the global generators after its sanity
check) can land inside its seeded network initialisation and change its weights."""

from __future__ import annotations

import threading

from lit_rl import SAC
from lit_rl.core.network_setup import global_rng_lock
from lit_rl.packed.callback import PackMember
from lit_rl.packed.run import PackRun


def lock_free_elsewhere() -> bool:
    """Whether another thread can take the global generators' lock now."""
    result: list[bool] = []

    def attempt() -> None:
        taken = global_rng_lock().acquire(timeout=0.2)
        if taken:
            global_rng_lock().release()
        result.append(taken)

    thread = threading.Thread(target=attempt)
    thread.start()
    thread.join()
    return result[0]


def test_a_member_holds_the_generators_lock_until_it_joins_the_pack():
    model = SAC("MlpPolicy", "Pendulum-v1", policy_kwargs={"net_arch": [8, 8]}, buffer_size=100, batch_size=32, seed=0)
    member = PackMember(PackRun(1), 0)
    with member.set_up_alone():
        assert not lock_free_elsewhere()
        member.on_train_start(None, model)  # joins the pack (of one): the next member may set up now
        assert lock_free_elsewhere()
    member.teardown(None, model, "fit")


def test_a_member_that_fails_before_joining_frees_the_lock():
    member = PackMember(PackRun(2), 0)
    try:
        with member.set_up_alone():
            raise RuntimeError("bad config")
    except RuntimeError:
        pass
    assert lock_free_elsewhere()
