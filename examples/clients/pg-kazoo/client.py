"""A fencecheck client (protocol 1): kazoo's Lock on ZooKeeper, and a
PostgreSQL table written with our own SQL and our own fence check.

Run it with --storage postgres: fencecheck makes the table (key, value,
fence; a row per key), says where it is in init, and reads the final values
itself. See docs/client-protocol.md and README.md.
"""

import json
import logging
import sys
import threading
import time

import psycopg2
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import CancelledError, LockTimeout
from kazoo.retry import KazooRetry

logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
log = logging.getLogger("pg-kazoo")

LOCK_ROOT = "/pg-kazoo/locks"


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


class Fail(Exception):
    """The op certainly did not happen."""


class Table:
    """The registers in PostgreSQL: one row per key, value and fence."""

    def __init__(self, storage):
        self.table = storage["table"]
        try:
            self.conn = psycopg2.connect(storage["url"], password=storage["password"], connect_timeout=10)
        except psycopg2.OperationalError as e:
            raise Fail("cannot connect to the storage: %s" % e)
        self.conn.autocommit = True

    def execute(self, sql, args, deadline):
        left = int((deadline - time.monotonic()) * 1000)
        if left <= 0:
            raise Fail("deadline passed before the statement left")
        cur = self.conn.cursor()
        cur.execute("SET statement_timeout = %d" % left)
        # The table's name comes from fencecheck, not from a user.
        cur.execute(sql.replace("TABLE", self.table), args)
        return cur

    def read(self, key, deadline):
        row = self.execute("SELECT value FROM TABLE WHERE key = %s", (key,), deadline).fetchone()
        return row[0] if row else 0

    def write(self, key, token, value, deadline):
        # THE FENCE CHECK: one statement compares the token with the highest
        # one the row admitted and moves it, so no other write can come
        # between the check and the write...
        cur = self.execute(
            "UPDATE TABLE SET value = %s, fence = %s WHERE key = %s AND fence < %s",
            (value, token, key, token), deadline)
        # ...and the row count says whether it happened. None changed: a
        # holder with a higher token has written; ours did not happen.
        if cur.rowcount != 1:
            raise Fail("fenced")


class Client:
    def __init__(self, init):
        self.zk = KazooClient(
            hosts=",".join(init["service"]["endpoints"]),
            # The session timeout is the lease.
            timeout=init["lease_ttl_ms"] / 1000.0,
            connection_retry=KazooRetry(max_tries=-1, max_delay=1))
        self.zk.start(timeout=20)
        self.table = Table(init["storage"])
        self.process, self.acquires = init["process"], 0
        self.lock = None     # the kazoo Lock this process holds
        self.session = None  # the ZooKeeper session it was taken in
        self.sent = None     # when a stopped write left, after continue

    def holds(self):
        """Our own check that the lock is still ours. It cannot be enough:
        the lease may run out right after it. The table's check is what
        stops a stale write."""
        return (self.lock is not None and self.lock.is_acquired
                and self.zk.state == KazooState.CONNECTED
                and self.zk.client_id is not None
                and self.zk.client_id[0] == self.session)

    def acquire(self, key, deadline):
        budget = deadline - time.monotonic()
        self.acquires += 1
        me = "process %d, acquire %d" % (self.process, self.acquires)
        lock = self.zk.Lock(LOCK_ROOT + "/" + key, identifier=me)
        timer = threading.Timer(budget, lock.cancel)  # a hard deadline
        timer.start()
        try:
            got = lock.acquire(timeout=budget)
        except (LockTimeout, CancelledError):
            got = False
        finally:
            timer.cancel()
        if not got:
            if me in lock.contenders():
                raise RuntimeError("gave up, but our lock node is still queued")
            raise Fail("lock not acquired within the deadline")
        self.lock, self.session = lock, self.zk.client_id[0]
        # The token: the czxid of our lock node, which only grows.
        stat = self.zk.exists(lock.path + "/" + lock.node)
        if stat is None or not self.holds():
            raise RuntimeError("lock node gone right after the acquire")
        return stat.czxid

    def release(self):
        lock, self.lock = self.lock, None
        if lock is None:
            raise Fail("no lock held")
        if self.zk.client_id is None or self.zk.client_id[0] != self.session:
            raise Fail("lease-lost")
        lock.release()

    def op(self, req, deadline):
        f, key = req["f"], req.get("key")
        if f == "acquire":
            return {"token": self.acquire(key, deadline)}
        if f == "read":
            if not self.holds():
                raise Fail("lease-lost")
            return {"value": self.table.read(key, deadline)}
        if f == "write":
            if not self.holds():
                raise Fail("lease-lost")
            if req.get("stop"):
                # The failpoint: checked, not yet sent. Wait for the word.
                send({"id": req["id"], "type": "checkpoint", "name": "write-checked"})
                sys.stdin.readline()  # {"id":..,"f":"continue"}
                self.sent = time.monotonic_ns()
            self.table.write(key, req.get("token", 0), req.get("value", 0), deadline)
            return {}
        if f == "release":
            self.release()
            return {}
        raise Fail("unknown op " + str(f))


def main():
    init = json.loads(sys.stdin.readline())
    storage = init.get("storage", {})
    if init.get("protocol") != 1:
        send({"type": "refuse", "protocol": 1,
              "error": "this client speaks protocol 1, not %s" % init.get("protocol")})
        return
    if storage.get("backend") != "postgres":
        send({"type": "refuse", "protocol": 1,
              "error": "this client writes PostgreSQL itself: run it with --storage postgres"})
        return
    try:
        client = Client(init)
    except Fail as e:
        send({"type": "refuse", "protocol": 1, "error": str(e)})
        return
    send({"type": "ready", "protocol": 1})
    try:
        for line in iter(sys.stdin.readline, ""):
            req = json.loads(line)
            deadline = time.monotonic() + req.get("timeout_ms", 60000) / 1000.0
            if req.get("f") == "clock":
                send({"id": req.get("id"), "type": "ok", "value": time.monotonic_ns()})
                continue
            answer = {"id": req.get("id"), "call": time.monotonic_ns()}
            client.sent = None
            try:
                answer.update(client.op(req, deadline), type="ok")
            except Fail as e:
                answer.update(type="fail", error=str(e))
            except Exception as e:  # the outcome is unknown
                log.warning("op %s: %r", req, e)
                answer.update(type="info", error=repr(e))
            answer["return"] = time.monotonic_ns()
            if client.sent:
                answer["call"] = client.sent  # the stopped write left then
            send(answer)
    finally:
        client.zk.stop()
        client.zk.close()


if __name__ == "__main__":
    main()
