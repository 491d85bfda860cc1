"""A fencecheck client (protocol 1) over redis-py's Lock on Redis.

fencecheck writes one JSON request a line on stdin; we answer one JSON line
on stdout and log to stderr. See docs/client-protocol.md and README.md.
"""

import json
import logging
import socket
import sys
import time
import urllib.error
import urllib.request

import redis
from redis.exceptions import LockError, LockNotOwnedError

logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
log = logging.getLogger("redis-py-client")

# How long one Redis command may take, and connecting to Redis.
COMMAND_TIMEOUT = 0.5


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


class Fail(Exception):
    """The op certainly did not happen."""


class Storage:
    """The fenced storage's HTTP API, with urllib from the standard library."""

    def __init__(self, url):
        self.url = url

    def post(self, path, body, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise Fail("deadline passed before the request left")
        req = urllib.request.Request(
            self.url + path,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json",
                     "X-Deadline-Ms": str(int(left * 1000))},
            method="POST")
        try:
            with urllib.request.urlopen(req, timeout=left) as resp:
                return json.load(resp)
        except urllib.error.HTTPError as e:
            try:
                answer = json.load(e)
            except ValueError:
                answer = {}
            if e.code == 409 and answer.get("error") == "fenced":
                raise Fail("fenced")
            if e.code == 409 and answer.get("definite"):
                raise Fail(answer.get("error", "refused"))
            raise  # anything else: unknown
        except urllib.error.URLError as e:
            if isinstance(e.reason, ConnectionRefusedError):
                raise Fail("storage refused the connection")
            raise

    def read(self, key, token, deadline):
        return self.post("/read", {"key": key, "token": token}, deadline)["value"]

    def write(self, key, token, value, deadline):
        self.post("/write", {"key": key, "token": token, "value": value}, deadline)


class Client:
    def __init__(self, init):
        # The first endpoint: a single Redis server.
        self.redis = redis.Redis.from_url(
            init["service"]["endpoints"][0],
            socket_timeout=COMMAND_TIMEOUT, socket_connect_timeout=COMMAND_TIMEOUT)
        self.redis.ping()
        self.storage = Storage(init["storage"]["url"])
        self.ttl = init["lease_ttl_ms"] / 1000.0
        self.lock = None

    def holds(self):
        """Our own check that the lock is still ours: the lock key still
        holds our random value (one GET)."""
        try:
            return self.lock is not None and self.lock.owned()
        except redis.RedisError as e:
            raise Fail("could not check the lock: %s" % e)  # nothing sent yet

    def acquire(self, key, deadline):
        # The lock's timeout is the lease: Redis expires the key after it.
        lock = self.redis.lock("redis-py-example:" + key, timeout=self.ttl)
        # Stop trying early enough for the last SET (and a reconnect) to end
        # before the deadline.
        budget = deadline - time.monotonic() - 2 * COMMAND_TIMEOUT
        if not lock.acquire(blocking_timeout=max(budget, 0)):
            # Every SET NX was answered "no": the lock was not taken.
            raise Fail("lock not acquired within the deadline")
        self.lock = lock
        return 0  # the lock's value is a random string, not a fencing token

    def release(self):
        lock, self.lock = self.lock, None
        if lock is None:
            raise Fail("no lock held")
        try:
            lock.release()
        except LockNotOwnedError:
            raise Fail("lease-lost")  # the key expired; nothing was deleted
        except LockError as e:
            raise Fail(str(e))

    def op(self, req, deadline):
        f, key = req["f"], req.get("key")
        if f == "acquire":
            return {"token": self.acquire(key, deadline)}
        if f == "read":
            if not self.holds():
                raise Fail("lease-lost")
            return {"value": self.storage.read(key, req.get("token", 0), deadline)}
        if f == "write":
            if not self.holds():
                raise Fail("lease-lost")
            if req.get("stop"):
                # The failpoint: checked, not yet sent. Wait for the word.
                send({"id": req["id"], "type": "checkpoint", "name": "write-checked"})
                sys.stdin.readline()  # {"id":..,"f":"continue"}
            self.storage.write(key, req.get("token", 0), req.get("value", 0), deadline)
            return {}
        if f == "release":
            self.release()
            return {}
        raise Fail("unknown op " + str(f))


def never_sent(e):
    """redis-py's errors while connecting: the command never left."""
    return isinstance(e, (redis.ConnectionError, redis.TimeoutError)) and "connecting to" in str(e)


def main():
    init = json.loads(sys.stdin.readline())
    if init.get("protocol") != 1:
        send({"type": "refuse", "protocol": 1,
              "error": "this client speaks protocol 1, not %s" % init.get("protocol")})
        return
    client = Client(init)
    send({"type": "ready", "protocol": 1})
    for line in iter(sys.stdin.readline, ""):
        req = json.loads(line)
        if req.get("f") == "clock":
            send({"id": req.get("id"), "type": "ok", "value": time.monotonic_ns()})
            continue
        deadline = time.monotonic() + req.get("timeout_ms", 60000) / 1000.0
        answer = {"id": req.get("id"), "call": time.monotonic_ns()}
        try:
            answer.update(client.op(req, deadline), type="ok")
        except Fail as e:
            answer.update(type="fail", error=str(e))
        except redis.RedisError as e:
            answer.update(type="fail" if never_sent(e) else "info", error=str(e))
        except (socket.timeout, TimeoutError) as e:
            answer.update(type="info", error="timeout: %s" % e)
        except Exception as e:  # the outcome is unknown
            log.warning("op %s: %r", req, e)
            answer.update(type="info", error=repr(e))
        answer["return"] = time.monotonic_ns()
        send(answer)


if __name__ == "__main__":
    main()
