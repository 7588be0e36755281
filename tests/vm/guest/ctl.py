#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Phase control between the client and the server VM of a conformance run.

The client brackets each test with "begin NAME" and "end NAME" over plain
TCP on the fabric's Ethernet (not RDMA, so the control traffic never
touches the Send path under test). The server, for each phase:

- begin: empties the trace buffer, snapshots the rdma_stat_* counters and
  notes the wall-clock time (the capture's clock, to split it by phase);
- end: counts each Send-path tracepoint in the buffer, the counter deltas
  and any trace buffer overrun, appends "PHASE.KEY=VALUE" lines to the
  summary and returns them to the client, which prints them.

  ctl.py serve SUMMARY PHASES_CSV EVENT...   (server; returns on "done")
  ctl.py send HOST COMMAND...                (client; prints the answer)
"""

import collections
import glob
import os
import re
import socket
import sys
import threading
import time

PORT = 7777
TRACING = "/sys/kernel/tracing"
STATS = ("recv", "read", "write", "sq_starve")
# A phase still open after this long is dumped for diagnosis (once).
STALL_SECONDS = 90


def stall_dump(path, name):
    """What the server is doing in a phase that does not end: the nfsd
    threads' kernel stacks, the counters and the last trace lines."""
    out = [f"phase {name} open for more than {STALL_SECONDS} s\n"]
    for stat_file in sorted(glob.glob("/proc/[0-9]*/stat")):
        pid = stat_file.split("/")[2]
        try:
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
            if comm.startswith(("nfsd", "kworker", "rxe", "ib_", "rdma")):
                with open(f"/proc/{pid}/stack") as f:
                    stack = f.read()
                if comm.startswith("nfsd") or "svc_rdma" in stack or "rxe" in stack:
                    out.append(f"--- {pid} {comm}\n{stack}")
        except OSError:
            pass
    out += [f"rdma_stat_{s}={stat(s)}\n" for s in STATS]
    with open(f"{TRACING}/trace", errors="replace") as f:
        out += f.readlines()[-4000:]
    with open(path, "w") as f:
        f.writelines(out)


def watchdog(state, lock, outdir):
    while True:
        time.sleep(5)
        with lock:
            name, t0, dumped = state.get("name"), state.get("t0", 0), state.get("dumped")
            if name and not dumped and time.time() - t0 > STALL_SECONDS:
                state["dumped"] = True
                stall_dump(f"{outdir}/stall-{name}.txt", name)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def stat(name):
    with open(f"/proc/sys/sunrpc/svc_rdma/rdma_stat_{name}") as f:
        return int(f.read())


def overruns():
    total = 0
    for cpu in os.listdir(f"{TRACING}/per_cpu"):
        with open(f"{TRACING}/per_cpu/{cpu}/stats") as f:
            for line in f:
                if line.startswith("overrun:"):
                    total += int(line.split()[1])
    return total


EVENT_NAME = re.compile(r"\d+\.\d+: (\w+):")


# Events that say something went wrong on a connection: their trace lines
# (status, QP event) are kept per phase, so that a phase that counts one
# can be diagnosed afterwards (errors-PHASE.txt beside the summary), with
# the trace lines before the first one (context-PHASE.txt).
ERROR_EVENT = re.compile(r"_err$|^svcrdma_qp_error$|^tcp_(receive|send)_reset$|^siw_sq_process$")
CONTEXT_LINES = 40

# Context for those, beside the server's RPC-over-RDMA events: soft-iWARP
# runs its QPs over TCP, so each TCP state change (the control connections
# of this script excepted) and reset, and the errno with which siw's
# transmit gives up on a work request (-ECONNABORTED: the peer closed,
# -EFAULT: an SGE outside any mapping, -EPIPE...). The probe needs siw
# loaded; over soft-RoCE it is not set up.
# And the RDMA CM's events, so that a connection the client closed (its
# DISCONNECTED arriving before any error of the server's own) can be told
# from one the server closed (count_events).
DIAG_EVENTS = (("sock:inet_sock_set_state", f"sport != {PORT} && dport != {PORT}"),
               ("tcp:tcp_receive_reset", None),
               ("tcp:tcp_send_reset", None),
               ("rdma_cma:cm_event_handler", None))
SIW_PROBE = ("rpcrdma_diag", "siw_sq_process",
             "siw_qp_sq_process rv=$retval:s32", "rv != 0")


def tracefs_append(path, text):
    """As the shell's ">>": Python's append mode seeks, which tracefs
    refuses."""
    fd = os.open(f"{TRACING}/{path}", os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def enable_diagnostics():
    enabled = []
    for event, event_filter in DIAG_EVENTS:
        system, name = event.split(":")
        try:
            if event_filter:
                write(f"{TRACING}/events/{system}/{name}/filter", event_filter)
            tracefs_append("set_event", f"{event}\n")
            enabled.append(name)
        except OSError as e:
            print(f"ctl.py: no {event} for the error context: {e}", file=sys.stderr)
    group, name, probe, probe_filter = SIW_PROBE
    try:
        tracefs_append("kprobe_events", f"r:{group}/{name} {probe}\n")
        write(f"{TRACING}/events/{group}/{name}/filter", probe_filter)
        write(f"{TRACING}/events/{group}/{name}/enable", "1")
        enabled.append(name)
    except OSError:
        pass  # siw is not loaded: a soft-RoCE run
    print(f"ctl.py: error context traced: {' '.join(enabled)}", file=sys.stderr)


def count_events():
    """How often each event occurs in the trace buffer, the first 20 lines
    of error events and the CONTEXT_LINES lines before the first, and
    whether the CM reported a connection DISCONNECTED before the first
    error event (the peer closed it, not an error of the server's)."""
    counts = collections.Counter()
    errors, context = [], []
    before = collections.deque(maxlen=CONTEXT_LINES)
    disconnected_first = False
    with open(f"{TRACING}/trace", errors="replace") as f:
        for line in f:
            m = EVENT_NAME.search(line)
            if not m or line.startswith("#"):
                continue
            counts[m.group(1)] += 1
            if m.group(1) == "cm_event_handler" and " DISCONNECTED " in line and not errors:
                disconnected_first = True
            if ERROR_EVENT.search(m.group(1)) and len(errors) < 20:
                if not errors:
                    context = list(before)
                errors.append(line)
            before.append(line)
    return counts, errors, context, disconnected_first


def serve(summary, phases_csv, events):
    write(f"{TRACING}/tracing_on", "0")
    write(f"{TRACING}/buffer_size_kb", "32768")
    write(f"{TRACING}/set_event", "")
    # Every server-side RPC-over-RDMA event, for the stall dumps; the listed
    # ones are counted.
    server_events = [e for e in os.listdir(f"{TRACING}/events/rpcrdma") if e.startswith("svcrdma_")]
    for e in sorted(set(server_events + events)):
        tracefs_append("set_event", f"rpcrdma:{e}\n")
    enable_diagnostics()
    write(f"{TRACING}/tracing_on", "1")
    srv = socket.create_server(("", PORT), reuse_port=True)
    state = {}
    lock = threading.Lock()
    threading.Thread(target=watchdog, args=(state, lock, os.path.dirname(summary)),
                     daemon=True).start()
    with open(phases_csv, "a") as phases:
        while True:
            conn, _ = srv.accept()
            with lock, conn, conn.makefile("rw") as f:
                words = f.readline().split()
                answer = "ok"
                if not words:
                    answer = "error: empty command"
                elif words[0] == "begin" and len(words) == 2:
                    write(f"{TRACING}/trace", "")
                    state.clear()
                    state.update({"name": words[1], "t0": time.time(),
                                  "stats": {s: stat(s) for s in STATS},
                                  "overrun": overruns()})
                elif words[0] == "end" and len(words) == 2 and state.get("name") == words[1]:
                    t1 = time.time()
                    name = words[1]
                    counts, errors, context, disconnected_first = count_events()
                    if errors:
                        outdir = os.path.dirname(summary)
                        write(os.path.join(outdir, f"errors-{name}.txt"), "".join(errors))
                        write(os.path.join(outdir, f"context-{name}.txt"), "".join(context))
                    lines = [f"{name}.{e}={counts[e]}" for e in events]
                    # Which Send-path events fired at all: the tracepoint parity
                    # of the flavours is checked on these.
                    lines.append(f"{name}.events_fired=" +
                                 ",".join(sorted(e for e in counts if e.startswith("svcrdma_"))))
                    lines += [f"{name}.rdma_stat_{s}={stat(s) - v}"
                              for s, v in state["stats"].items()]
                    lines.append(f"{name}.trace_overrun={overruns() - state['overrun']}")
                    lines.append(f"{name}.disconnected_before_error={int(disconnected_first and bool(errors))}")
                    lines.append(f"{name}.seconds={t1 - state['t0']:.1f}")
                    with open(summary, "a") as out:
                        out.write("".join(line + "\n" for line in lines))
                    phases.write(f"{name},{state['t0']:.6f},{t1:.6f}\n")
                    phases.flush()
                    answer = "ok " + " ".join(lines)
                    state.clear()
                elif words[0] == "done":
                    f.write("ok\n")
                    break
                else:
                    answer = f"error: unexpected command {' '.join(words)!r} (open phase: {state.get('name')})"
                f.write(answer + "\n")
    write(f"{TRACING}/tracing_on", "0")


def send(host, words):
    for attempt in range(60):
        try:
            with socket.create_connection((host, PORT), timeout=300) as s:
                s.sendall((" ".join(words) + "\n").encode())
                answer = s.makefile().readline().strip()
                print(answer)
                return 0 if answer.startswith("ok") else 1
        except OSError as e:
            if attempt == 59:
                print(f"error: {e}")
                return 1
            time.sleep(1)
    return 1


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif len(sys.argv) >= 4 and sys.argv[1] == "send":
        sys.exit(send(sys.argv[2], sys.argv[3:]))
    else:
        sys.exit(__doc__)
