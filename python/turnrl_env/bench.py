"""Env steps/s from Python, per family: one env (batch 1) and a VecEnv, beside the C++ client's
steps/s through the same server (`turnrl bench env-server --server`) and, where its sources are
importable, the Python original's through BALROG's make_env.

    python3 -m turnrl_env.bench [--server ENDPOINT] [--steps N] [--vec 64] [--repeat 3] [--json]

Every side does the same work per step: a random action, the text observation, a new seed (reset)
when an episode ends.
"""
import argparse
import json
import random
import statistics
import subprocess
import sys
import time
import types

from .env import TurnrlEnv
from .server import LocalServer, turnrl_binary
from .vector import VecEnv

# One id per family: BALROG's env and task for the original, and the turnrl id.
FAMILIES = {
    "babyai": ("babyai/goto", "BabyAI-MixedTrainLocal-v0/goto"),
    "babaisai": ("babaisai/goto_win", "env/goto_win"),
    "crafter": ("crafter/balrog", "default"),
}


def python_steps_per_sec(endpoint, env_id, steps):
    rng = random.Random(0)
    with TurnrlEnv(env_id, endpoint) as env:
        env.reset(seed=0)
        n = len(env.action_names)
        start = time.perf_counter()
        for _ in range(steps):
            _, _, terminated, truncated, _ = env.step(rng.randrange(n))
            if terminated or truncated:
                env.reset()
        return steps / (time.perf_counter() - start)


def vector_steps_per_sec(endpoint, env_id, num_envs, steps):
    rng = random.Random(0)
    with VecEnv(env_id, num_envs, endpoint) as venv:
        venv.reset(seed=0)  # autoreset draws the next seeds
        n = len(venv.action_names)
        batches = max(1, -(-steps // num_envs))
        start = time.perf_counter()
        for _ in range(batches):
            venv.step([rng.randrange(n) for _ in range(num_envs)])
        return batches * num_envs / (time.perf_counter() - start)


def cpp_steps_per_sec(binary, endpoint, env_id, batches, steps):
    """{batch: steps/s} of `turnrl bench env-server` through `endpoint`."""
    out = subprocess.run([binary, "bench", "env-server", "--server", endpoint, "--env", env_id, "--steps", str(steps),
                          "--batch", *map(str, batches)], check=True, capture_output=True, text=True, timeout=600)
    report = json.loads(out.stdout.strip().splitlines()[-1])
    return {row["batch"]: row["server_steps_per_sec"] for row in report["results"]}


def original_steps_per_sec(family, task, steps):
    """The Python original through BALROG's make_env (BALROG's default kwargs), or a string saying
    why it cannot run here."""
    try:
        from balrog.environments import make_env
        config = types.SimpleNamespace(envs=types.SimpleNamespace(
            babyai_kwargs={"num_dists": 0}, babaisai_kwargs={"add_ruleset": True},
            crafter_kwargs={"area": [64, 64], "view": [9, 9], "size": [256, 256], "reward": True, "seed": None,
                            "max_episode_steps": 2000}))
        env = make_env(family, task, config)
    except Exception as error:  # a missing module anywhere in BALROG's, gym's or the env's imports
        return f"not importable ({type(error).__name__}: {error})"
    rng = random.Random(0)
    actions = list(env.env.language_action_space)
    env.reset(seed=0)
    start = time.perf_counter()
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(rng.choice(actions))
        if terminated or truncated:
            env.reset(seed=rng.getrandbits(32))
    return steps / (time.perf_counter() - start)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server", help="a running server (default: start a local one)")
    parser.add_argument("--steps", type=int, default=20000, help="env steps per measurement")
    parser.add_argument("--vec", type=int, default=64, help="envs in the vector env (and the C++ batch)")
    parser.add_argument("--families", default=",".join(FAMILIES), help="comma-separated: " + ", ".join(FAMILIES))
    parser.add_argument("--original-steps", type=int, default=2000, help="steps for the Python original")
    parser.add_argument("--repeat", type=int, default=3,
                        help="rounds per family (each side measured once a round, in turn); medians are shown")
    parser.add_argument("--json", action="store_true", help="also print the results as one JSON line")
    args = parser.parse_args(argv)
    families = [name.strip() for name in args.families.split(",") if name.strip()]
    unknown = [name for name in families if name not in FAMILIES]
    if unknown or min(args.steps, args.vec, args.repeat) < 1:
        parser.error(f"unknown families {unknown}" if unknown else "--steps, --vec and --repeat must be positive")

    binary = turnrl_binary()
    local = None if args.server else LocalServer(slots=max(args.vec, 1), binary=binary)
    endpoint = args.server or local.endpoint
    print(f"steps/s through {endpoint}, {args.steps} steps per measurement, median of {args.repeat} rounds; "
          f"Python {sys.version.split()[0]}")
    header = (f"{'family':<9} {'env id':<18} {'py b1':>9} {'c++ b1':>9} {'py/c++':>7} {'py vec' + str(args.vec):>9} "
              f"{'c++ b' + str(args.vec):>9} {'py/c++':>7} {'vec/b1':>7}  original (BALROG's make_env)")
    print(header)
    rows = []
    try:
        for family in families:
            env_id, task = FAMILIES[family]
            # Interleaved rounds, so that a busy spell on the machine hits every side alike.
            rounds = {"py1": [], "pyv": [], "cpp1": [], "cppv": []}
            for _ in range(args.repeat):
                rounds["py1"].append(python_steps_per_sec(endpoint, env_id, args.steps))
                cpp = cpp_steps_per_sec(binary, endpoint, env_id, [1, args.vec], args.steps)
                rounds["cpp1"].append(cpp[1])
                rounds["cppv"].append(cpp[args.vec])
                rounds["pyv"].append(vector_steps_per_sec(endpoint, env_id, args.vec, args.steps))
            py1, pyv, cpp1, cppv = (statistics.median(rounds[key]) for key in ("py1", "pyv", "cpp1", "cppv"))
            original = original_steps_per_sec(family, task, args.original_steps)
            shown = f"{original:.0f}" if isinstance(original, float) else original
            print(f"{family:<9} {env_id:<18} {py1:>9.0f} {cpp1:>9.0f} {py1 / cpp1:>7.2f} {pyv:>9.0f} "
                  f"{cppv:>9.0f} {pyv / cppv:>7.2f} {pyv / py1:>7.1f}  {shown}", flush=True)
            rows.append({"family": family, "env": env_id, "python_batch1": py1, "cpp_batch1": cpp1,
                         "python_vec": pyv, "cpp_vec": cppv, "vec": args.vec, "original": original,
                         "rounds": rounds})
    finally:
        if local:
            local.stop()
    if args.json:
        print(json.dumps({"steps": args.steps, "repeat": args.repeat, "results": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
