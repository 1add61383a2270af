"""The BALROG adapter: a scripted episode played the way BALROG's evaluator plays it (action text
through check_action_validity, then step), its texts compared with golden files recorded from
BALROG's own envs; and install() pointing BALROG's evaluator at turnrl's envs."""
import gzip
import json
import sys
import types
import unittest

from support import ServerModule, shared_path, turnrl_env

import turnrl_env.balrog as adapter

# (golden file, BALROG env name, BALROG task)
EPISODES = [
    ("golden/babyai/public__BabyAI-MixedTrainLocal-v0__goto.jsonl.gz", "babyai", "BabyAI-MixedTrainLocal-v0/goto"),
    ("golden/babyai/public__BabyAI-MixedTrainLocal-v0__pick_up_seq_go_to.jsonl.gz", "babyai",
     "BabyAI-MixedTrainLocal-v0/pick_up_seq_go_to"),
    ("golden/baba/public__env__goto_win-distr_obj_rule.jsonl.gz", "babaisai", "env/goto_win-distr_obj_rule"),
    ("golden/crafter_text/public/seed_1.jsonl.gz", "crafter", "default"),
]


def setUpModule():
    ServerModule.start()


def tearDownModule():
    ServerModule.stop()


def read_jsonl(path):
    with gzip.open(path, "rt") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def first_episode(path):
    """The golden file's first episode as Env API lines (the server's golden_script translation)."""
    connection = turnrl_env.Connection(ServerModule.endpoint())
    try:
        lines = connection.call("golden_script", records=read_jsonl(path))["lines"]
    finally:
        connection.close()
    end = next((i for i, line in enumerate(lines) if i > 0 and "reset" in line), len(lines))
    return lines[:end]


class BalrogAdapter(unittest.TestCase):
    def test_scripted_episodes_match_the_golden_texts(self):
        for path, env_name, task in EPISODES:
            with self.subTest(task=task):
                self.play(shared_path(path), env_name, task)

    def play(self, path, env_name, task):
        lines = first_episode(path)
        self.assertGreater(len(lines), 5)
        reset = lines[0]["reset"]
        config = {"envs": {"babyai_kwargs": dict(reset["options"]), "crafter_kwargs": {}}}
        evaluator_seed = reset["seed"]
        if env_name == "crafter":
            # BALROG fixes Crafter's world through crafter_kwargs.seed; reset's seed is the evaluator's.
            config["envs"]["crafter_kwargs"]["seed"] = reset["seed"]
            evaluator_seed = 12345
        env = adapter.make_env(env_name, task, config, server=ServerModule.endpoint())
        try:
            self.assertEqual(env.env.env.env_id, reset["env_id"])
            obs, info = env.reset(seed=evaluator_seed)
            self.check_text(obs, lines[0]["expected"], "reset")
            if "instruction_prompt" in lines[0]["expected"]:
                self.assertEqual(env.get_instruction_prompt(), lines[0]["expected"]["instruction_prompt"])
            if env_name == "babyai":
                self.assertEqual(obs["mission"], lines[0]["expected"]["goal"])
                self.assertIn(obs["mission"], env.get_instruction_prompt(instructions=obs["mission"]))
            self.assertEqual(env.max_steps, info["max_steps"])
            for number, line in enumerate(lines[1:], 2):
                # As BALROG's evaluator: the agent's text, checked, then stepped.
                answer = env.env.language_action_space[line["action"]]
                action = env.check_action_validity(answer)
                self.assertEqual(action, answer)
                obs, reward, terminated, truncated, info = env.step(action)
                expected = line["expected"]
                self.check_text(obs, expected, f"line {number}")
                for key in ("reward", "terminated", "truncated"):
                    if key in expected:
                        self.assertEqual({"reward": reward, "terminated": terminated, "truncated": truncated}[key],
                                         expected[key], f"line {number}: {key}")
            self.assertEqual(env.failed_candidates, [])
            self.assertEqual(env.check_action_validity("dance"), env.env.default_action)
            self.assertEqual(env.failed_candidates, ["dance"])
            stats = env.get_stats()
            self.assertTrue(0.0 <= stats["progression"] <= 1.0)
        finally:
            env.close()

    def check_text(self, obs, expected, where):
        want = expected["observation"]
        self.assertEqual(obs["text"]["long_term_context"], want["long_term"], where)
        if "short_term" in want:
            self.assertEqual(obs["text"]["short_term_context"], want["short_term"], where)
        self.assertIsNone(obs["image"])

    def test_task_names(self):
        self.assertEqual(adapter.turnrl_env_id("babyai", "BabyAI-MixedTrainLocal-v0/putnext"), "babyai/putnext")
        self.assertEqual(adapter.turnrl_env_id("babaisai", "env/make_win-distr_obj"), "babaisai/make_win-distr_obj")
        self.assertEqual(adapter.turnrl_env_id("crafter", "default"), "crafter/balrog")
        with self.assertRaisesRegex(ValueError, "not 'nle'"):
            adapter.turnrl_env_id("nle", "NetHackChallenge-v0")
        with self.assertRaisesRegex(ValueError, "BabyAI-GoToObj-v0"):
            adapter.turnrl_env_id("babyai", "BabyAI-GoToObj-v0")

    def test_install_points_balrogs_evaluator_at_turnrl(self):
        # Stand-ins for BALROG's modules: install() must replace the make_env its evaluator calls,
        # and leave the other envs to BALROG's own.
        calls = []
        environments = types.ModuleType("balrog.environments")
        environments.make_env = lambda env_name, task, config, render_mode=None: calls.append(env_name) or "balrog's"
        evaluator = types.ModuleType("balrog.evaluator")
        evaluator.make_env = environments.make_env
        package = types.ModuleType("balrog")
        package.environments, package.evaluator = environments, evaluator
        saved = {name: sys.modules.get(name) for name in ("balrog", "balrog.environments", "balrog.evaluator")}
        sys.modules.update({"balrog": package, "balrog.environments": environments, "balrog.evaluator": evaluator})
        try:
            adapter.install(server=ServerModule.endpoint())
            env = evaluator.make_env("babaisai", "env/goto_win", {})
            try:
                obs, _ = env.reset(seed=0)
                self.assertTrue(obs["text"]["long_term_context"].startswith("Active rules:"))
            finally:
                env.close()
            self.assertEqual(evaluator.make_env("nle", "NetHackChallenge-v0", {}), "balrog's")
            self.assertEqual(calls, ["nle"])
        finally:
            for name, module in saved.items():
                if module is None:
                    sys.modules.pop(name, None)
                else:
                    sys.modules[name] = module


if __name__ == "__main__":
    unittest.main()
