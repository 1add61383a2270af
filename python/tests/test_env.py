"""One env: Gymnasium's signatures, seeding (a seedless reset on every registered id), actions by
index and by name, errors, and the local server that make() starts."""
import os
import re
import signal
import subprocess
import sys
import time
import unittest

from support import PACKAGE_ROOT, ServerModule, turnrl_env

from turnrl_env import ServerError


def setUpModule():
    ServerModule.start()


def tearDownModule():
    ServerModule.stop()


def make(env_id, **kwargs):
    return turnrl_env.make(env_id, server=ServerModule.endpoint(), **kwargs)


class GymnasiumApi(unittest.TestCase):
    def test_reset_and_step_signatures(self):
        with make("babyai/goto") as env:
            obs, info = env.reset(seed=3)
            self.assertEqual(set(obs), {"long_term", "short_term"})
            self.assertIsInstance(obs["long_term"], str)
            self.assertTrue(obs["long_term"])
            for key in ("instruction_prompt", "goal", "max_steps", "progression", "seed"):
                self.assertIn(key, info)
            self.assertEqual(info["seed"], 3)
            self.assertIn(info["goal"], info["instruction_prompt"])
            result = env.step(env.action_space.sample())
            self.assertEqual(len(result), 5)
            obs, reward, terminated, truncated, info = result
            self.assertIsInstance(reward, float)
            self.assertIsInstance(terminated, bool)
            self.assertIsInstance(truncated, bool)
            self.assertEqual(info["seed"], 3)

    def test_action_space(self):
        with make("babyai/goto") as env:
            self.assertEqual(env.action_space.n, len(env.action_names))
            self.assertEqual(env.action_names, ["turn left", "turn right", "go forward", "pick up", "drop", "toggle"])
            env.action_space.seed(1)
            samples = {env.action_space.sample() for _ in range(200)}
            self.assertEqual(samples, set(range(env.action_space.n)))
            self.assertTrue(env.action_space.contains(0))
            self.assertFalse(env.action_space.contains(env.action_space.n))

    def test_action_by_name_equals_action_by_index(self):
        with make("babaisai/goto_win") as by_name, make("babaisai/goto_win") as by_index:
            self.assertEqual(by_name.reset(seed=7)[0], by_index.reset(seed=7)[0])
            for index in [1, 2, 2, 3, 4, 0, 1]:
                self.assertEqual(by_name.step(by_name.action_names[index])[:4], by_index.step(index)[:4])

    def test_bad_input_is_refused_clearly(self):
        with make("babyai/goto") as env:
            with self.assertRaisesRegex(RuntimeError, "reset"):
                env.step(0)
            env.reset(seed=0)
            with self.assertRaisesRegex(ValueError, "unknown action 'fly'; valid: turn left"):
                env.step("fly")
            with self.assertRaisesRegex(ValueError, r"index in \[0, 6\)"):
                env.step(6)
            with self.assertRaisesRegex(ValueError, r"index in \[0, 6\)"):
                env.step(True)
            with self.assertRaisesRegex(ValueError, r"seed must be in \[0, 2\*\*64\)"):
                env.reset(seed=-1)
            with self.assertRaises(TypeError):
                env.reset(seed=1.5)
            with self.assertRaisesRegex(ValueError, "options when made"):
                env.reset(options={"num_dists": 2})
        with self.assertRaisesRegex(ServerError, "unknown env id 'chess'"):
            make("chess")
        with self.assertRaisesRegex(ServerError, "unknown option 'nope'"):
            make("babyai/goto", nope=1)

    def test_render(self):
        with make("babyai/goto") as env:
            env.reset(seed=0)
            self.assertGreater(len(env.render().splitlines()), 3)


class Seeding(unittest.TestCase):
    def test_seedless_reset_on_every_env_id(self):
        ids = turnrl_env.env_ids()
        for family in ("babyai/", "babaisai/", "crafter"):
            self.assertTrue(any(env_id.startswith(family) for env_id in ids), family)
        for env_id in ids:
            with self.subTest(env_id=env_id), make(env_id) as env:
                seeds = set()
                for _ in range(3):
                    obs, info = env.reset()
                    self.assertIsInstance(obs["long_term"], str)
                    self.assertTrue(0 <= info["seed"] < 2**32, info["seed"])
                    seeds.add(info["seed"])
                    env.step(env.action_space.sample())
                self.assertGreater(len(seeds), 1, "seedless resets draw new seeds")

    def test_a_drawn_seed_reproduces_its_episode(self):
        with make("babaisai/goto_win-distr_obj") as env:
            obs, info = env.reset()
            again, _ = env.reset(seed=info["seed"])
            self.assertEqual(obs, again)

    def test_a_seeded_reset_fixes_the_seedless_ones_after_it(self):
        def seeds_after(seed):
            with make("babyai/pickup") as env:
                env.reset(seed=seed)
                return [env.reset()[1]["seed"] for _ in range(4)]
        self.assertEqual(seeds_after(11), seeds_after(11))
        self.assertNotEqual(seeds_after(11), seeds_after(12))

    def test_seeds_past_numpy_legacy_range_are_still_refused_for_babaisai(self):
        with make("babaisai/goto_win") as env:
            with self.assertRaisesRegex(ServerError, r"below 2\*\*32"):
                env.reset(seed=2**32)


