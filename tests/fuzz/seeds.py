#!/usr/bin/env python3
"""Write the fuzz targets' seed corpora into seeds/ (run from this
folder; the files are committed, so only after a change of protocol).
Each seed is a small valid input that takes a target somewhere: frames
for frame and registry, NUL-separated words for the parsers."""
import json
import os
import struct

SECRET = "fuzz-secret"  # what fuzz-registry.c's server expects


def frame(msg, blob=b""):
    if blob:
        msg = dict(msg, blob=len(blob))
    text = json.dumps(msg, separators=(",", ":")).encode()
    return struct.pack(">I", len(text)) + text + blob


def write(target, name, data):
    os.makedirs(os.path.join("seeds", target), exist_ok=True)
    with open(os.path.join("seeds", target, name), "wb") as f:
        f.write(data)


def words(*ws):
    return b"\0".join(w.encode() for w in ws)


def frames():
    hello = frame({"op": "hello", "id": 0, "secret": SECRET, "rank": 0,
                   "role": "rank"})
    # byte 0: bit 0 tiny limits, bits 1-2 the writer, bits 3-7 chunking
    write("frame", "hello", b"\x00" + hello)
    write("frame", "hello-bytewise", b"\x08" + hello)
    write("frame", "set-blob", b"\x12" + frame({"op": "kv.set", "id": 1,
                                                 "key": "k"}, b"value"))
    write("frame", "two-tiny", b"\x25" + frame({"op": "x", "id": 2}, b"ab")
          + frame({"id": 3, "result": {}}))
    write("frame", "escapes", b"\x04" + frame({"s": "a\"\\\u00e9\u0001\u2028",
                                                "n": [-1, 2.5, None, True]}))


def req(n, op, **fields):
    blob = fields.pop("blob", b"")
    return frame(dict({"op": op, "id": n}, **fields), blob)


def registry():
    """byte 0: bits 0-1 (client 0) and 2-3 (client 1) what the harness
    says first (1: hello as the client's rank, 2: as a tool), bit 4 a
    second client, bit 5 tiny limits; then with two clients 2 bytes:
    client 0's length."""
    hello = req(0, "hello", secret=SECRET, rank=0, role="rank")
    one = lambda *frames: b"\x01" + b"".join(frames)
    write("registry", "hello-raw", b"\x00" + hello + req(1, "stats"))
    write("registry", "before-hello", b"\x00" + req(1, "kv.get", key="k"))
    write("registry", "kv", one(
        req(1, "kv.set", key="k", blob=b"v1"),
        req(2, "kv.get", key="k"),
        req(3, "kv.append", key="k", blob=b"more"),
        req(4, "kv.add", key="n", delta=5),
        req(5, "kv.cas", key="k", expected_len=6, blob=b"v1morenew"),
        req(6, "kv.del", key="n"),
        req(7, "kv.count"),
        req(8, "kv.check", keys=["k", "n"])))
    write("registry", "kv-multi", one(
        req(1, "kv.mset", keys=["a", "b"], lens=[1, 2], blob=b"xyz"),
        req(2, "kv.mget", keys=["a", "b"]),
        req(3, "kv.wait", keys=["a", "c"], timeout_ms=1),
        req(4, "kv.get", key="c", timeout_ms=-2)))
    write("registry", "lut", one(
        req(1, "lut.claim", table="values", group="g", key="k"),
        req(2, "lut.lookup", table="values", group="g", key="k"),
        req(3, "lut.wait", table="services", group="g", key="s", timeout_ms=5),
        req(4, "lut.release", table="values", group="g", key="k")))
    write("registry", "sync", one(
        req(1, "barrier", name="b", members=[0]),
        req(2, "group.join", group="g", members=[0]),
        req(3, "group.members", group="g"),
        req(4, "group.leave", group="g"),
        req(5, "deaths.wait", seen=0, timeout_ms=0),
        req(6, "ranks"),
        req(7, "lease"),
        req(8, "goodbye")))
    a = req(1, "kv.wait", keys=["x"]) + req(2, "barrier", name="b",
                                                  members=[0, 1])
    b = req(1, "kv.set", key="x", blob=b"1") + req(2, "barrier", name="b",
                                                       members=[0, 1])
    write("registry", "two-clients", b"\x15" + struct.pack(">H", len(a)) + a + b)
    a = req(1, "group.join", group="g", members=[0, 1, 2])
    b = req(1, "deaths.wait", seen=0)
    write("registry", "two-death", b"\x15" + struct.pack(">H", len(a)) + a + b)
    # Found by fuzzing: blob arithmetic on a request without a blob.
    write("registry", "no-blob", one(
        req(1, "kv.cas", key="k", expected_len=0),
        req(2, "kv.mset", keys=["m"], lens=[0])))
    write("registry", "tiny-limits", b"\x21" + b"".join([
        req(1, "kv.append", key="k", blob=b"0123456789"),
        req(2, "kv.append", key="k", blob=b"0123456789"),
        req(3, "kv.get", key="k"),
        req(4, "ranks")]))
    write("registry", "tool", b"\x02" + req(1, "kv.get", key="k", timeout_ms=3)
          + req(2, "goodbye"))


