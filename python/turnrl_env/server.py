"""A local `turnrl env-server` child process, started on demand (make(id) with no server)."""
import atexit
import os
import select
import shutil
import subprocess
import threading
import time

# Slots are cheap (an empty one holds no env); this bounds the envs and the largest batch of one
# local server.
DEFAULT_SLOTS = 4096
# The server frees the slots of a client silent this long; a local server has one client, which may
# wait on a model for minutes, so silence never frees anything (a year).
_NEVER = 365 * 24 * 3600


def turnrl_binary():
    """The `turnrl` executable: $TURNRL_BIN, else `turnrl` on PATH."""
    path = os.environ.get("TURNRL_BIN")
    if path:
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise FileNotFoundError(f"TURNRL_BIN={path} is not an executable file")
        return path
    found = shutil.which("turnrl")
    if not found:
        raise FileNotFoundError("no turnrl executable: put it on PATH or set TURNRL_BIN "
                                "(e.g. TURNRL_BIN=build/tools/turnrl), or pass server='tcp://HOST:PORT'")
    return found


class LocalServer:
    """`turnrl env-server` on a free loopback port, stopped by stop(), at exit, or when this process
    dies in any way: a shell between the two kills the server once our end of its stdin closes."""

    def __init__(self, slots=DEFAULT_SLOTS, binary=None, start_timeout=20.0):
        self.binary = binary or turnrl_binary()
        self.slots = slots
        self.owner_pid = os.getpid()
        # `read` returns when this process closes the pipe or dies (the kernel closes it then too).
        watchdog = '"$0" "$@" </dev/null & read _; kill $! 2>/dev/null; wait $!'
        self._process = subprocess.Popen(
            ["sh", "-c", watchdog, self.binary, "env-server", "--bind", "tcp://127.0.0.1:*", "--slots", str(slots),
             "--client-timeout", str(_NEVER)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.endpoint = self._read_endpoint(start_timeout)
        atexit.register(self.stop)
        # Drain the server's logs so that it never blocks on a full pipe.
        for stream in (self._process.stdout, self._process.stderr):
            threading.Thread(target=stream.read, daemon=True).start()

    def _read_endpoint(self, timeout):
        # The server's first stdout line: "listening on tcp://127.0.0.1:PORT".
        deadline = time.monotonic() + timeout
        line = b""
        out = self._process.stdout
        while not line.endswith(b"\n") and time.monotonic() < deadline:
            ready, _, _ = select.select([out], [], [], 0.1)
            if ready:
                chunk = os.read(out.fileno(), 256)
                if not chunk:
                    break
                line += chunk
        prefix = b"listening on "
        if not line.startswith(prefix):
            self.stop()
            error = self._process.stderr.read().decode(errors="replace").strip()
            raise RuntimeError(f"{self.binary} env-server did not start within {timeout} s: "
                               f"stdout {line.decode(errors='replace')!r}, stderr {error!r}")
        return line[len(prefix):].strip().decode()

    def stop(self):
        if os.getpid() != self.owner_pid:
            return  # a forked child's copy: the server is its parent's to stop
        if self._process.poll() is None:
            try:
                self._process.stdin.close()
                self._process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self._process.kill()
                self._process.wait()


_default = None
_default_lock = threading.Lock()


def default_server():
    """This process's shared local server, started on first use. A forked child (e.g. a BALROG
    evaluator worker) uses its parent's, which lives as long as the parent."""
    global _default
    with _default_lock:
        if _default is None or (_default.owner_pid == os.getpid() and _default._process.poll() is not None):
            _default = LocalServer()
        return _default
