"""n envs of one id stepped together: one message resets or steps every slot (the server's batches)."""
import operator

from . import spaces
from .env import ActionNames, SeedStream, check_reset_options, check_seed, connect, episode_info, step_info


class VecEnv:
    """venv = make_vec("babyai/goto", 64); obs, infos = venv.reset(); obs, rewards, terminated,
    truncated, infos = venv.step(actions). Every value is a list with one entry per env.

    Autoreset in the same step (Gymnasium 0.29's convention): where an episode ends, the returned
    observation is the next episode's first, and that env's info holds the ended episode's
    "final_observation" and "final_info"; rewards, terminated and truncated are the ending step's."""

    def __init__(self, env_id, num_envs, server=None, options=None, timeout=10.0):
        if operator.index(num_envs) < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        self.num_envs = num_envs
        self.connection = connect(server, timeout)
        if num_envs > self.connection.slots:
            self.connection.close()
            raise ValueError(f"{num_envs} envs do not fit the server's {self.connection.slots} slots")
        item = {"env_id": env_id, "options": options or {}}
        try:
            results = self.connection.call("create", items=[item] * num_envs)["results"]
        except Exception:
            self.connection.close()
            raise
        self.env_id = results[0]["env_id"]
        self.slots = [result["slot"] for result in results]
        self.actions = ActionNames(action["name"] for action in results[0]["actions"])
        self.action_names = self.actions.names
        self.default_action = results[0]["default_action"]
        self.single_action_space = spaces.discrete(len(self.action_names))
        self.single_observation_space = spaces.text_observation_space()
        self._seeds = SeedStream()
        self._episodes = None
        self._closed = False
        # '{"slot":S,"action":' per env: a step request is then one join.
        self._step_heads = ['{"slot":%d,"action":' % slot for slot in self.slots]

    def reset(self, seed=None, options=None):
        """seed: None (drawn), an int (env i gets seed + i, as Gymnasium's vector envs do) or a list."""
        check_reset_options(options)
        if seed is None:
            seeds = [self._seeds.next(None) for _ in range(self.num_envs)]
        elif isinstance(seed, (list, tuple)):
            seeds = [check_seed(s) for s in seed]
            if len(seeds) != self.num_envs:
                raise ValueError(f"reset got {len(seeds)} seeds for {self.num_envs} envs")
        else:
            first = self._seeds.next(seed)
            seeds = [check_seed(first + i) for i in range(self.num_envs)]
        results = self._reset_slots(range(self.num_envs), seeds)
        self._episodes = [None] * self.num_envs
        infos = []
        for i, (result, seed_i) in enumerate(zip(results, seeds)):
            self._episodes[i] = dict(episode_info(result), seed=seed_i)
            infos.append(self._info(i, result))
        return [result["observation"] for result in results], infos

    def step(self, actions):
        if self._episodes is None:
            raise RuntimeError("reset() must come first")
        if len(actions) != self.num_envs:
            raise ValueError(f"step got {len(actions)} actions for {self.num_envs} envs")
        index = self.actions.index
        items = ",".join([head + str(index(action)) + "}" for head, action in zip(self._step_heads, actions)])
        request_id = self.connection.new_id()
        payload = ('{"type":"step","id":%d,"items":[%s]}' % (request_id, items)).encode()
        results = self.connection.call_raw(payload, "step", request_id)["results"]
        observations, rewards, terminated, truncated, infos, done = [], [], [], [], [], []
        for i, result in enumerate(results):
            observations.append(result["observation"])
            rewards.append(result["reward"])
            terminated.append(result["terminated"])
            truncated.append(result["truncated"])
            infos.append(self._info(i, result))
            if result["terminated"] or result["truncated"]:
                done.append(i)
        if done:
            seeds = [self._seeds.next(None) for _ in done]
            for i, seed_i, result in zip(done, seeds, self._reset_slots(done, seeds)):
                final_info = infos[i]
                self._episodes[i] = dict(episode_info(result), seed=seed_i)
                infos[i] = self._info(i, result)
                infos[i]["final_observation"] = observations[i]
                infos[i]["final_info"] = final_info
                observations[i] = result["observation"]
        return observations, rewards, terminated, truncated, infos

    def close(self):
        if self._closed:
            return
        self._closed = True
        try:
            self.connection.call("close", slots=self.slots)
        finally:
            self.connection.close()

    def _reset_slots(self, indices, seeds):
        items = ",".join('{"slot":%d,"seed":%d}' % (self.slots[i], seed) for i, seed in zip(indices, seeds))
        request_id = self.connection.new_id()
        payload = ('{"type":"reset","id":%d,"items":[%s]}' % (request_id, items)).encode()
        return self.connection.call_raw(payload, "reset", request_id)["results"]

    def _info(self, i, result):
        return step_info(self._episodes[i], result)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"VecEnv({self.env_id!r}, {self.num_envs} envs on {self.connection.server})"


def make_vec(env_id, num_envs, server=None, options=None, timeout=10.0, **option_kwargs):
    """num_envs envs of `env_id` in one VecEnv; server as in make()."""
    return VecEnv(env_id, num_envs, server, dict(options or {}, **option_kwargs), timeout)
