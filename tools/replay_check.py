#!/usr/bin/env python3
"""Replays the first iterations of every shipped config on two builds and compares them.

A change meant to keep behaviour (a refactor, a config migration) must leave every metric equal:
each config is shortened the same way for both builds (a few PPO iterations, a small format stage
and small evaluations), run by each build's own `turnrl`, and the runs' metrics.jsonl lines are
compared field by field, timings left out, with the final models' weights byte for byte. An eval
config's summary is compared the same way.

  tools/replay_check.py --base-rev REV                 # builds REV in WORK/base, compares with build/
  tools/replay_check.py --base-bin B/turnrl --base-configs B/configs

Each build reads its own copy of a config, so a key renamed between them is followed. Exit status
1 when any config differs.
"""
import argparse
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Wall-clock figures differ from run to run; everything else must be equal.
TIMING_KEYS = {"minutes", "seconds", "turns_per_s", "rollout_share", "reward_wait_s", "scorer_s", "process_s", "elapsed_s",
               "wall_seconds", "turns_per_second", "episodes_per_second"}


def shorten_train(config, work, iterations):
    """The config cut down to `iterations` PPO iterations with its stages kept but small."""
    model = config.setdefault("model", {})
    if not (ROOT / str(model.get("path", "")) / "config.json").exists():
        model["path"] = str(work / "models" / "tiny")  # a model folder that is not here: the tiny preset
        model["preset"] = "tiny"
    else:
        model["path"] = str(ROOT / model["path"])
    if model.get("device", "cpu") != "cpu" and shutil.which("nvidia-smi") is None:
        # A GPU config on a machine without one: the same steps on the CPU, at a CPU's batch shape.
        model["device"] = "cpu"
        model["threads"] = 1
        sampling = config.setdefault("sampling", {})
        sampling["max_response_tokens"] = min(int(sampling.get("max_response_tokens", 1)), 32)
        env = config.setdefault("env", {})
        if int(env.get("group_size", 1)) == 1:
            env["n_env"] = min(int(env.get("n_env", 32)), 16)
            ppo = config.setdefault("ppo", {})
            ppo["minibatch"] = min(int(ppo.get("minibatch", 128)), env["n_env"] * int(env.get("e_len", 16)))
    ppo = config.get("ppo") or {}
    if "critic_warmup_iterations" in ppo:
        ppo["critic_warmup_iterations"] = min(int(ppo["critic_warmup_iterations"]), 2)
    fmt = config.get("format")
    if fmt and fmt.get("model"):
        fmt["model"] = str(work / "models" / "format")
        fmt["episodes"] = min(int(fmt.get("episodes", 200)), 8)
        fmt["epochs"] = 1
        if int(fmt.get("dagger_rounds", 0)) > 0:
            fmt["dagger_rounds"] = 1
            fmt["dagger_episodes"] = min(int(fmt.get("dagger_episodes", 8)), 8)
    reward = config.get("reward") or {}
    if reward.get("process"):
        # A streaming scorer batches the replies waiting when it wakes, so its float sums follow the
        # timing; scored after each collection, its batches are the same on every run.
        reward["streaming"] = False
    run = config.setdefault("run", {})
    run.update({"iterations": iterations, "minutes": 0, "total_minutes": 0, "out": str(work / "run"), "eval_every": iterations,
                "checkpoint_every": iterations})
    run["eval_episodes"] = min(int(run.get("eval_episodes", 200)), 2)
    if int(run.get("final_eval_episodes", 0)) > 0:
        run["final_eval_episodes"] = min(int(run["final_eval_episodes"]), 2)
    return config


def shorten_eval(config, work):
    """An eval sweep cut down to two episodes per task, its output in `work`."""
    for key in ("episodes_per_task", "episodes"):
        if key in config:
            config[key] = min(int(config[key]), 2)
    for key in ("output_dir", "out"):
        if key in config:
            config[key] = str(work / "eval")
    return config


