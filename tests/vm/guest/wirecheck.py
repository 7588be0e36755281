#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check the server's RPC-over-RDMA replies in a capture, as Wireshark
decodes them (tshark's rpcordma dissector, an implementation independent
of the kernel's), against the Calls they answer (RFC 8166, and the rules of
svc_rdma_sendto.c that the Rust Send path must keep):

- every reply has version 1, grants credits, and an empty Read list;
- RDMA_NOMSG if and only if the Call offered a Reply chunk, else RDMA_MSG;
  RDMA_ERROR is never expected from a well-behaved client's Calls;
- the Write list echoes the Call's: as many chunks, each with the same
  segments (handle, offset), every length at most the length offered;
- the Reply chunk likewise echoes the Call's Reply chunk;
- a reply answers the latest Call of its XID: after a reconnect the client
  resends a Call with the same XID and newly registered chunks, and only
  that one can be answered; an RC packet the fabric retransmitted (same
  queue pair and PSN) is one message, not two;
- no frame is malformed, except the NFS layer of READ replies whose
  payload went by Write chunk: without the RDMA Writes (not captured) the
  NFS dissector finds the data missing. Those are counted separately.

  wirecheck.py CAPTURE PHASES_CSV SERVER_IP OUTDIR

Writes OUTDIR/wire-shapes.csv (phase, call shape, reply shape, count): the
input of the C/Rust comparison on the host; OUTDIR/wire-errors.txt (each
violation, with its frame number); prints "wire_KEY=VALUE" lines.
"""

import collections
import csv
import subprocess
import sys

FIELDS = ("frame.number", "frame.time_epoch", "ip.src", "ip.dst", "infiniband.bth.destqp",
          "infiniband.bth.psn", "rpcordma.xid", "rpcordma.version",
          "rpcordma.flow_control", "rpcordma.msg_type", "rpcordma.reads_count",
          "rpcordma.writes_count", "rpcordma.reply_count", "rpcordma.segment_count",
          "rpcordma.position", "rpcordma.rdma_handle", "rpcordma.rdma_length",
          "rpcordma.rdma_offset", "rpcordma.errcode", "rpc.msgtyp", "rpc.program",
          "rpc.procedure", "nfs.main_opcode", "nfs.nfsstat4", "nfs.status3", "nfs.eof")
MSG, NOMSG, ERROR = 0, 1, 4


class Message:
    def __init__(self, row):
        f = dict(zip(FIELDS, row))
        self.frame = int(f["frame.number"])
        self.time = float(f["frame.time_epoch"])
        self.src = f["ip.src"]
        # The RC packet that carried it: a copy the fabric retransmitted has
        # the same key. None when tshark lacks the fields (no deduplication).
        qp, psn = f["infiniband.bth.destqp"].split(";")[0], f["infiniband.bth.psn"].split(";")[0]
        self.packet = (self.src, f["ip.dst"], qp, psn) if qp and psn else None
        self.xid = f["rpcordma.xid"]
        self.vers = first_int(f["rpcordma.version"])
        self.credits = first_int(f["rpcordma.flow_control"])
        self.proc = first_int(f["rpcordma.msg_type"])
        self.errcode = first_int(f["rpcordma.errcode"])
        self.rpc_call = f["rpc.msgtyp"].split(";")[0] == "0"
        self.op = "/".join(x for x in (f["rpc.program"].split(";")[0],
                                       f["rpc.procedure"].split(";")[0],
                                       f["nfs.main_opcode"].split(";")[0]) if x)
        # What the NFS server answered (replies): an error, a READ at the
        # end of the file (with or without data), or anything else. Which
        # Calls get which depends on the server's state and the timing of
        # concurrent loads, not on the Send path; the comparison of reply
        # shapes keys on it.
        status = first_int(f.get("nfs.nfsstat4", "")) or first_int(f.get("nfs.status3", ""))
        self.outcome = "error" if status else ("eof" if first_int(f.get("nfs.eof", "")) else "ok")
        self.malformed = False
        ints = lambda k: [int(x, 0) for x in f[k].split(";") if x]
        nreads = len(ints("rpcordma.position"))
        handles, lengths, offsets = ints("rpcordma.rdma_handle"), ints("rpcordma.rdma_length"), \
            ints("rpcordma.rdma_offset")
        segs = list(zip(handles, lengths, offsets))[nreads:]
        counts = ints("rpcordma.segment_count")
        nwrites = first_int(f["rpcordma.writes_count"]) or 0
        nreply = first_int(f["rpcordma.reply_count"]) or 0
        self.reads = nreads
        self.writes, self.reply = [], None
        self.decoded = len(counts) == nwrites + nreply
        for i, n in enumerate(counts):
            chunk, segs = segs[:n], segs[n:]
            if i < nwrites:
                self.writes.append(chunk)
            else:
                self.reply = chunk
        self.decoded = self.decoded and not segs

    def call_shape(self):
        w = "+".join(",".join(str(s[1]) for s in c) for c in self.writes) or "-"
        r = ",".join(str(s[1]) for s in self.reply) if self.reply is not None else "-"
        return f"{self.op or '?'} writes[{w}] reply[{r}] reads{self.reads}"

    def reply_shape(self, exact):
        name = {MSG: "MSG", NOMSG: "NOMSG", ERROR: "ERROR"}.get(self.proc, str(self.proc))
        if exact:
            w = "+".join(",".join(str(s[1]) for s in c) for c in self.writes) or "-"
            r = ",".join(str(s[1]) for s in self.reply) if self.reply is not None else "-"
        else:
            w = "+".join("used" if sum(s[1] for s in c) else "unused" for c in self.writes) or "-"
            r = ("used" if sum(s[1] for s in self.reply) else "unused") if self.reply is not None else "-"
        return f"{name} writes[{w}] reply[{r}]"


def first_int(v):
    v = v.split(";")[0] if v else ""
    return int(v, 0) if v else None


def echoes(offered, used):
    """Whether a reply's chunk echoes the Call's: same segments, no longer."""
    return len(offered) == len(used) and all(
        h1 == h2 and o1 == o2 and l2 <= l1 for (h1, l1, o1), (h2, l2, o2) in zip(offered, used))


def violations(call, reply):
    v = []
    if reply.vers != 1:
        v.append(f"version {reply.vers}")
    if not reply.credits:
        v.append("grants no credits")
    if reply.reads:
        v.append(f"Read list with {reply.reads} segments")
    if not reply.decoded:
        v.append("chunk lists did not decode consistently")
    if reply.proc == ERROR:
        v.append(f"RDMA_ERROR (errcode {reply.errcode})")
        return v
    want = NOMSG if call.reply is not None else MSG
    if reply.proc != want:
        v.append(f"rdma_proc {reply.proc}, expected {want} (Call {'offered' if want else 'had no'} Reply chunk)")
    if len(reply.writes) != len(call.writes):
        v.append(f"{len(reply.writes)} Write chunks, Call offered {len(call.writes)}")
    else:
        for i, (o, u) in enumerate(zip(call.writes, reply.writes)):
            if not echoes(o, u):
                v.append(f"Write chunk {i} {u} does not echo the offered {o}")
    if (call.reply is None) != (reply.reply is None):
        v.append(f"Reply chunk {'absent' if reply.reply is None else 'present'}, Call "
                 f"{'offered one' if call.reply is not None else 'offered none'}")
    elif call.reply is not None and not echoes(call.reply, reply.reply):
        v.append(f"Reply chunk {reply.reply} does not echo the offered {call.reply}")
    if reply.proc == NOMSG and not any(s[1] for s in reply.reply or []):
        v.append("RDMA_NOMSG with an empty Reply chunk")
    return v


def pair(msgs, server_ip, stats, errors):
    """The (Call, reply) pairs of a capture's messages, in reply order.

    A copy of an RC packet that the fabric retransmitted is dropped. A reply
    answers the latest Call of its XID, and the earlier Calls of that XID
    count as resent: the client resends a Call only after a reconnect, with
    chunks registered anew, and the server can reply only on the connection
    the resent Call came in on. Counts client messages, backchannel Calls,
    resent and unanswered Calls in stats; a malformed Call goes to errors."""
    pending = collections.defaultdict(list)
    seen = set()
    pairs = []
    for m in msgs:
        if m.packet is not None:
            if m.packet in seen:
                stats["packets_retransmitted"] += 1
                continue
            seen.add(m.packet)
        if m.src != server_ip:
            stats["client_messages"] += 1
            if m.malformed:
                stats["client_malformed"] += 1
                errors.append(f"frame {m.frame}: client message flagged malformed by the dissector")
            pending[m.xid].append(m)
            continue
        stats["server_messages"] += 1
        if not pending[m.xid]:
            # A backchannel Call from the server, not a reply.
            stats["server_backchannel_calls"] += 1
            continue
        calls = pending.pop(m.xid)
        stats["calls_resent"] += len(calls) - 1
        pairs.append((calls[-1], m))
    stats["calls_unanswered"] = sum(len(q) for q in pending.values())
    return pairs


def main(capture, phases_csv, server_ip, outdir):
    phases = []
    with open(phases_csv) as f:
        for name, t0, t1 in csv.reader(f):
            phases.append((name, float(t0), float(t1)))

    def phase_of(t):
        for name, t0, t1 in phases:
            if t0 <= t <= t1:
                return name
        return "between-phases"

    # Only fields this tshark knows; an unknown one would fail the run. The
    # RPC-over-RDMA ones must all be known.
    known = {line.split("\t")[2] for line in subprocess.run(
        ["tshark", "-G", "fields"], capture_output=True, text=True).stdout.splitlines()
        if line.startswith("F\t")}
    missing = [fld for fld in FIELDS if fld not in known]
    if any(fld.startswith("rpcordma.") for fld in missing):
        print(f"wire_tshark_error='fields unknown to tshark: {missing}'")
        return 1
    cmd = ["tshark", "-r", capture, "-Y", "rpcordma", "-T", "fields", "-E", "separator=|",
           "-E", "occurrence=a", "-E", "aggregator=;"]
    for fld in FIELDS:
        cmd += ["-e", fld if fld in known else "frame.number"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        print(f"wire_tshark_error={out.stderr.strip()[:200]!r}")
        return 1
    rows = [line.split("|") for line in out.stdout.splitlines() if line]
    for row in rows:
        for i, fld in enumerate(FIELDS):
            if fld in missing:
                row[i] = ""
    msgs = [Message(row) for row in rows]
    print(f"wire_fields_unknown_to_tshark={','.join(missing) or 'none'}")
    flagged = subprocess.run(["tshark", "-r", capture, "-Y", "_ws.malformed || _ws.expert.severity == error",
                              "-T", "fields", "-e", "frame.number"], capture_output=True, text=True)
    flagged = {int(x) for x in flagged.stdout.split()}
    for m in msgs:
        m.malformed = m.frame in flagged

    stats = collections.Counter()
    shapes = collections.Counter()
    exact = collections.defaultdict(set)
    errors = []
    pairs = pair(msgs, server_ip, stats, errors)
    for call, m in pairs:
        stats["server_replies"] += 1
        stats[f"server_replies_{ {MSG: 'msg', NOMSG: 'nomsg', ERROR: 'error'}.get(m.proc, 'other') }"] += 1
        if m.writes and any(sum(s[1] for s in c) for c in m.writes):
            stats["server_replies_write_chunk_used"] += 1
        if m.reply and sum(s[1] for s in m.reply):
            stats["server_replies_reply_chunk_used"] += 1
        if m.malformed:
            if any(sum(s[1] for s in c) for c in m.writes):
                stats["ddp_replies_short_for_nfs_dissector"] += 1
            else:
                stats["malformed"] += 1
                errors.append(f"frame {m.frame}: reply to xid {m.xid} flagged malformed")
        for v in violations(call, m):
            stats["violations"] += 1
            errors.append(f"frame {m.frame} (reply to xid {m.xid}, call frame {call.frame}, "
                          f"{call.call_shape()}): {v}")
        # A Call's shape, and what the server made of it when not plain
        # success (an error, a READ at EOF).
        outcome = "" if m.outcome == "ok" else f" ({m.outcome})"
        key = (phase_of(call.time), call.call_shape() + outcome)
        shapes[key + (m.reply_shape(False),)] += 1
        exact[key].add(m.reply_shape(True))

    with open(f"{outdir}/wire-shapes.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(("phase", "call", "reply", "count", "exact_replies"))
        for (phase, call, reply), n in sorted(shapes.items()):
            w.writerow((phase, call, reply, n, "|".join(sorted(exact[(phase, call)]))))
    with open(f"{outdir}/wire-errors.txt", "w") as f:
        f.write("".join(e + "\n" for e in errors))
    for k in ("client_messages", "server_messages", "server_replies", "server_replies_msg",
              "server_replies_nomsg", "server_replies_error", "server_replies_write_chunk_used",
              "server_replies_reply_chunk_used", "server_backchannel_calls", "calls_unanswered",
              "ddp_replies_short_for_nfs_dissector", "malformed", "client_malformed", "violations"):
        print(f"wire_{k}={stats[k]}")
    for k in ("packets_retransmitted", "calls_resent"):
        print(f"wire_{k}={stats[k]}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
