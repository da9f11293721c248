"""Policy modules: the networks of each algorithm (forward passes, action sampling, gSDE noise, BatchRenorm modes)."""

from lit_rl.policies.actor_critic import Actor, ContinuousCritic, CrossQCritic
from lit_rl.policies.base import BasePolicy
from lit_rl.policies.crossq import CrossQPolicy
from lit_rl.policies.dqn import DQNPolicy
from lit_rl.policies.qrdqn import QRDQNPolicy
from lit_rl.policies.sac import SACPolicy
from lit_rl.policies.td3 import TD3Policy
from lit_rl.policies.tqc import QuantileCritic, TQCPolicy

__all__ = ["Actor", "BasePolicy", "ContinuousCritic", "CrossQCritic", "CrossQPolicy", "DQNPolicy", "QRDQNPolicy", "SACPolicy", "TD3Policy", "QuantileCritic", "TQCPolicy"]
