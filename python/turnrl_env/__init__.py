"""turnrl's C++ BabyAI, BabaIsAI and Crafter (and every other registered env) from Python, over a
`turnrl env-server` (docs/python.md; the protocol: docs/env_protocol.md).

    import turnrl_env
    env = turnrl_env.make("babyai/goto")          # starts a local server, stopped at exit
    obs, info = env.reset()                       # obs: {"long_term": text, "short_term": text}
    obs, reward, terminated, truncated, info = env.step("go forward")
    venv = turnrl_env.make_vec("babyai/goto", 64) # 64 envs, one message per step
"""
from .connection import Connection, ServerError
from .env import TurnrlEnv, make
from .registry import env_ids
from .server import LocalServer, default_server, turnrl_binary
from .vector import VecEnv, make_vec
from . import spaces
import subprocess as _subprocess

__all__ = ["Connection", "ServerError", "TurnrlEnv", "make", "env_ids", "LocalServer", "default_server",
           "turnrl_binary", "VecEnv", "make_vec"]

if spaces.gymnasium:
    from . import gym as _gym

    try:
        _gym.register()
    except (OSError, _subprocess.SubprocessError):
        pass  # no turnrl binary here: make(id, server=...) still works; ids register once one is found