def serve():
    """byte 0: bits 0-1 (peer 0) and 2-3 (peer 1) what the harness says
    first (1: hello, 2: with a wrong secret), bit 4 a second peer, bit 5
    the rank refuses calls; then with two peers 2 bytes: peer 0's length."""
    call = lambda n, kind, **f: req(n, "call", kind=kind, **f)
    hello = req(0, "hello", secret=SECRET, rank=1, role="peer")
    write("serve", "hello-raw", b"\x00" + hello + call(1, "value", group="g",
                                                           key="v"))
    write("serve", "before-hello", b"\x00" + call(1, "value", group="g", key="v"))
    write("serve", "calls", b"\x01" + b"".join([
        call(1, "service", group="g", key="echo", args={"a": [1, "x"]},
             blob=b"bytes"),
        call(2, "direct", key="d", args=None),
        call(3, "service", group="g", key="fail"),
        call(4, "service", group="g", key="nobody"),
        call(5, "value", group="g", key="v"),
        call(6, "wrong-kind"),
        req(7, "nope")]))
    write("serve", "remote", b"\x01" + b"".join([
        call(1, "remote", group="g", key="echo", args=[1, 2], blob=b"kept"),
        call(2, "direct_remote", key="d", args="s"),
        call(3, "fetch", rref=1),
        call(4, "release", rref=1),
        call(5, "fetch", rref=1),
        call(6, "release", rref=2)]))
    a = call(1, "service", group="g", key="echo", args=1)
    write("serve", "two-peers", b"\x15" + struct.pack(">H", len(a)) + a
          + call(1, "direct", key="d"))
    write("serve", "refusing", b"\x21" + call(1, "service", group="g", key="echo"))


