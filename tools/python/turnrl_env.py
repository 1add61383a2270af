#!/usr/bin/env python3
"""Gymnasium-style client of a turnrl env server (protocol: docs/env_protocol.md).

Needs only pyzmq (Debian: python3-zmq) and the standard library.

    env = TurnrlEnv("tcp://127.0.0.1:5555", "babyai/goto")
    obs, info = env.reset(seed=0)   # obs: BALROG's text, {"long_term": ..., "short_term": ...}
    obs, reward, terminated, truncated, info = env.step("go forward")   # an action name or index
    env.close()

As a command, replays golden files through a server and exits 0 iff every line matches:

    python3 tools/python/turnrl_env.py replay --server tcp://127.0.0.1:5555 --golden FILE...
"""
import argparse
import gzip
import json
import random
import sys
import time

import zmq

PROTOCOL_VERSIONS = [1]


class ServerError(RuntimeError):
    """An error reply from the server, or no reply within the timeout."""


class Connection:
    """One DEALER socket to a server; one request at a time. Every call waits at most `timeout`
    seconds, so a dead server raises ServerError instead of hanging; late replies are dropped."""

    def __init__(self, server, timeout=10.0):
        self.server = server
        self.timeout = timeout
        self._context = zmq.Context()
        self._socket = self._context.socket(zmq.DEALER)
        self._socket.setsockopt(zmq.LINGER, 0)
        self._socket.connect(server)
        self._next_id = 0
        hello = self.call("hello", versions=PROTOCOL_VERSIONS)
        self.version = hello["version"]
        self.slots = hello["slots"]

    def call(self, message_type, **fields):
        self._next_id += 1
        request_id = self._next_id
        self._socket.send(json.dumps(dict(fields, type=message_type, id=request_id)).encode())
        deadline = time.monotonic() + self.timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ServerError(f"env server {self.server}: no reply to '{message_type}' within "
                                  f"{self.timeout} s (is it running?)")
            if not self._socket.poll(int(left * 1000) + 1):
                continue
            reply = json.loads(self._socket.recv())
            if reply.get("id") != request_id:
                continue  # a late reply to a request that timed out
            if reply.get("type") == "error":
                raise ServerError(f"env server: {reply.get('message')}")
            expected = "pong" if message_type == "ping" else message_type
            if reply.get("type") != expected:
                raise ServerError(f"expected a '{expected}' reply, got '{reply.get('type')}'")
            return reply

    def ping(self):
        """Heartbeat: proves the server alive and keeps this client's slots from being dropped."""
        self.call("ping")

    def close(self):
        self._socket.close()
        self._context.term()


class TurnrlEnv:
    """One env in a server slot, with Gymnasium's reset/step signatures.

    info holds the episode's instruction_prompt, goal and max_steps, the action names
    (`actions`) with their descriptions, the default action and the progression."""

    def __init__(self, server, env_id, options=None, timeout=10.0, connection=None):
        self._owns_connection = connection is None
        self.connection = connection or Connection(server, timeout)
        try:
            created = self.connection.call("create", items=[{"env_id": env_id, "options": options or {}}])
        except ServerError:
            if self._owns_connection:
                self.connection.close()
            raise
        result = created["results"][0]
        self.slot = result["slot"]
        self.env_id = result["env_id"]
        self.action_names = [action["name"] for action in result["actions"]]
        self.action_descriptions = {action["name"]: action["description"] for action in result["actions"]}
        self.default_action = result["default_action"]
        self.text_rules = result["text_rules"]
        self._episode = None

    def action_index(self, action):
        """An action index, or an action name as the action list spells it."""
        if isinstance(action, str):
            if action not in self.action_names:
                raise ValueError(f"unknown action {action!r}; valid: {', '.join(self.action_names)}")
            return self.action_names.index(action)
        if isinstance(action, bool) or not isinstance(action, int) or not 0 <= action < len(self.action_names):
            raise ValueError(f"action must be a name or an index in [0, {len(self.action_names)}), got {action!r}")
        return action

    def reset(self, seed=None):
        if seed is None:
            seed = random.getrandbits(63)
        result = self.connection.call("reset", items=[{"slot": self.slot, "seed": seed}])["results"][0]
        self._episode = {key: result[key] for key in ("instruction_prompt", "goal", "max_steps")}
        return result["observation"], self._info(result)

    def step(self, action):
        if self._episode is None:
            raise RuntimeError("reset() must come first")
        index = self.action_index(action)
        result = self.connection.call("step", items=[{"slot": self.slot, "action": index}])["results"][0]
        return (result["observation"], result["reward"], result["terminated"], result["truncated"],
                self._info(result))

    def render(self):
        return self.connection.call("render", slot=self.slot)["text"]

    def close(self):
        try:
            self.connection.call("close", slots=[self.slot])
        finally:
            if self._owns_connection:
                self.connection.close()

    def _info(self, result):
        return dict(self._episode, actions=list(self.action_names), action_descriptions=self.action_descriptions,
                    default_action=self.default_action, progression=result["progression"])


