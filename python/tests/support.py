"""What the Python tests share: paths (ctest passes them in the environment) and one local server
per test module."""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_ROOT = os.path.dirname(HERE)  # python/, the folder pip installs
sys.path.insert(0, PACKAGE_ROOT)

import turnrl_env  # noqa: E402

SHARED = os.environ.get("TURNRL_SHARED_DIR", os.path.join(os.path.dirname(PACKAGE_ROOT), "..", "shared"))


def shared_path(relative):
    path = os.path.join(SHARED, relative)
    if not os.path.exists(path):
        raise unittest.SkipTest(f"shared test data missing: {path}")
    return path


class ServerModule:
    """setUpModule/tearDownModule of a module whose tests share one `turnrl env-server`."""

    server = None

    @classmethod
    def start(cls, slots=256):
        cls.server = turnrl_env.LocalServer(slots=slots)

    @classmethod
    def stop(cls):
        if cls.server:
            cls.server.stop()
            cls.server = None

    @classmethod
    def endpoint(cls):
        return cls.server.endpoint
