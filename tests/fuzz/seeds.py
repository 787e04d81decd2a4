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


if __name__ == "__main__":
    frames()
