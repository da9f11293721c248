"""Env construction."""

from lit_rl.envs.make import as_vector_env, check_env_id, make_vec_env

__all__ = ["as_vector_env", "check_env_id", "make_vec_env"]
