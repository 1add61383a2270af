"""One client connection to a turnrl env server (the wire protocol: docs/env_protocol.md)."""
import json

import zmq

PROTOCOL_VERSIONS = [1]


class ServerError(RuntimeError):
    """An error reply from the server, or no reply within the timeout."""


class Connection:
    """One DEALER socket to a server; one request at a time. Every call waits at most `timeout`
    seconds, so a dead server raises ServerError instead of hanging; late replies are dropped."""

    def __init__(self, server, timeout=10.0):
        self.server = server
        self.timeout = timeout
        # One context per process is enough for any number of connections (each owns a socket).
        self._socket = zmq.Context.instance().socket(zmq.DEALER)
        self._socket.setsockopt(zmq.LINGER, 0)
        # A blocking recv with a timeout: one call per reply where poll-then-recv takes two.
        self._socket.setsockopt(zmq.RCVTIMEO, max(1, int(timeout * 1000)))
        self._socket.connect(server)
        self._next_id = 0
        try:
            hello = self.call("hello", versions=PROTOCOL_VERSIONS)
        except ServerError:
            self._socket.close()
            raise
        self.version = hello["version"]
        self.slots = hello["slots"]

    def call(self, message_type, **fields):
        """Sends one request built from `fields` and returns the reply object."""
        self._next_id += 1
        message = dict(fields, type=message_type, id=self._next_id)
        return self.call_raw(json.dumps(message, separators=(",", ":")).encode(), message_type, self._next_id)

    def new_id(self):
        """An id for a request the caller encodes itself (see call_raw)."""
        self._next_id += 1
        return self._next_id

    def call_raw(self, payload, message_type, request_id):
        """Sends an already encoded request (bytes) whose id is `request_id`; returns the reply.
        The hot paths (reset, step) format their requests directly: json.dumps costs more."""
        self._socket.send(payload)
        while True:
            try:
                raw = self._socket.recv()
            except zmq.Again:
                raise ServerError(f"env server {self.server}: no reply to '{message_type}' within "
                                  f"{self.timeout} s (is it running?)") from None
            reply = json.loads(raw)
            if reply.get("id") != request_id:
                continue  # a late reply to a request that timed out (each wait is bounded by the timeout)
            reply_type = reply.get("type")
            if reply_type == "error":
                raise ServerError(f"env server: {reply.get('message')}")
            expected = "pong" if message_type == "ping" else message_type
            if reply_type != expected:
                raise ServerError(f"expected a '{expected}' reply, got '{reply_type}'")
            return reply

    def ping(self):
        """Heartbeat: proves the server alive and keeps this client's slots from being dropped."""
        self.call("ping")

    def close(self):
        if not self._socket.closed:
            self._socket.close()