class GymnasiumIds(unittest.TestCase):
    # gymnasium.envs.registration's id grammar (gymnasium itself is not installed here).
    ID = re.compile(r"^(?:(?P<namespace>[\w:-]+)\/)?(?:(?P<name>[\w:.-]+?))(?:-v(?P<version>\d+))?$")

    def test_every_env_id_has_a_distinct_valid_gymnasium_id(self):
        from turnrl_env.gym import gymnasium_id

        self.assertEqual(gymnasium_id("babyai/goto"), "turnrl/babyai-goto-v0")
        gym_ids = [gymnasium_id(env_id) for env_id in turnrl_env.env_ids()]
        self.assertEqual(len(set(gym_ids)), len(gym_ids))
        for gym_id in gym_ids:
            match = self.ID.match(gym_id)
            self.assertIsNotNone(match, gym_id)
            self.assertEqual((match["namespace"], match["version"]), ("turnrl", "0"), gym_id)


class LocalServer(unittest.TestCase):
    def test_make_without_server_starts_one_and_exit_stops_it(self):
        # A child process makes an env with no server, prints the endpoint, and exits.
        script = ("import turnrl_env; env = turnrl_env.make('babyai/goto'); obs, info = env.reset(); env.step(0); "
                  "print(env.connection.server, flush=True)")
        child = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                               env=dict(os.environ, PYTHONPATH=PACKAGE_ROOT))
        self.assertEqual(child.returncode, 0, child.stderr)
        self.assertTrue(child.stdout.startswith("tcp://127.0.0.1:"), child.stdout)
        self.assert_gone(child.stdout.strip())

    def test_a_killed_client_takes_its_server_with_it(self):
        script = ("import sys, time, turnrl_env; env = turnrl_env.make('crafter/balrog'); "
                  "print(env.connection.server, flush=True); time.sleep(60)")
        child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                                 env=dict(os.environ, PYTHONPATH=PACKAGE_ROOT))
        try:
            endpoint = child.stdout.readline().strip()
            self.assertTrue(endpoint.startswith("tcp://127.0.0.1:"), endpoint)
            connection = turnrl_env.Connection(endpoint, timeout=5)
            connection.ping()  # alive while the client lives
            connection.close()
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=10)
            child.stdout.close()
        self.assert_gone(endpoint)

    def test_a_forked_child_shares_its_parents_server(self):
        # As BALROG's evaluator workers: the child's envs use the parent's server, and the child's
        # exit (atexit included) leaves it serving the parent.
        script = ("import os, sys, turnrl_env\n"
                  "env = turnrl_env.make('babyai/goto'); env.reset(seed=1)\n"
                  "pid = os.fork()\n"
                  "if pid == 0:\n"
                  "    child = turnrl_env.make('babaisai/goto_win'); child.reset(); child.close()\n"
                  "    print(child.connection.server, flush=True); sys.exit(0)\n"
                  "os.waitpid(pid, 0)\n"
                  "env.step(0); print(env.connection.server, flush=True)\n")
        run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                             env=dict(os.environ, PYTHONPATH=PACKAGE_ROOT))
        self.assertEqual(run.returncode, 0, run.stderr)
        child, parent = run.stdout.split()
        self.assertEqual(child, parent)
        self.assert_gone(parent)

    def test_a_missing_binary_is_named(self):
        saved = os.environ.get("TURNRL_BIN")
        os.environ["TURNRL_BIN"] = "/nonexistent/turnrl"
        try:
            with self.assertRaisesRegex(FileNotFoundError, "TURNRL_BIN=/nonexistent/turnrl"):
                turnrl_env.LocalServer()
        finally:
            if saved is None:
                del os.environ["TURNRL_BIN"]
            else:
                os.environ["TURNRL_BIN"] = saved

    def assert_gone(self, endpoint):
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                turnrl_env.Connection(endpoint, timeout=0.3).close()
            except ServerError:
                return
        self.fail(f"the server at {endpoint} still answers")


if __name__ == "__main__":
    unittest.main()
