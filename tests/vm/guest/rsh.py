#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Remote shell for the benchmark's server VM, driven by its client VM.

The client runs every step of the benchmark and asks the server to do its
part (load a flavour, start knfsd, read /proc/stat, start a perftest
server, ...) over plain TCP on the test fabric's Ethernet, so the control
traffic never touches the RDMA path being measured. The fabric is the two
test VMs' private QEMU socket network: nothing else can reach the port.

  rsh.py serve                  (server; returns when sent "exit")
  rsh.py HOST COMMAND...        (client; runs COMMAND with sh on HOST,
                                 prints its output, exits with its status)

Commands run with the guest library sourced (tests/vm/guest/lib.sh).
"""

import socket
import subprocess
import sys
import time

PORT = 7778
PRELUDE = ". /work/tests/vm/guest/lib.sh\n"


def recv_all(conn):
    chunks = []
    while True:
        b = conn.recv(65536)
        if not b:
            return b"".join(chunks)
        chunks.append(b)


def serve():
    srv = socket.create_server(("", PORT), reuse_port=True)
    while True:
        conn, _ = srv.accept()
        with conn:
            cmd = recv_all(conn).decode()
            if cmd.strip() == "exit":
                conn.sendall(b"0\n")
                return
            p = subprocess.run(["sh", "-c", PRELUDE + cmd], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            conn.sendall(f"{p.returncode}\n".encode() + p.stdout)


def run(host, cmd):
    # The server may still be booting: retry the connection for a while.
    for _ in range(600):
        try:
            conn = socket.create_connection((host, PORT), timeout=5)
            break
        except OSError:
            time.sleep(0.5)
    else:
        print(f"rsh: cannot reach {host}:{PORT}", file=sys.stderr)
        return 255
    with conn:
        conn.settimeout(None)
        conn.sendall(cmd.encode())
        conn.shutdown(socket.SHUT_WR)
        out = recv_all(conn).decode(errors="replace")
    status, _, text = out.partition("\n")
    sys.stdout.write(text)
    return int(status) if status.strip().isdigit() else 255


if __name__ == "__main__":
    if sys.argv[1:] == ["serve"]:
        serve()
    elif len(sys.argv) >= 3:
        sys.exit(run(sys.argv[1], " ".join(sys.argv[2:])))
    else:
        sys.exit(__doc__)