def run_turnrl(binary, args, log):
    with open(log, "w") as out:
        done = subprocess.run([str(binary)] + args, stdout=out, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        raise RuntimeError(f"{binary} {' '.join(args)} failed ({done.returncode}); see {log}")


def without_timings(value):
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def first_difference(a, b, path=""):
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{path}.{key}: only in {'new' if key not in a else 'base'}"
            found = first_difference(a[key], b[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} against {len(b)} entries"
        for i, (x, y) in enumerate(zip(a, b)):
            found = first_difference(x, y, f"{path}[{i}]")
            if found:
                return found
        return None
    return None if a == b else f"{path}: base {a!r}, new {b!r}"


def read_jsonl(path):
    return [without_timings(json.loads(line)) for line in open(path) if line.strip()]


def weights_digest(folder):
    digest = hashlib.sha256()
    for file in sorted(pathlib.Path(folder).glob("*.safetensors")):
        digest.update(file.read_bytes())
    return digest.hexdigest()


def eval_outputs(folder):
    """Every JSON and JSONL file an eval sweep wrote, timings left out, by relative path."""
    outputs = {}
    for file in sorted(pathlib.Path(folder).rglob("*")):
        if file.suffix == ".jsonl":
            outputs[str(file.relative_to(folder))] = read_jsonl(file)
        elif file.suffix == ".json":
            outputs[str(file.relative_to(folder))] = without_timings(json.load(open(file)))
    return outputs


def replay(name, builds, work, args):
    """Runs config `name` on both builds; returns (equal, what was compared or the first difference)."""
    results = {}
    for side, (binary, configs) in builds.items():
        side_work = work / name.replace(".yaml", "") / side
        side_work.mkdir(parents=True, exist_ok=True)
        config = yaml.safe_load(open(configs / name))
        is_eval = "models" in config
        config = shorten_eval(config, side_work) if is_eval else shorten_train(config, side_work, args.iterations)
        path = side_work / name
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        if is_eval:
            run_turnrl(binary, ["eval", "--config", str(path)], side_work / "log.txt")
            results[side] = {"outputs": eval_outputs(side_work / "eval")}
        else:
            command = ["train", "--config", str(path)] + (["--nproc", str(args.nproc)] if args.nproc > 1 else [])
            run_turnrl(binary, command, side_work / "log.txt")
            results[side] = {"metrics": read_jsonl(side_work / "run" / "metrics.jsonl"),
                             "model": weights_digest(side_work / "run" / "model")}
    difference = first_difference(results["base"], results["new"])
    if difference:
        return False, difference
    if "metrics" in results["new"]:
        lines = results["new"]["metrics"]
        kinds = {}
        for line in lines:
            kinds[line.get("type", "?")] = kinds.get(line.get("type", "?"), 0) + 1
        return True, f"{len(lines)} metric lines equal ({', '.join(f'{n} {k}' for k, n in kinds.items())}), same final weights"
    return True, f"{len(results['new']['outputs'])} output files equal"


def build_base(rev, work):
    tree = work / "base-src"
    if not tree.exists():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), rev], check=True)
    launcher = ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"] if shutil.which("ccache") else []
    subprocess.run(["cmake", "-S", str(tree), "-B", str(tree / "build"), "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                    f"-DTURNRL_SHARED_DIR={ROOT.parent / 'shared'}", "-DBUILD_TESTING=OFF"] + launcher, check=True)
    subprocess.run(["cmake", "--build", str(tree / "build"), "--target", "turnrl", "-j", str(os.cpu_count())], check=True)
    return tree / "build" / "tools" / "turnrl", tree / "configs"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-rev", help="the commit to compare with (built in WORK/base-src)")
    parser.add_argument("--base-bin", type=pathlib.Path, help="an existing turnrl of the base commit")
    parser.add_argument("--base-configs", type=pathlib.Path, help="the base commit's configs/ (with --base-bin)")
    parser.add_argument("--new-bin", type=pathlib.Path, default=ROOT / "build" / "tools" / "turnrl")
    parser.add_argument("--work", type=pathlib.Path, default=ROOT / "runs" / "replay-check")
    parser.add_argument("--iterations", type=int, default=2, help="PPO iterations per run")
    parser.add_argument("--nproc", type=int, default=1, help="ranks per training run")
    parser.add_argument("configs", nargs="*", help="config file names (default: every configs/*.yaml)")
    args = parser.parse_args()
    if bool(args.base_rev) == bool(args.base_bin):
        parser.error("give --base-rev or --base-bin (with --base-configs)")
    args.work = args.work.resolve()
    base = build_base(args.base_rev, args.work) if args.base_rev else (args.base_bin, args.base_configs)
    builds = {"base": base, "new": (args.new_bin, ROOT / "configs")}
    names = args.configs or sorted(p.name for p in (ROOT / "configs").glob("*.yaml"))
    failed = 0
    for name in names:
        try:
            equal, what = replay(name, builds, args.work / f"nproc{args.nproc}", args)
        except (RuntimeError, OSError) as error:
            equal, what = False, str(error)
        failed += not equal
        print(f"{'same' if equal else 'DIFFERS'}  {name}: {what}", flush=True)
    print(f"{len(names) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
