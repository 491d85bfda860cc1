#!/usr/bin/env python3
# A small client for the protocol tests, in a language fencecheck does not
# use. MODE (argv[1]) picks how it behaves: ok speaks the protocol (one
# lock held in this process, a register in memory); the others misbehave
# in one named way.
import json, random, sys, time

mode = sys.argv[1] if len(sys.argv) > 1 else "ok"

def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()

init = json.loads(sys.stdin.readline())
print("init for process", init.get("process"), file=sys.stderr, flush=True)
if mode == "refuse":
    send({"type": "refuse", "protocol": 1, "error": "no ZooKeeper at " + ",".join(init["service"]["endpoints"])})
    sys.exit(0)
if mode == "version":
    send({"type": "ready", "protocol": 2})
    sys.exit(0)
if mode == "silent":
    time.sleep(60)
if mode == "crash-start":
    print("Traceback: ImportError: No module named kazoo", file=sys.stderr, flush=True)
    sys.exit(1)
send({"type": "ready", "protocol": 1})

value, held = 0, None
for line in sys.stdin:
    req = json.loads(line)
    i, f = req["id"], req["f"]
    if mode == "flaky" and f == "acquire":
        # Now and then, one of the ways a client goes wrong.
        mode_now = random.choice(["flood", "garbage", "crash", "hang"] + ["ok"] * 16)
    else:
        mode_now = mode
    if f == "acquire" and mode_now in ("flood", "garbage", "crash", "hang"):
        mode = mode_now
        if mode == "flood":
            sys.stdout.write("x" * (70 << 10) + "\n")
        elif mode == "garbage":
            sys.stdout.write("Traceback (most recent call last):\n")
        elif mode == "crash":
            print("Segmentation fault", file=sys.stderr, flush=True)
            sys.exit(139)
        elif mode == "hang":
            time.sleep(60)
        sys.stdout.flush()
        continue
    if f == "acquire":
        if held is not None:
            send({"id": i, "type": "fail", "error": "held by this process"})
        else:
            held = req["key"]
            send({"id": i, "type": "ok", "token": 7})
    elif f == "read":
        send({"id": i, "type": "ok", "value": value})
    elif f == "write":
        if req.get("stop"):
            send({"id": i, "type": "checkpoint", "name": "write-checked"})
            cont = json.loads(sys.stdin.readline())
            assert cont["f"] == "continue" and cont["id"] == i, cont
        if req.get("token", 0) < 7:
            send({"id": i, "type": "fail", "error": "fenced"})
        else:
            value = req["value"]
            send({"id": i, "type": "ok"})
    elif f == "release":
        held = None
        send({"id": i, "type": "ok"})
    else:
        send({"id": i, "type": "fail", "error": "unknown op " + f})
