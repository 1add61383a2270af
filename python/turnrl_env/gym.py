"""Gymnasium registration: each turnrl id `family/name` as `turnrl/family-name-v0`, e.g.
gymnasium.make("turnrl/babyai-goto-v0"). Thin: gymnasium is not a Debian 12 package, so this file
is not exercised by the tests here (gymnasium_id is)."""
import re

from .env import TurnrlEnv
from .registry import env_ids

NAMESPACE = "turnrl"
# Gymnasium's id grammar (gymnasium.envs.registration.ENV_ID_RE) allows [\w:.-] in a name.
_INVALID = re.compile(r"[^\w:.-]")


def gymnasium_id(env_id):
    """"babyai/goto" -> "turnrl/babyai-goto-v0"."""
    return f"{NAMESPACE}/{_INVALID.sub('-', env_id.replace('/', '-'))}-v0"


def register(server=None):
    """Registers every id of the turnrl build with gymnasium (server: as in make()); returns the
    gymnasium ids."""
    import gymnasium

    registered = []
    for env_id in env_ids():
        gym_id = gymnasium_id(env_id)
        if gym_id not in gymnasium.registry:
            gymnasium.register(id=gym_id, entry_point=TurnrlEnv, kwargs={"env_id": env_id, "server": server})
        registered.append(gym_id)
    return registered