def parsers():
    """NUL-separated words; ctlargs and env start with a byte of their own
    (ctlargs: bit 0, the command takes --timeout; env: how many words are
    inherited)."""
    write("opts", "plain", words("-n", "4", "-l", "./app", "arg"))
    write("opts", "all", words("--np=2", "-x", "A=1", "-x", "PATH",
                               "--wdir", "/tmp", "--tag-output",
                               "--output-dir", "out", "--pty", "--stdin",
                               "all", "--kill-grace", "0.5", "--keep-going",
                               "--timeout", "10", "--report", "r.json",
                               "--dry-run", "-vv", "--", "prog", "-n"))
    write("opts", "mpirun", words("-np", "3", "--stdin", "2", "sh", "-c", "x"))
    write("opts", "bad", words("--timeout=0", "--bogus", "-z", "--stdin"))
    write("opts", "help", words("--help"))
    write("opts", "hosts", words("-H", "a:2,b", "--map-by", "node", "--ppn",
                                 "2", "--oversubscribe", "--display-map",
                                 "--stdin", "3", "prog"))
    write("opts", "hostfile", words("-hostfile", "hf", "-ppn", "1",
                                    "-map-by", "slot", "-np", "2", "prog"))
    write("ctlargs", "kv-add", b"\x00" + words("n", "-1"))
    write("ctlargs", "timeout", b"\x01" + words("--timeout", "2.5", "k",
                                                  "--", "--timeout=1"))
    write("ctlargs", "timeout-eq", b"\x01" + words("--timeout=0.0004", "k",
                                                     "9223372036854775807"))
    write("ctlargs", "bad", b"\x00" + words("--timeout", "1", "--x=y"))
    write("env", "inherit", b"\x04" + words(
        "PATH=/bin", "WORLD_RANK=3", "RANK=1", "FWD=v", "FWD", "X=1",
        "WORLD_SIZE=2", "MASTER_PORT"))
    # Found by fuzzing: a name inherited twice reached the ranks twice.
    write("env", "twice", b"\x03" + words("A=first", "B=1", "A=second", "A=x"))
    write("env", "settings", b"\x03" + words(
        "WORLD_MSG_MAX=64K", "WORLD_BLOB_MAX=1G", "WORLD_SPIN_US=100",
        "WORLD_BLOB_MAX=0", "WORLD_MSG_MAX=4096"))


def wire():
    """Frames of the agent's commands and events."""
    cmds = [frame({"cmd": "start", "first": 0, "count": 4}),
            frame({"cmd": "signal", "rank": -1, "sig": 15}),
            frame({"cmd": "pause", "rank": 2, "stream": -1}),
            frame({"cmd": "stdin"}, b"a chunk\n"),
            frame({"cmd": "stdin_eof"}), frame({"cmd": "beat"})]
    evs = [frame({"ev": "started", "rank": 1, "pid": 4242, "mono": 1.5}),
           frame({"ev": "start_failed", "rank": 1, "err": 2, "stage": 1}),
           frame({"ev": "output", "rank": 1, "stream": 0, "partial": False,
                  "eof": False}, b"hello\n"),
           frame({"ev": "exited", "rank": 1, "pid": 4242, "wstatus": 768,
                  "maxrss_kib": 1024, "mono": 2.25}),
           frame({"ev": "finished", "rank": 1, "forced": False}),
           frame({"ev": "stdin_taken"}),
           frame({"ev": "start_done", "count": 2, "err": 0}),
           frame({"ev": "ready", "status": 127}, b"./app: program not found"),
           frame({"ev": "beat"}), frame({"ev": "gave_up"}),
           frame({"ev": "abort", "rank": 1, "status": 1, "code": 256}, b"bye")]
    strings = b"/tmp\0./app\0-v\0PATH=/bin\0WORLD_SECRET=s\0"
    setup = frame({"setup": 2, "jobid": "0123456789ab", "size": 4,
                   "nnodes": 2, "node": 1, "ranks": [2, 3], "argc": 2,
                   "envc": 2, "wdir": True, "wdir_soft": True, "pty": False,
                   "stdin_rank": -1,
                   "kill_grace": 2.0, "master_addr": "198.18.0.1",
                   "master_port": 29500, "registry_port": 0,
                   "nofile": [1024, -1], "host_timeout": 10.0, "pmi": False,
                   "pmi_port": False, "pmi_mapping": None}, strings)
    write("wire", "setup", setup)
    write("wire", "commands", b"".join(cmds))
    write("wire", "events", b"".join(evs))


def hosts():
    """byte 0: bit 0 a -H list, bit 1 by node, bit 2 oversubscribe,
    bits 3-7 ppn; byte 1: ranks; then the file or the list."""
    write("hosts", "file", b"\x00\x06# c\nnode-a slots=2 max_slots=3\n"
          b"node-b\n198.18.0.3:2\n")
    write("hosts", "list", b"\x07\x09a:2,b,c")
    write("hosts", "ppn", b"\x0a\x05a slots=4\nb slots=4\n")


if __name__ == "__main__":
    frames()
    hosts()
    wire()
    registry()
    serve()
    parsers()
