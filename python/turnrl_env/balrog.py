"""BALROG's env interface over turnrl's envs, so that BALROG's agents and evaluator run on them.

BALROG (balrog/environments/__init__.py) builds `EnvWrapper(base_env, env_name, task)`, and its
evaluator (balrog/evaluator.py) calls on it: reset(seed=...) -> (obs, info), step(action text) ->
(obs, reward, terminated, truncated, info), max_steps, check_action_validity, get_instruction_prompt,
get_stats, failed_candidates; obs["text"]["long_term_context"] / ["short_term_context"], obs["image"],
and for BabyAI obs["mission"]. BalrogEnv is such a base env; make_env() wraps it in BALROG's own
EnvWrapper where balrog is importable, else in TextEnvWrapper (the same methods); install() points
BALROG's evaluator at make_env:

    import turnrl_env.balrog
    turnrl_env.balrog.install()      # then run BALROG's eval.py / EvaluatorManager as usual
"""
import functools

from . import spaces
from .env import TurnrlEnv

_Base = spaces.gymnasium.Env if spaces.gymnasium else object

BALROG_ENVS = ("babyai", "babaisai", "crafter")


def _section(config, *keys):
    """config[k1][k2]... for a dict or an omegaconf DictConfig; {} where absent or None."""
    node = config
    for key in keys:
        if node is None:
            return {}
        try:
            node = node[key] if key in node else None
        except TypeError:
            return {}
    return node if node is not None else {}


def turnrl_env_id(env_name, task):
    """BALROG's (env_name, task) as a turnrl id and options: ("babyai",
    "BabyAI-MixedTrainLocal-v0/goto") -> "babyai/goto", ("babaisai", "env/goto_win") ->
    "babaisai/goto_win", ("crafter", "default") -> "crafter/balrog". A turnrl id passes through."""
    if env_name not in BALROG_ENVS:
        raise ValueError(f"turnrl serves BALROG's {', '.join(BALROG_ENVS)}, not {env_name!r}")
    if task.startswith(env_name + "/"):
        return task
    if env_name == "babyai":
        prefix = "BabyAI-MixedTrainLocal-v0/"
        if not task.startswith(prefix):
            raise ValueError(f"turnrl's BabyAI has BALROG's {prefix}* tasks only, not {task!r}")
        return "babyai/" + task[len(prefix):]
    if env_name == "babaisai":
        return "babaisai/" + task.removeprefix("env/")
    if task != "default":
        raise ValueError(f"BALROG's crafter has the task 'default' only, not {task!r}")
    return "crafter/balrog"


def turnrl_options(env_name, config):
    """The BALROG config's env kwargs that turnrl's envs take."""
    kwargs = _section(config, "envs", f"{env_name}_kwargs")
    if env_name == "babyai":
        return {"num_dists": int(kwargs["num_dists"])} if "num_dists" in kwargs else {}
    if env_name == "crafter":
        return {key: list(kwargs[key]) for key in ("area", "view", "size") if key in kwargs}
    return {}


class BalrogEnv(_Base):
    """A turnrl env as the base env BALROG wraps: actions are their text (language_action_space)."""

    def __init__(self, env_name, task, config=None, server=None, timeout=10.0):
        self.env_name = env_name
        self.task = task
        self.env = TurnrlEnv(turnrl_env_id(env_name, task), server, turnrl_options(env_name, config), timeout)
        self.language_action_space = list(self.env.action_names)
        self.action_space = self.env.action_space
        self.observation_space = None
        # BALROG builds crafter.Env(seed=crafter_kwargs.seed): that seed fixes Crafter's world.
        crafter_seed = _section(config, "envs", "crafter_kwargs").get("seed") if env_name == "crafter" else None
        self._world_seed = crafter_seed
        self._info = None
        self.max_steps = None

    @property
    def default_action(self):
        return self.language_action_space[self.env.default_action]

    @property
    def actions(self):
        return self.language_action_space

    def get_text_action(self, action):
        return self.language_action_space[getattr(action, "value", action)]

    def reset(self, seed=None, options=None, **kwargs):
        observation, info = self.env.reset(seed=self._world_seed if self._world_seed is not None else seed,
                                           options=options)
        self._info = info
        self.max_steps = info["max_steps"]
        return self._observation(observation), info

    def step(self, action):
        observation, reward, terminated, truncated, info = self.env.step(action)
        self._info = info
        return self._observation(observation), reward, terminated, truncated, info

    def get_instruction_prompt(self, instructions=None):
        return self._info["instruction_prompt"]

    def get_stats(self):
        stats = {"progression": self._info["progression"] if self._info else 0.0}
        if self.env_name == "babyai":
            stats["mission"] = self._info["goal"] if self._info else None
        return stats

    def render(self):
        return self.env.render()

    def close(self):
        self.env.close()

    def _observation(self, observation):
        obs = {"text": {"long_term_context": observation["long_term"],
                        "short_term_context": observation["short_term"]},
               "image": None}
        if self.env_name == "babyai":
            obs["mission"] = self._info["goal"]
        return obs


class TextEnvWrapper:
    """BALROG's EnvWrapper's methods for where balrog is not importable (the instruction prompt is
    turnrl's, which is BALROG's text)."""

    def __init__(self, env, env_name, task_name):
        self.env = env
        self.env_name = env_name
        self.task_name = task_name
        self.failed_candidates = []

    @property
    def max_steps(self):
        return self.env.max_steps

    @property
    def actions(self):
        return self.env.actions

    def reset(self, **kwargs):
        return self.env.reset(**kwargs)

    def step(self, action):
        return self.env.step(action)

    def get_text_action(self, action):
        return self.env.get_text_action(action)

    def get_instruction_prompt(self, instructions=None):
        return self.env.get_instruction_prompt(instructions)

    def check_action_validity(self, candidate_action):
        if candidate_action in self.env.language_action_space:
            return candidate_action
        self.failed_candidates.append(candidate_action)
        return self.env.default_action

    def get_stats(self):
        return self.env.get_stats()

    def close(self):
        self.env.close()


def make_env(env_name, task, config=None, render_mode=None, server=None):
    """What balrog.environments.make_env returns, for BALROG's BabyAI, BabaIsAI and Crafter tasks,
    on turnrl's envs (server: as in turnrl_env.make)."""
    base = BalrogEnv(env_name, task, config, server)
    try:
        from balrog.environments.env_wrapper import EnvWrapper
    except ImportError:
        return TextEnvWrapper(base, env_name, task)
    return EnvWrapper(base, env_name, task)


def install(server=None):
    """Makes BALROG's evaluator build its BabyAI, BabaIsAI and Crafter envs with make_env (others
    stay BALROG's own)."""
    import balrog.environments
    import balrog.evaluator

    original = balrog.environments.make_env

    @functools.wraps(original)
    def patched(env_name, task, config, render_mode=None):
        if env_name in BALROG_ENVS:
            return make_env(env_name, task, config, render_mode, server)
        return original(env_name, task, config, render_mode=render_mode)

    balrog.environments.make_env = patched
    balrog.evaluator.make_env = patched
    return patched
