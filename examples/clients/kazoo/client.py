"""A fencecheck client (protocol 1) over kazoo's Lock recipe on ZooKeeper.

fencecheck writes one JSON request a line on stdin; we answer one JSON line
on stdout and log to stderr. See docs/client-protocol.md and README.md.
"""

import json
import logging
import socket
import sys
import threading
import time
import urllib.error
import urllib.request

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import CancelledError, LockTimeout
from kazoo.retry import KazooRetry

logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
log = logging.getLogger("kazoo-client")

LOCK_ROOT = "/kazoo-example/locks"


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
        self.zk = KazooClient(
            hosts=",".join(init["service"]["endpoints"]),
            # The session timeout is the lease: a holder the ensemble has not
            # heard from for this long loses its lock node.
            timeout=init["lease_ttl_ms"] / 1000.0,
            connection_retry=KazooRetry(max_tries=-1, max_delay=1))
        self.zk.start(timeout=20)
        self.storage = Storage(init["storage"]["url"])
        self.process, self.acquires = init["process"], 0
        self.lock = None     # the kazoo Lock this process holds
        self.session = None  # the ZooKeeper session it was taken in

    def holds(self):
        """Our own check that the lock is still ours: the lock says so, the
        client is connected, and in the session the lock was taken in (a
        new session means the old one expired and its lock node with it)."""
        return (self.lock is not None and self.lock.is_acquired
                and self.zk.state == KazooState.CONNECTED
                and self.zk.client_id is not None
                and self.zk.client_id[0] == self.session)

    def acquire(self, key, deadline):
        budget = deadline - time.monotonic()
        self.acquires += 1
        me = "process %d, acquire %d" % (self.process, self.acquires)
        lock = self.zk.Lock(LOCK_ROOT + "/" + key, identifier=me)
        # kazoo's timeout bounds each wait, not the whole call: cancel()
        # makes the deadline hard.
        timer = threading.Timer(budget, lock.cancel)
        timer.start()
        try:
            got = lock.acquire(timeout=budget)
        except (LockTimeout, CancelledError):
            got = False
        finally:
            timer.cancel()
        if not got:
            # kazoo deletes its lock node before giving up, but only on a
            # best-effort basis: fail only once we see it is gone.
            if me in lock.contenders():
                raise RuntimeError("gave up, but our lock node is still queued")
            raise Fail("lock not acquired within the deadline")
        self.lock, self.session = lock, self.zk.client_id[0]
        # The token: the czxid of our lock node (see README.md).
        stat = self.zk.exists(lock.path + "/" + lock.node)
        if stat is None or not self.holds():
            raise RuntimeError("lock node gone right after the acquire")
        return stat.czxid

    def release(self):
        lock, self.lock = self.lock, None
        if lock is None:
            raise Fail("no lock held")
        if self.zk.client_id is None or self.zk.client_id[0] != self.session:
            raise Fail("lease-lost")  # the node went with the old session
        lock.release()

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


def main():
    init = json.loads(sys.stdin.readline())
    if init.get("protocol") != 1:
        send({"type": "refuse", "protocol": 1,
              "error": "this client speaks protocol 1, not %s" % init.get("protocol")})
        return
    client = Client(init)
    send({"type": "ready", "protocol": 1})
    try:
        for line in iter(sys.stdin.readline, ""):
            req = json.loads(line)
            deadline = time.monotonic() + req.get("timeout_ms", 60000) / 1000.0
            answer = {"id": req.get("id"), "call": time.monotonic_ns()}
            if req.get("f") == "clock":
                send({"id": req.get("id"), "type": "ok", "value": time.monotonic_ns()})
                continue
            try:
                answer.update(client.op(req, deadline), type="ok")
            except Fail as e:
                answer.update(type="fail", error=str(e))
            except (socket.timeout, TimeoutError) as e:
                answer.update(type="info", error="timeout: %s" % e)
            except Exception as e:  # the outcome is unknown
                log.warning("op %s: %r", req, e)
                answer.update(type="info", error=repr(e))
            answer["return"] = time.monotonic_ns()
            send(answer)
    finally:
        client.zk.stop()
        client.zk.close()


if __name__ == "__main__":
    main()
