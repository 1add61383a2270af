"""Golden replay through a server: the lines of golden files (../shared/golden/) as Env API
traffic, every reply checked against the recording (docs/env_protocol.md, "Golden replay").

    python3 -m turnrl_env.golden replay [--server tcp://127.0.0.1:5555] --golden FILE...

exits 0 iff every line matches; without --server it starts a local `turnrl env-server`.
"""
import argparse
import gzip
import json
import sys

import zmq

from .connection import Connection, ServerError
from .env import TurnrlEnv
from .server import default_server


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
                    env = TurnrlEnv(reset["env_id"], options=reset["options"], connection=connection)
                    env_key = key
                observation, info = env.reset(seed=reset["seed"])
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    replay = commands.add_parser("replay", help="replay golden files through a server; exit 0 iff all match")
    replay.add_argument("--server", help="endpoint, e.g. tcp://127.0.0.1:5555 (default: start a local server)")
    replay.add_argument("--golden", required=True, nargs="+", help="golden .jsonl.gz files")
    replay.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for each reply")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        connection = Connection(args.server or default_server().endpoint, args.timeout)
        try:
            ok = all([replay_file(connection, path) for path in args.golden])
        finally:
            connection.close()
    except (ServerError, OSError, RuntimeError, ValueError, KeyError, zmq.ZMQError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
