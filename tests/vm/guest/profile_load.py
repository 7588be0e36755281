#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""profile_load.py MARK CLASS TARGET N: N RPCs whose replies take one shape,
bracketed by the instruction profiler's window markers (MARK open / close,
tests/profile/mark.c), so that only the RPCs and what they cause are
counted. Set-up (open, connect, the first RPC that warms caches) happens
before the window opens. Exit status: 0, or 1 when something failed after a
window was opened (it is closed, so the plugin wrote it: the caller must
count it), 2 when something failed before.

Classes against an NFS mount at TARGET (a directory; mounted with
actimeo=0 so that a stat is a GETATTR, and O_DIRECT I/O so that every read
and write is an RPC):
  getattr         stat of a file                 small inline reply
  pullup          100-byte read                  reply pulled up into the Send buffer
  mapped          2000-byte read across a page   inline reply with mapped pages
  read_wchunk     64 KiB read                    payload through a Write chunk
  readdir_rchunk  listing of 300 long names      reply through a Reply chunk
  write           4 KiB write                    small WRITE reply
Classes against the server at TARGET (SERVER:PORT), raw RPC-over-RDMA on one
connection (tests/vm/guest/hostile.py):
  err_vers        Calls of RPC-over-RDMA version 2     ERR_VERS
  err_chunk       a READDIR too large for an inline reply, no Reply chunk: ERR_CHUNK
"""

import os
import subprocess
import sys


def window(mark, what):
    subprocess.run([mark, what], check=True)


class WindowFailed(Exception):
    pass


def run_window(mark, n, op):
    """op(0) .. op(n - 1) inside one window, which is closed whatever happens."""
    window(mark, "open")
    try:
        for i in range(n):
            op(i)
    except Exception as err:
        raise WindowFailed(err) from err
    finally:
        window(mark, "close")


def nfs_class(mark, cls, d, n):
    data, listing = os.path.join(d, "data.bin"), os.path.join(d, "d300")
    # The server's own copy of the directory (client and server share this
    # guest): touching it makes the client's cached listing stale, so that
    # each listing is READDIR RPCs again.
    server_dir = os.path.join(os.environ.get("EXPORT", "/export"), "d300")
    if cls == "getattr":
        op = lambda: os.stat(data)
    elif cls in ("pullup", "mapped", "read_wchunk"):
        fd = os.open(data, os.O_RDONLY | os.O_DIRECT)
        off, size = {"pullup": (1, 100), "mapped": (4090, 2000), "read_wchunk": (0, 65536)}[cls]
        op = lambda: os.pread(fd, size, off)
    elif cls == "write":
        fd = os.open(os.path.join(d, "w.bin"), os.O_WRONLY | os.O_CREAT | os.O_DIRECT)
        block = b"w" * 4096
        op = lambda: os.pwrite(fd, block, 0)
    elif cls == "readdir_rchunk":
        def op():
            os.utime(server_dir)
            if len(os.listdir(listing)) != 300:
                raise RuntimeError("listing of d300 is not 300 entries")
    else:
        raise RuntimeError(f"unknown class {cls}")
    op()
    run_window(mark, n, lambda i: op())


def raw_class(mark, cls, target, n):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import hostile
    server, port = target.rsplit(":", 1)
    name, expected = {"err_vers": ("version_2", "err_vers"),
                      "err_chunk": ("reply_too_large_no_chunk", "err_chunk")}[cls]
    build = hostile.cases()[name][1]
    conn = hostile.Conn(server, int(port))
    try:
        xid = 0x50000000
        got = hostile.exchange(conn, xid, build(conn, xid))
        if got != expected:
            raise RuntimeError(f"{cls}: {got}, not {expected}")
        def op(i):
            got = hostile.exchange(conn, xid + 1 + i, build(conn, xid + 1 + i))
            if got != expected:
                raise RuntimeError(f"{cls}: call {i}: {got}, not {expected}")
        run_window(mark, n, op)
    finally:
        conn.close()


def main():
    mark, cls, target, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    try:
        if cls.startswith("err_"):
            raw_class(mark, cls, target, n)
        else:
            nfs_class(mark, cls, target, n)
    except WindowFailed as err:
        print(f"profile_load: {cls}: {err}", file=sys.stderr)
        return 1
    except Exception as err:
        print(f"profile_load: {cls}: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
