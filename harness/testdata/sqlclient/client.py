"""A test client (protocol 1): kazoo's Lock on ZooKeeper, and a PostgreSQL
table written with the client's own SQL fence check, right or broken as
argv[1] says. The harness's Docker test and docs/client-protocol.md use its
variants as known answers:

  conditional         UPDATE ... WHERE key = k AND fence < token, and one row
                      must have changed (valid)
  select-then-update  SELECT fence, compare, then an UPDATE without the
                      condition: a race between the check and the write
  rowcount-ignored    the conditional UPDATE, but ok whatever it changed
  repeating-token     the token is the table's fence + 1, read after the
                      lock is taken (so two holders can get the same one),
                      and the UPDATE admits fence <= token
  ignoring-stop       the conditional UPDATE, but the write never stops at
                      the failpoint ("stop" is ignored): pause-holder cannot
                      aim at it

Not an example to copy: examples/clients/pg-kazoo is.
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
log = logging.getLogger("sqlclient")

LOCK_ROOT = "/sqlclient/locks"
VARIANTS = ("conditional", "select-then-update", "rowcount-ignored", "repeating-token", "ignoring-stop")


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


class Fail(Exception):
    """The op certainly did not happen."""


class Table:
    """The table fencecheck made: key, value, fence; a row per key."""

    def __init__(self, storage, variant):
        self.variant = variant
        self.table = storage["table"]
        try:
            self.conn = psycopg2.connect(storage["url"], password=storage["password"], connect_timeout=10)
        except psycopg2.OperationalError as e:
            raise Fail("cannot connect to the storage: %s" % e)
        self.conn.autocommit = True

    def query(self, sql, args, deadline):
        left = int((deadline - time.monotonic()) * 1000)
        if left <= 0:
            raise Fail("deadline passed before the statement left")
        cur = self.conn.cursor()
        cur.execute("SET statement_timeout = %d" % left)
        cur.execute(sql.format(t=self.table), args)
        return cur

    def read(self, key, deadline):
        row = self.query("SELECT value FROM {t} WHERE key = %s", (key,), deadline).fetchone()
        return row[0] if row else 0

    def fence(self, key, deadline):
        row = self.query("SELECT fence FROM {t} WHERE key = %s", (key,), deadline).fetchone()
        return row[0] if row else 0

    def check(self, key, token, deadline):
        """The check made before the checkpoint (only select-then-update
        checks anything before the write leaves)."""
        if self.variant == "select-then-update" and self.fence(key, deadline) > token:
            raise Fail("fenced")

    def write(self, key, token, value, deadline):
        if self.variant == "select-then-update":
            self.query("UPDATE {t} SET value = %s, fence = %s WHERE key = %s", (value, token, key), deadline)
            return
        op = "<=" if self.variant == "repeating-token" else "<"
        cur = self.query("UPDATE {t} SET value = %s, fence = %s WHERE key = %s AND fence " + op + " %s",
                         (value, token, key, token), deadline)
        if self.variant == "rowcount-ignored":
            return
        if cur.rowcount != 1:
            raise Fail("fenced")


class Client:
    def __init__(self, init, variant):
        self.variant = variant
        self.zk = KazooClient(hosts=",".join(init["service"]["endpoints"]),
                              timeout=init["lease_ttl_ms"] / 1000.0,
                              connection_retry=KazooRetry(max_tries=-1, max_delay=1))
        self.zk.start(timeout=20)
        self.table = Table(init["storage"], variant)
        self.process, self.acquires = init["process"], 0
        self.lock = None
        self.session = None
        self.call_ns = None  # when a stopped write left, after continue

    def holds(self):
        return (self.lock is not None and self.lock.is_acquired
                and self.zk.state == KazooState.CONNECTED
                and self.zk.client_id is not None
                and self.zk.client_id[0] == self.session)

    def acquire(self, key, deadline):
        budget = deadline - time.monotonic()
        self.acquires += 1
        me = "process %d, acquire %d" % (self.process, self.acquires)
        lock = self.zk.Lock(LOCK_ROOT + "/" + key, identifier=me)
        timer = threading.Timer(budget, lock.cancel)
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
        if self.variant == "repeating-token":
            # The holders number themselves from what the table says.
            return self.table.fence(key, deadline) + 1
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
        f, key, token = req["f"], req.get("key"), req.get("token", 0)
        if f == "acquire":
            return {"token": self.acquire(key, deadline)}
        if f == "read":
            if not self.holds():
                raise Fail("lease-lost")
            return {"value": self.table.read(key, deadline)}
        if f == "write":
            if not self.holds():
                raise Fail("lease-lost")
            self.table.check(key, token, deadline)
            if req.get("stop") and self.variant != "ignoring-stop":
                send({"id": req["id"], "type": "checkpoint", "name": "write-checked"})
                sys.stdin.readline()  # {"id":..,"f":"continue"}
                self.call_ns = time.monotonic_ns()  # the write leaves now
            self.table.write(key, token, req.get("value", 0), deadline)
            return {}
        if f == "release":
            self.release()
            return {}
        raise Fail("unknown op " + str(f))


def main():
    variant = sys.argv[1] if len(sys.argv) > 1 else ""
    init = json.loads(sys.stdin.readline())
    if variant not in VARIANTS:
        send({"type": "refuse", "protocol": 1, "error": "variant %r is not one of %s" % (variant, ", ".join(VARIANTS))})
        return
    if init.get("protocol") != 1 or init.get("storage", {}).get("backend") != "postgres":
        send({"type": "refuse", "protocol": 1,
              "error": "this client speaks protocol 1 with --storage postgres, not %s with %s"
                       % (init.get("protocol"), init.get("storage", {}).get("backend"))})
        return
    try:
        client = Client(init, variant)
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
            client.call_ns = None
            try:
                answer.update(client.op(req, deadline), type="ok")
            except Fail as e:
                answer.update(type="fail", error=str(e))
            except Exception as e:  # the outcome is unknown
                log.warning("op %s: %r", req, e)
                answer.update(type="info", error=repr(e))
            answer["return"] = time.monotonic_ns()
            if client.call_ns:
                answer["call"] = client.call_ns
            send(answer)
    finally:
        client.zk.stop()
        client.zk.close()


if __name__ == "__main__":
    main()
