"""python3 -m turnrl_env.bench, briefly: every family measured on each side, figures positive."""
import json
import os
import subprocess
import sys
import unittest

from support import PACKAGE_ROOT


class Bench(unittest.TestCase):
    def test_a_short_run_measures_every_family(self):
        run = subprocess.run([sys.executable, "-m", "turnrl_env.bench", "--steps", "600", "--vec", "8",
                              "--original-steps", "50", "--repeat", "1", "--json"], capture_output=True, text=True, timeout=600,
                             env=dict(os.environ, PYTHONPATH=PACKAGE_ROOT))
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        lines = run.stdout.strip().splitlines()
        report = json.loads(lines[-1])
        self.assertEqual([row["family"] for row in report["results"]], ["babyai", "babaisai", "crafter"])
        for row in report["results"]:
            for key in ("python_batch1", "cpp_batch1", "python_vec", "cpp_vec"):
                self.assertGreater(row[key], 0, (row["family"], key))
            # A number where BALROG's sources import, else the reason.
            self.assertTrue(isinstance(row["original"], float) or "not importable" in row["original"])
        self.assertTrue(any(line.startswith("babyai ") for line in lines), run.stdout)

    def test_bad_arguments_are_refused(self):
        run = subprocess.run([sys.executable, "-m", "turnrl_env.bench", "--families", "chess"], capture_output=True,
                             text=True, timeout=60, env=dict(os.environ, PYTHONPATH=PACKAGE_ROOT))
        self.assertEqual(run.returncode, 2)
        self.assertIn("unknown families ['chess']", run.stderr)


if __name__ == "__main__":
    unittest.main()
