#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The wire checker must catch what it claims to: each rule of
tests/vm/guest/wirecheck.py is broken once on purpose here, on rows shaped
as tshark prints them, and must be reported; a correct exchange must not."""

import collections
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../vm/guest"))
import wirecheck  # noqa: E402


def row(src, xid, proc, writes=(), reply=None, vers=1, credits=128, reads=0, op="100003/6",
        frame=1, qp="", psn="", nfs=None):
    """A tshark row: writes is a list of chunks, a chunk a list of
    (handle, length, offset) segments; reply likewise one chunk or None."""
    segs = [(0x10 + i, 100, 0x1000) for i in range(reads)]
    counts = []
    for c in writes:
        counts.append(len(c))
        segs += c
    if reply is not None:
        counts.append(len(reply))
        segs += reply
    f = {
        "frame.number": str(frame), "frame.time_epoch": "100.0", "ip.src": src,
        "ip.dst": "c" if src == "s" else "s", "infiniband.bth.destqp": qp,
        "infiniband.bth.psn": psn, "rpcordma.xid": xid,
        "rpcordma.version": str(vers), "rpcordma.flow_control": str(credits),
        "rpcordma.msg_type": str(proc), "rpcordma.reads_count": str(reads),
        "rpcordma.writes_count": str(len(writes)),
        "rpcordma.reply_count": "1" if reply is not None else "0",
        "rpcordma.segment_count": ";".join(map(str, counts)),
        "rpcordma.position": ";".join("0" for _ in range(reads)),
        "rpcordma.rdma_handle": ";".join(hex(s[0]) for s in segs),
        "rpcordma.rdma_length": ";".join(str(s[1]) for s in segs),
        "rpcordma.rdma_offset": ";".join(hex(s[2]) for s in segs),
        "rpcordma.errcode": "", "rpc.msgtyp": "0", "rpc.program": op.split("/")[0],
        "rpc.procedure": op.split("/")[1], "nfs.main_opcode": "",
    }
    f.update(nfs or {})
    return wirecheck.Message([f.get(k, "") for k in wirecheck.FIELDS])


CHUNK = [(0xaa, 4096, 0x7000), (0xbb, 8192, 0x9000)]
RCHUNK = [(0xcc, 65536, 0x2000)]


class Outcome(unittest.TestCase):
    def test_outcome(self):
        # What the server answered keys the comparison: success, an error
        # (first status of the reply), a READ at the end of the file.
        self.assertEqual(row("s", "0x1", 0).outcome, "ok")
        self.assertEqual(row("s", "0x1", 0, nfs={"nfs.nfsstat4": "0;0", "nfs.eof": "0"}).outcome, "ok")
        self.assertEqual(row("s", "0x1", 0, nfs={"nfs.nfsstat4": "10008;0"}).outcome, "error")
        self.assertEqual(row("s", "0x1", 0, nfs={"nfs.status3": "2"}).outcome, "error")
        self.assertEqual(row("s", "0x1", 0, nfs={"nfs.nfsstat4": "0;0;0;0", "nfs.eof": "1"}).outcome, "eof")


class Rules(unittest.TestCase):
    def v(self, call, reply):
        return wirecheck.violations(call, reply)

    def test_good_exchanges_pass(self):
        call = row("c", "0x1", 0, writes=[CHUNK])
        self.assertEqual(self.v(call, row("s", "0x1", 0, writes=[[(0xaa, 4096, 0x7000), (0xbb, 10, 0x9000)]])), [])
        self.assertEqual(self.v(call, row("s", "0x1", 0, writes=[[(0xaa, 0, 0x7000), (0xbb, 0, 0x9000)]])), [])
        call = row("c", "0x2", 0, reply=RCHUNK)
        self.assertEqual(self.v(call, row("s", "0x2", 1, reply=[(0xcc, 5000, 0x2000)])), [])
        self.assertEqual(self.v(row("c", "0x3", 0), row("s", "0x3", 0)), [])

    def test_each_rule_is_enforced(self):
        call = row("c", "0x1", 0, writes=[CHUNK])
        bad = {
            "version": row("s", "0x1", 0, writes=[CHUNK], vers=2),
            "credits": row("s", "0x1", 0, writes=[CHUNK], credits=0),
            "read list": row("s", "0x1", 0, writes=[CHUNK], reads=1),
            "nomsg without reply chunk offered": row("s", "0x1", 1, writes=[CHUNK]),
            "write chunk dropped": row("s", "0x1", 0),
            "segment longer than offered": row("s", "0x1", 0, writes=[[(0xaa, 4097, 0x7000), CHUNK[1]]]),
            "handle changed": row("s", "0x1", 0, writes=[[(0xab, 1, 0x7000), CHUNK[1]]]),
            "offset changed": row("s", "0x1", 0, writes=[[(0xaa, 1, 0x7008), CHUNK[1]]]),
            "segment dropped": row("s", "0x1", 0, writes=[CHUNK[:1]]),
            "reply chunk not offered": row("s", "0x1", 1, writes=[CHUNK], reply=RCHUNK),
            "rdma_error": row("s", "0x1", 4),
        }
        for what, reply in bad.items():
            with self.subTest(what):
                self.assertNotEqual(self.v(call, reply), [], what)
        call = row("c", "0x2", 0, reply=RCHUNK)
        for what, reply in {
            "msg despite reply chunk": row("s", "0x2", 0, reply=[(0xcc, 10, 0x2000)]),
            "reply chunk missing": row("s", "0x2", 1),
            "reply chunk too long": row("s", "0x2", 1, reply=[(0xcc, 65537, 0x2000)]),
            "nomsg with empty reply chunk": row("s", "0x2", 1, reply=[(0xcc, 0, 0x2000)]),
        }.items():
            with self.subTest(what):
                self.assertNotEqual(self.v(call, reply), [], what)

    def test_shapes(self):
        call = row("c", "0x1", 0, writes=[CHUNK], reply=RCHUNK)
        self.assertEqual(call.call_shape(), "100003/6 writes[4096,8192] reply[65536] reads0")
        reply = row("s", "0x1", 1, writes=[[(0xaa, 0, 0x7000), (0xbb, 0, 0x9000)]], reply=[(0xcc, 9, 0x2000)])
        self.assertEqual(reply.reply_shape(False), "NOMSG writes[unused] reply[used]")
        self.assertEqual(reply.reply_shape(True), "NOMSG writes[0,0] reply[9]")


class Pairing(unittest.TestCase):
    """How replies are matched to Calls, on the sequence of a real capture
    (IOMMU conformance, rust over rxe, XID 0x1c0bb29e): the Call, a copy of
    its packet retransmitted by RC, the reply; then a reconnect, the Call
    resent with a new handle on a new queue pair, and its reply."""

    OLD, NEW = [(0xde43, 16384, 0x1c0bb29e0a11d000)], [(0x10648, 16384, 0x1c0bb29e0a11d000)]

    def pair(self, msgs):
        stats, errors = collections.Counter(), []
        pairs = wirecheck.pair(msgs, "s", stats, errors)
        return [(c.frame, r.frame) for c, r in pairs], stats

    def test_retransmitted_packet_and_resent_call(self):
        msgs = [row("c", "0x1", 0, writes=[self.OLD], frame=18197, qp="0x16", psn="4571672"),
                row("c", "0x1", 0, writes=[self.OLD], frame=18217, qp="0x16", psn="4571672"),
                row("s", "0x1", 0, writes=[self.OLD], frame=18234, qp="0x16", psn="12748059"),
                row("c", "0x1", 0, writes=[self.NEW], frame=18710, qp="0x19", psn="4963723"),
                row("s", "0x1", 0, writes=[self.NEW], frame=18723, qp="0x19", psn="10489575")]
        pairs, stats = self.pair(msgs)
        self.assertEqual(pairs, [(18197, 18234), (18710, 18723)])
        self.assertEqual((stats["packets_retransmitted"], stats["calls_resent"],
                          stats["calls_unanswered"], stats["server_backchannel_calls"]), (1, 0, 0, 0))
        by_frame = {m.frame: m for m in msgs}
        for c, r in pairs:
            self.assertEqual(wirecheck.violations(by_frame[c], by_frame[r]), [])

    def test_unanswered_call_resent_after_reconnect(self):
        # XID 0x92382d97 of the same capture: no reply on the first connection.
        pairs, stats = self.pair([
            row("c", "0x2", 0, writes=[self.OLD], frame=18176, qp="0x17", psn="1"),
            row("c", "0x2", 0, writes=[self.NEW], frame=18740, qp="0x1a", psn="2"),
            row("s", "0x2", 0, writes=[self.NEW], frame=18758, qp="0x1a", psn="3")])
        self.assertEqual(pairs, [(18740, 18758)])
        self.assertEqual((stats["calls_resent"], stats["calls_unanswered"]), (1, 0))

    def test_not_deduplicated_without_the_same_packet(self):
        # The same PSN on another queue pair is another packet; without
        # the RC fields nothing is taken for a retransmission.
        pairs, stats = self.pair([
            row("c", "0x3", 0, frame=1, qp="0x16", psn="7"),
            row("c", "0x4", 0, frame=2, qp="0x17", psn="7"),
            row("c", "0x5", 0, frame=3), row("c", "0x5", 0, frame=4),
            row("s", "0x3", 0, frame=5, qp="0x16", psn="9"),
            row("s", "0x4", 0, frame=6, qp="0x17", psn="9"),
            row("s", "0x6", 0, frame=7)])
        self.assertEqual(pairs, [(1, 5), (2, 6)])
        self.assertEqual((stats["packets_retransmitted"], stats["calls_unanswered"],
                          stats["server_backchannel_calls"]), (0, 2, 1))


if __name__ == "__main__":
    unittest.main()
