"""The env ids a turnrl build serves, as `turnrl envs` lists them."""
import functools
import subprocess

from .server import turnrl_binary


@functools.lru_cache(maxsize=None)
def _ids(binary):
    listed = subprocess.run([binary, "envs"], check=True, capture_output=True, text=True, timeout=60)
    return tuple(line.strip() for line in listed.stdout.splitlines() if line.strip())


def env_ids(binary=None):
    """Every registered env id (e.g. "babyai/goto", "babaisai/goto_win", "crafter/balrog")."""
    return list(_ids(binary or turnrl_binary()))