def first_difference(expected, got, path=""):
    """The first field of `expected` missing from or different in `got` (dicts compare as
    subsets), as (path, expected, got); None when all match. Mirrors envs::first_expected_difference."""
    if isinstance(expected, dict) and isinstance(got, dict):
        for key, value in expected.items():
            field = f"{path}.{key}" if path else key
            if key not in got:
                return field, value, "(missing)"
            diff = first_difference(value, got[key], field)
            if diff:
                return diff
        return None
    numbers = (int, float)
    if isinstance(expected, bool) or isinstance(got, bool) or not isinstance(expected, numbers) \
            or not isinstance(got, numbers):
        same = type(expected) is type(got) and expected == got
    else:
        same = expected == got
    return None if same else (path, expected, got)


def read_jsonl(path):
    with open(path, "rb") as raw:
        gzipped = raw.read(2) == b"\x1f\x8b"
    with (gzip.open(path, "rt") if gzipped else open(path)) as lines:
        return [json.loads(line) for line in lines if line.strip()]


def replay_file(connection, path):
    """Replays one golden file through the server; True iff every reachable line matches."""
    script = connection.call("golden_script", records=read_jsonl(path))
    lines = script["lines"]
    env, env_key = None, None
    try:
        for number, line in enumerate(lines, 1):
            if "reset" in line:
                reset = line["reset"]
                key = (reset["env_id"], json.dumps(reset["options"], sort_keys=True))
                if key != env_key:
                    if env:
                        env.close()
                    env = TurnrlEnv(connection.server, reset["env_id"], reset["options"], connection=connection)
                    env_key = key
                observation, info = env.reset(reset["seed"])
                got = dict(info, observation=observation)
            else:
                # By name, as an agent would send it.
                observation, reward, terminated, truncated, info = env.step(env.action_names[line["action"]])
                got = dict(info, observation=observation, reward=reward, terminated=terminated, truncated=truncated)
            diff = first_difference(line["expected"], got)
            if diff:
                field, want, have = diff
                print(f"{path}: mismatch at line {number}, field {field}\n  expected: {want!r}\n  got:      {have!r}")
                return False
    finally:
        if env:
            env.close()
    if not lines:
        print(f"{path}: no line of this golden format can be replayed through the Env API")
        return False
    note = "" if len(lines) == script["golden_lines"] else " (the rest is beyond what Env::reset(seed) reaches)"
    print(f"{path}: {len(lines)}/{script['golden_lines']} golden lines replayed, all match{note}")
    return True


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    replay = commands.add_parser("replay", help="replay golden files through a server; exit 0 iff all match")
    replay.add_argument("--server", required=True, help="endpoint, e.g. tcp://127.0.0.1:5555")
    replay.add_argument("--golden", required=True, nargs="+", help="golden .jsonl.gz files")
    replay.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for each reply")
    args = parser.parse_args(argv)
    try:
        connection = Connection(args.server, args.timeout)
        try:
            ok = all([replay_file(connection, path) for path in args.golden])
        finally:
            connection.close()
    except (ServerError, OSError, ValueError, KeyError, zmq.ZMQError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
