# SPDX-License-Identifier: MIT
"""agentpoke.py PORT ROLE: say hello to a launcher's agents' port (dialin.c)
as ROLE, with the hello's nonce; as "agent", answer the challenge with a
wrong proof. ROLE "-" sends a registry request instead of a hello. Prints what the launcher answered, a line per answer:
"challenge" for a challenge, the message of an error, "closed" if the
connection ended first. For worldrun-slurm.bats."""
import json
import socket
import struct
import sys


def recv_exact(s, n):
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def ask(s, msg):
    body = json.dumps(msg).encode()
    s.sendall(struct.pack(">I", len(body)) + body)
    head = recv_exact(s, 4)
    body = head and recv_exact(s, struct.unpack(">I", head)[0])
    if body is None:
        print("closed")
        return None
    answer = json.loads(body)
    if "error" in answer:
        print(answer["error"]["message"])
    elif "challenge" in answer.get("result", {}):
        print("challenge")
    else:
        print(answer)
    return answer


port, role = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port), 10)
s.settimeout(10)
if role == "-":
    a = ask(s, {"op": "kv.get", "id": 1, "key": "k"})
else:
    a = ask(s, {"op": "hello", "id": 1, "nonce": "0" * 32, "rank": 0, "role": role})
if a is not None and "result" in a:
    ask(s, {"op": "proof", "id": 2, "proof": "f" * 64})
