"""The vector env: the same trajectories as single envs with the same seeds and actions, autoreset,
one message per reset or step, and clear errors."""
import random
import unittest

from support import ServerModule, turnrl_env

from turnrl_env import ServerError


def setUpModule():
    ServerModule.start(slots=64)


def tearDownModule():
    ServerModule.stop()


class VectorEnv(unittest.TestCase):
    def check_same_as_single_envs(self, env_id, num_envs, steps):
        endpoint = ServerModule.endpoint()
        seeds = [100 + 7 * i for i in range(num_envs)]
        rng = random.Random(5)
        with turnrl_env.make_vec(env_id, num_envs, server=endpoint) as venv:
            singles = [turnrl_env.make(env_id, server=endpoint) for _ in range(num_envs)]
            try:
                obs, infos = venv.reset(seed=seeds)
                for i, env in enumerate(singles):
                    single_obs, single_info = env.reset(seed=seeds[i])
                    self.assertEqual(obs[i], single_obs)
                    self.assertEqual(infos[i], single_info)
                ends = 0
                for _ in range(steps):
                    actions = [rng.randrange(len(venv.action_names)) for _ in range(num_envs)]
                    obs, rewards, terminated, truncated, infos = venv.step(actions)
                    for i, env in enumerate(singles):
                        single_obs, reward, term, trunc, info = env.step(actions[i])
                        self.assertEqual((rewards[i], terminated[i], truncated[i]), (reward, term, trunc))
                        if term or trunc:
                            ends += 1
                            # Autoreset: the ended episode's last outputs, then the next episode's first.
                            self.assertEqual(infos[i]["final_observation"], single_obs)
                            self.assertEqual(infos[i]["final_info"], info)
                            single_obs, info = env.reset(seed=infos[i]["seed"])
                        self.assertEqual(obs[i], single_obs)
                        self.assertEqual(infos[i].get("seed"), info["seed"])
                return ends
            finally:
                for env in singles:
                    env.close()

    def test_babyai_matches_single_envs_across_episode_ends(self):
        self.assertGreater(self.check_same_as_single_envs("babyai/goto", 8, 120), 0)

    def test_babaisai_matches_single_envs(self):
        self.check_same_as_single_envs("babaisai/goto_win-distr_rule", 5, 60)

    def test_crafter_matches_single_envs(self):
        self.check_same_as_single_envs("crafter/balrog", 3, 30)

    def test_one_message_per_step(self):
        with turnrl_env.make_vec("babyai/goto", 16, server=ServerModule.endpoint()) as venv:
            venv.reset(seed=0)
            sent = []
            call_raw = venv.connection.call_raw
            venv.connection.call_raw = lambda payload, kind, request_id: (sent.append(kind),
                                                                          call_raw(payload, kind, request_id))[1]
            for _ in range(5):
                sent.clear()
                _, _, terminated, truncated, _ = venv.step([2] * 16)
                # One step message for all 16; one reset message for those whose episode ended.
                ended = any(terminated) or any(truncated)
                self.assertEqual(sent, ["step", "reset"] if ended else ["step"])

    def test_seeds(self):
        with turnrl_env.make_vec("babaisai/goto_win", 4, server=ServerModule.endpoint()) as venv:
            _, infos = venv.reset(seed=9)
            self.assertEqual([info["seed"] for info in infos], [9, 10, 11, 12])
            _, infos = venv.reset()
            self.assertTrue(all(0 <= info["seed"] < 2**32 for info in infos))
            self.assertEqual(len({info["seed"] for info in infos}), 4)
            self.assertEqual(venv.num_envs, 4)
            self.assertEqual(venv.single_action_space.n, 5)

    def test_bad_input(self):
        endpoint = ServerModule.endpoint()
        with self.assertRaisesRegex(ValueError, "do not fit the server's 64 slots"):
            turnrl_env.make_vec("babyai/goto", 65, server=endpoint)
        with self.assertRaisesRegex(ValueError, "at least 1"):
            turnrl_env.make_vec("babyai/goto", 0, server=endpoint)
        with self.assertRaisesRegex(ServerError, "unknown env id"):
            turnrl_env.make_vec("babyai/nothing", 2, server=endpoint)
        with turnrl_env.make_vec("babyai/goto", 2, server=endpoint) as venv:
            with self.assertRaisesRegex(RuntimeError, "reset"):
                venv.step([0, 0])
            with self.assertRaisesRegex(ValueError, "3 seeds for 2 envs"):
                venv.reset(seed=[1, 2, 3])
            venv.reset()
            with self.assertRaisesRegex(ValueError, "1 actions for 2 envs"):
                venv.step([0])
            with self.assertRaisesRegex(ValueError, "unknown action"):
                venv.step([0, "jump"])


if __name__ == "__main__":
    unittest.main()
