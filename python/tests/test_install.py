"""The package installs offline into a virtual environment made with --system-site-packages (pyzmq
from Debian's python3-zmq), and the installed copy, not this source tree, runs an env."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from support import PACKAGE_ROOT


class Install(unittest.TestCase):
    def test_pip_installs_offline_into_a_venv_and_the_installed_package_runs(self):
        # TURNRL_TEST_TMP: ctest's build folder (never a fixed /tmp path).
        root = tempfile.mkdtemp(prefix="turnrl_venv_", dir=os.environ.get("TURNRL_TEST_TMP"))
        try:
            venv = os.path.join(root, "venv")
            subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv], check=True, timeout=300)
            python = os.path.join(venv, "bin", "python")
            # A copy, so that the build's files (build/, *.egg-info) never land in the source tree.
            source = os.path.join(root, "python")
            shutil.copytree(PACKAGE_ROOT, source, ignore=shutil.ignore_patterns("tests", "__pycache__", "*.egg-info"))
            env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
            env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
            pip = subprocess.run([python, "-m", "pip", "install", "--no-index", "--no-build-isolation", source],
                                 capture_output=True, text=True, timeout=600, env=env, cwd=root)
            self.assertEqual(pip.returncode, 0, pip.stdout + pip.stderr)
            script = ("import turnrl_env; env = turnrl_env.make('babyai/goto'); obs, info = env.reset(); "
                      "obs, reward, terminated, truncated, info = env.step('go forward'); env.close(); "
                      "print(turnrl_env.__file__)")
            run = subprocess.run([python, "-c", script], capture_output=True, text=True, timeout=120, env=env,
                                 cwd=root)
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertTrue(run.stdout.strip().startswith(venv), run.stdout)
            shown = subprocess.run([python, "-m", "pip", "show", "turnrl-env"], capture_output=True, text=True,
                                   env=env, timeout=120)
            self.assertIn("Requires: pyzmq", shown.stdout)
        finally:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
