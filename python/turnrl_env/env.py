"""One turnrl env in a server slot, with Gymnasium's API (a gymnasium.Env where gymnasium is importable)."""
import operator
import random

from . import spaces
from .connection import Connection
from .server import default_server

# Seeds drawn for a seedless reset stay below 2**32: every family takes them (BabaIsAI's levels seed
# numpy's legacy np.random.seed, which takes no more).
SEED_BITS = 32

_Base = spaces.gymnasium.Env if spaces.gymnasium else object


def connect(server, timeout):
    """A Connection to `server`, or to this process's local server when it is None."""
    return Connection(server if server is not None else default_server().endpoint, timeout)


def check_seed(seed):
    if isinstance(seed, bool):
        raise TypeError(f"seed must be a non-negative integer, got {seed!r}")
    seed = operator.index(seed)  # numpy integers too; a float or a string raises TypeError
    if not 0 <= seed < 1 << 64:
        raise ValueError(f"seed must be in [0, 2**64), got {seed}")
    return seed


def check_reset_options(options):
    if options:
        raise ValueError(f"turnrl envs take their options when made (make(id, options={{...}})), "
                         f"not at reset; got reset(options={options!r})")


class SeedStream:
    """Gymnasium's seeding: reset(seed=s) fixes the seeds of the resets without a seed after it;
    without any seed they come from the OS's entropy."""

    def __init__(self):
        self._rng = random.Random()

    def next(self, seed):
        if seed is None:
            return self._rng.getrandbits(SEED_BITS)
        seed = check_seed(seed)
        self._rng.seed(seed)
        return seed


class ActionNames:
    """An env's action list: indices and names (as the server lists them) both accepted."""

    def __init__(self, names):
        self.names = list(names)
        self._index = {name: i for i, name in enumerate(self.names)}

    def index(self, action):
        if isinstance(action, str):
            found = self._index.get(action)
            if found is None:
                raise ValueError(f"unknown action {action!r}; valid: {', '.join(self.names)}")
            return found
        try:
            index = None if isinstance(action, bool) else operator.index(action)
        except TypeError:
            index = None
        if index is None or not 0 <= index < len(self.names):
            raise ValueError(f"action must be a name or an index in [0, {len(self.names)}), got {action!r}")
        return index


def step_info(episode, result):
    """The info of a reset or step: the episode's fixed fields with the step's progression."""
    info = dict(episode)
    info["progression"] = result["progression"]
    if "reference_answer" in result:
        info["reference_answer"] = result["reference_answer"]
    return info


def episode_info(result):
    """The fields of a reset reply that hold for the whole episode."""
    info = {key: result[key] for key in ("instruction_prompt", "goal", "max_steps")}
    return info


class TurnrlEnv(_Base):
    """env = TurnrlEnv("babyai/goto"); obs, info = env.reset(); obs, reward, terminated, truncated,
    info = env.step(action). obs is BALROG's text, {"long_term": ..., "short_term": ...}; an action is
    an index or a name from env.action_names. info: the episode's instruction_prompt, goal,
    max_steps and seed, and the progression (plus reference_answer where the env knows one)."""

    metadata = {"render_modes": ["ansi"]}

    def __init__(self, env_id, server=None, options=None, timeout=10.0, connection=None, render_mode=None):
        self._owns_connection = connection is None
        self.connection = connection or connect(server, timeout)
        try:
            created = self.connection.call("create", items=[{"env_id": env_id, "options": options or {}}])
        except Exception:
            if self._owns_connection:
                self.connection.close()
            raise
        result = created["results"][0]
        self.slot = result["slot"]
        self.env_id = result["env_id"]
        self.options = dict(options or {})
        self.actions = ActionNames(action["name"] for action in result["actions"])
        self.action_names = self.actions.names
        self.action_descriptions = {action["name"]: action["description"] for action in result["actions"]}
        self.default_action = result["default_action"]
        self.text_rules = result["text_rules"]
        self.action_space = spaces.discrete(len(self.action_names))
        self.observation_space = spaces.text_observation_space()
        self.render_mode = render_mode
        self._seeds = SeedStream()
        self._episode = None
        self._closed = False
        # Step requests are formatted directly: json.dumps costs more than the rest of the client.
        self._step_format = '{"type":"step","id":%d,"items":[{"slot":' + str(self.slot) + ',"action":%d}]}'

    def reset(self, seed=None, options=None):
        check_reset_options(options)
        seed = self._seeds.next(seed)
        request_id = self.connection.new_id()
        payload = ('{"type":"reset","id":%d,"items":[{"slot":%d,"seed":%d}]}' % (request_id, self.slot, seed)).encode()
        result = self.connection.call_raw(payload, "reset", request_id)["results"][0]
        self._episode = episode_info(result)
        self._episode["seed"] = seed
        return result["observation"], self._info(result)

    def step(self, action):
        if self._episode is None:
            raise RuntimeError("reset() must come first")
        index = self.actions.index(action)
        request_id = self.connection.new_id()
        result = self.connection.call_raw((self._step_format % (request_id, index)).encode(), "step",
                                          request_id)["results"][0]
        return (result["observation"], result["reward"], result["terminated"], result["truncated"],
                self._info(result))

    def render(self):
        """The env's ASCII picture (render mode "ansi")."""
        return self.connection.call("render", slot=self.slot)["text"]

    def close(self):
        if self._closed:
            return
        self._closed = True
        try:
            self.connection.call("close", slots=[self.slot])
        finally:
            if self._owns_connection:
                self.connection.close()

    def _info(self, result):
        return step_info(self._episode, result)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"TurnrlEnv({self.env_id!r}, slot {self.slot} on {self.connection.server})"


def make(env_id, server=None, options=None, timeout=10.0, **option_kwargs):
    """A TurnrlEnv for `env_id` (see env_ids()). server: a ZeroMQ endpoint such as
    "tcp://127.0.0.1:5555", or None to use a local `turnrl env-server` that this process starts
    (found through $TURNRL_BIN or on PATH) and stops at exit. Env options go in `options` or as
    keywords: make("babyai/goto", num_dists=2)."""
    return TurnrlEnv(env_id, server, dict(options or {}, **option_kwargs), timeout)
