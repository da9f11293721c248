"""Env construction."""

from lit_rl.envs.make import check_env_id, make_vec_env

__all__ = ["check_env_id", "make_vec_env"]
