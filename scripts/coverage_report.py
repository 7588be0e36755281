#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""coverage_report.py [--floor PCT] [--logs DIR] FLAVOUR:BUILD:RUN...

Machine-code coverage of the Send path from the runs of scripts/coverage.sh.
Each argument names one VM run: the flavour (c or rust), the build
directory of the debuginfo module it loaded (build/c-cov, build/rust-cov)
and the run's directory, which holds coverage.txt (the executed kernel
instruction addresses, from the TCG plugin tests/profile/insn_coverage.c)
and kallsyms-rpcrdma-N.txt (the module's text symbols at each load,
written by tests/vm/guest/lib.sh's coverage_note_module).

The Send path is the build's sendpath-symbols.txt (c: the functions of
svc_rdma_sendto.o; rust: those of the crate's object) and, for rust,
shim-symbols.txt (the C shim), as scripts/build-module.sh lists them.
Their instructions are those objdump -d finds in the .ko within each
function's symbol size. At each load, the module's text section base is
found from its unique symbols in kallsyms (runtime address minus the
symbol's offset in the section, which must agree for all of them); an
instruction at section offset O counts as executed if base + O is in the
run's coverage.txt. Runs and loads are united. A module unloaded and
loaded again at an overlapping address in the same run would make that
union ambiguous: it is reported if it happens.

Prints, and writes to DIR (default $RPCRDMA_CACHE/logs): the table of
instructions executed / total per Send-path function and per flavour
(rust as crate + shim, and the crate and the shim alone, side by side
with c; when one flavour ran workloads the other did not, also each
flavour's share over the workloads both ran), the same per run, then every maximal run of never-executed
instructions ("block") of the rust flavour with its bytes and the source
lines it comes from (addr2line on the debuginfo .ko: the innermost inlined
frame in our own sources), largest first: coverage-table.txt,
coverage-blocks-rust.txt (and coverage-blocks-c.txt, not printed).
--floor PCT exits non-zero if the rust flavour's (crate + shim) executed
share is below PCT percent.
"""

import argparse
import bisect
import collections
import glob
import os
import re
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Instructions that only pad (loop alignment, after calls that do not return).
PADDING = re.compile(r'^(nop[a-z]*|int3|xchg\s+%ax,%ax|data16.*nop.*|cs nop.*)\b')


def run(cmd, stdin=None):
    """stdout of cmd (a list), which must succeed."""
    r = subprocess.run(cmd, input=stdin, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        sys.exit(f'coverage_report: {" ".join(cmd[:3])}... failed: {r.stderr.strip()[:500]}')
    return r.stdout


class Func:
    """One Send-path function of a build: where it is and its instructions."""

    def __init__(self, name, group, section, value, size):
        self.name, self.group, self.section = name, group, section
        self.value, self.size = value, size
        self.insns = []        # (section offset, length, mnemonic)
        self.executed = set()  # section offsets executed in some run
        self.pretty = name
        self.referenced = True  # a call, jump or relocation reaches it


class Build:
    """A debuginfo module build: its Send-path functions and instructions."""

    # The local symbols of which object are the Send path's (FILE symbols).
    OBJECT_FILE = {'sendto': lambda f: f == 'svc_rdma_sendto.c',
                   'crate': lambda f: f.startswith('svc_rdma_sendto_rs'),
                   'shim': lambda f: f == 'svc_rdma_sendto_shim.c'}

    def __init__(self, flavour, path, like=None):
        """like: for a build whose runs are carried over onto another's
        functions (the KUnit build), that other Build: its functions are
        looked up here by name, and those missing are left out."""
        self.flavour, self.path = flavour, path
        self.ko = os.path.join(path, 'rpcrdma.ko')
        if not os.path.isfile(self.ko):
            sys.exit(f'coverage_report: no {self.ko}')
        self.sections = {}      # index -> name
        self.section_size = {}  # name -> bytes
        self.section_offset = {}  # name -> file offset
        for m in re.finditer(r'^\s*\[\s*(\d+)\]\s+(\S+)\s+\S+\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)',
                             run(['readelf', '-SW', self.ko]), re.M):
            self.sections[m.group(1)] = m.group(2)
            self.section_offset[m.group(2)] = int(m.group(3), 16)
            self.section_size[m.group(2)] = int(m.group(4), 16)
        self.relocs = None      # section -> [(offset, type, symbol, addend)]
        # Every function symbol: (name, file, section name, value, size).
        self.symbols = []
        self.local_data = set()  # local symbols that are not functions
        cur_file = ''
        for line in run(['readelf', '-sW', self.ko]).splitlines():
            f = line.split()
            if len(f) < 8 or not f[0].endswith(':'):
                continue
            if f[3] == 'FILE':
                cur_file = f[7]
            elif f[3] != 'FUNC' and f[4] == 'LOCAL':
                self.local_data.add(f[7])
            elif f[3] == 'FUNC' and f[6] in self.sections:
                local = f[4] == 'LOCAL'
                self.symbols.append((f[7], cur_file if local else None,
                                     self.sections[f[6]], int(f[1], 16), int(f[2])))
        self.by_name = collections.defaultdict(list)
        for s in self.symbols:
            self.by_name[s[0]].append(s)
        if like is not None:
            wanted = [(fn.group, 'the build it is carried over onto', [fn.name]) for fn in like.funcs]
        else:
            wanted = []
            groups = [('sendto', 'sendpath-symbols.txt')] if flavour == 'c' else \
                [('crate', 'sendpath-symbols.txt'), ('shim', 'shim-symbols.txt')]
            for group, listing in groups:
                with open(os.path.join(path, listing)) as fh:
                    wanted.append((group, listing, [n.strip() for n in fh if n.strip()]))
        self.funcs = []
        for group, listing, names in wanted:
            for name in names:
                cands = self.by_name.get(name, [])
                if len(cands) > 1:
                    cands = [s for s in cands
                             if s[1] is None or self.OBJECT_FILE[group](s[1])]
                if like is not None and not cands:
                    continue
                if len(cands) != 1:
                    sys.exit(f'coverage_report: {name} ({listing}) is {len(cands)} '
                             f'symbols in {self.ko}, not one')
                _, _, sec, value, size = cands[0]
                self.funcs.append(Func(name, group, sec, value, size))
        self.disassemble()
        self.find_references()
        self.demangle()

    def disassemble(self):
        by_section = collections.defaultdict(list)
        for fn in self.funcs:
            by_section[fn.section].append(fn)
        insn_re = re.compile(r'^\s*([0-9a-f]+):\s+(.*)$')
        target_re = re.compile(r'^(?:call|jmp|j[a-z]+)\s+([0-9a-f]+) <')
        self.branch_targets = collections.defaultdict(set)  # section -> offsets
        for sec, funcs in by_section.items():
            offs, texts = [], []
            for line in run(['objdump', '-d', '-w', '--no-show-raw-insn', '-j', sec,
                             self.ko]).splitlines():
                m = insn_re.match(line)
                if m:
                    offs.append(int(m.group(1), 16))
                    texts.append(m.group(2).strip())
                    t = target_re.match(texts[-1])
                    if t:
                        self.branch_targets[sec].add(int(t.group(1), 16))
            for fn in funcs:
                lo = bisect.bisect_left(offs, fn.value)
                hi = bisect.bisect_left(offs, fn.value + fn.size)
                for i in range(lo, hi):
                    end = offs[i + 1] if i + 1 < hi else fn.value + fn.size
                    fn.insns.append((offs[i], end - offs[i], texts[i]))
                if not fn.insns:
                    sys.exit(f'coverage_report: no instructions of {fn.name} in {self.ko}')

    # Relocations that do not make a function reachable: debug information,
    # and objtool's list of ENDBRs to seal (functions whose address is
    # never taken).
    NOT_A_REFERENCE = re.compile(r"^\.rela\.(debug_|ibt_endbr_seal$)")

    def find_references(self):
        """Marks the local functions that nothing calls, jumps to or takes
        the address of: an out-of-line copy the compiler kept after inlining every
        call of it. A relocation to a section offset at the function or 4
        bytes before it (a PC-relative call's addend) counts as a reference."""
        sec_refs = collections.defaultdict(set)  # section -> offsets referenced
        sym_refs = set()
        rel_re = re.compile(r'^\s*[0-9a-f]+\s+[0-9a-f]+\s+\S+\s+[0-9a-f]+\s+(\S+)\s*([+-])\s*([0-9a-f]+)')
        rela = None
        for line in run(['readelf', '-rW', self.ko]).splitlines():
            h = re.match(r"^Relocation section '([^']+)'", line)
            if h:
                rela = h.group(1)
                continue
            if rela is None or self.NOT_A_REFERENCE.match(rela):
                continue
            m = rel_re.match(line)
            if not m:
                continue
            addend = int(m.group(3), 16) * (1 if m.group(2) == '+' else -1)
            if m.group(1) in self.section_size:
                sec_refs[m.group(1)].add(addend)
            else:
                sym_refs.add(m.group(1))
        for fn in self.funcs:
            fn.referenced = (fn.name in sym_refs
                             or fn.value in self.branch_targets[fn.section]
                             or fn.value in sec_refs[fn.section]
                             or fn.value - 4 in sec_refs[fn.section])

    # Bytes a relocation of each type fills in (x86-64); others count as 4.
    RELOC_BYTES = {'R_X86_64_64': 8, 'R_X86_64_PC64': 8, 'R_X86_64_NONE': 0}
    PC_RELATIVE = re.compile(r'^R_X86_64_(PC32|PLT32|GOTPCREL|GOTPCRELX|REX_GOTPCRELX)$')

    def load_relocs(self):
        """self.relocs: each text section's relocations, by offset."""
        self.relocs = collections.defaultdict(list)
        rel_re = re.compile(r'^\s*([0-9a-f]+)\s+[0-9a-f]+\s+(R_\S+)\s+(?:[0-9a-f]+\s+)?(\S+)?\s*([+-])\s*([0-9a-f]+)\s*$')
        target = None
        for line in run(['readelf', '-rW', self.ko]).splitlines():
            h = re.match(r"^Relocation section '\.rela([^']+)'", line)
            if h:
                target = h.group(1) if h.group(1) in self.section_size else None
                continue
            m = rel_re.match(line) if target else None
            if m:
                addend = int(m.group(5), 16) * (1 if m.group(4) == '+' else -1)
                self.relocs[target].append((int(m.group(1), 16), m.group(2), m.group(3) or '', addend))
        for lst in self.relocs.values():
            lst.sort()

    def function_at(self, section, offset):
        """(name, offset in it) of the function symbol of section holding offset."""
        for name, _, sec, value, size in self.symbols:
            if sec == section and value <= offset < value + max(size, 1):
                return name, offset - value
        return None, offset

    def fingerprint(self, fn):
        """What makes a function the same machine code in another build:
        its bytes with every relocated field zeroed, and each relocation's
        place, type and target (a symbol and addend; a target given as a
        section and offset is named by the function that holds it, or by
        its section alone when no function does, such as a string)."""
        if self.relocs is None:
            self.load_relocs()
        with open(self.ko, 'rb') as fh:
            fh.seek(self.section_offset[fn.section] + fn.value)
            code = bytearray(fh.read(fn.size))
        marks = []
        lst = self.relocs.get(fn.section, [])
        for off, typ, sym, addend in lst[bisect.bisect_left(lst, (fn.value,)):]:
            if off >= fn.value + fn.size:
                break
            rel = off - fn.value
            n = self.RELOC_BYTES.get(typ, 4)
            code[rel:rel + n] = bytes(len(code[rel:rel + n]))
            if sym in self.section_size:
                tgt = addend + (4 if self.PC_RELATIVE.match(typ) else 0)
                name, at = self.function_at(sym, tgt)
                target = (name, at) if name else (re.sub(r'\.\d+$', '', sym),)
            elif sym in self.local_data:
                # A constant of the object's own (a string, a panic
                # location), whose generated name differs between builds.
                target = ('local data',)
            else:
                target = (sym, addend)
            marks.append((rel, typ) + target)
        # A call or jump out of the function that the linker resolved (no
        # relocation left: a function of the same section): its
        # displacement depends on the layout; its target, by name, does not.
        for off, n, text in fn.insns:
            m = re.match(r'^(?:call|jmp|j[a-z]+)\s+([0-9a-f]+)\s+<([^>]+)>', text)
            if not m or fn.value <= int(m.group(1), 16) < fn.value + fn.size:
                continue
            rel = off - fn.value
            if any(rel <= r[0] < rel + n for r in marks):
                continue
            width = 4 if n >= 5 else 1
            code[rel + n - width:rel + n] = bytes(width)
            marks.append((rel, 'direct', m.group(2)))
        marks.sort()
        return bytes(code), tuple(marks)

    def demangle(self):
        out = run(['llvm-cxxfilt-19'], '\n'.join(f.name for f in self.funcs) + '\n').splitlines()
        for fn, d in zip(self.funcs, out):
            fn.pretty = d.replace('svc_rdma_sendto_rs::', '')

    def section_bases(self, kallsyms):
        """Section name -> runtime base at one load, from its unique symbols."""
        addr_of = collections.defaultdict(list)
        for line in kallsyms:
            f = line.split()
            if len(f) >= 3:
                addr_of[f[2]].append(int(f[0], 16))
        bases = {}
        for sec in {fn.section for fn in self.funcs}:
            votes = collections.Counter()
            for name, syms in self.by_name.items():
                if len(syms) == 1 and syms[0][2] == sec and len(addr_of.get(name, [])) == 1:
                    votes[addr_of[name][0] - syms[0][3]] += 1
            if not votes:
                return None, f'no symbol of {sec} in kallsyms'
            (base, n), = votes.most_common(1)
            if n < sum(votes.values()):
                return None, (f'{sec}: symbols disagree on the base '
                              f'({n} of {sum(votes.values())} agree)')
            bases[sec] = base
        return bases, None


# Runs of other builds of the rust flavour (the KUnit build, the fault-
# injection build), counted in the functions they share with build/rust-cov.
OTHER_BUILDS = ('kunit', 'fault')


def same_code(build, donor):
    """{function name: the donor's Func} for the build's functions that are
    the same machine code in the donor build (Build.fingerprint)."""
    mine = {fn.name: fn for fn in build.funcs}
    same = {}
    for dfn in donor.funcs:
        fn = mine.get(dfn.name)
        if fn and fn.size == dfn.size and build.fingerprint(fn) == donor.fingerprint(dfn):
            same[fn.name] = dfn
    return same


def load_run(build, rundir, donor=None):
    """Marks the build's instructions executed in the run; its summary.

    With donor (a run of another build, the KUnit one): only its functions
    that are the same machine code as the build's count, each executed
    offset carried over to the build's function at the same offset."""
    cov = os.path.join(rundir, 'coverage.txt')
    loads = sorted(glob.glob(os.path.join(rundir, 'kallsyms-rpcrdma-*.txt')),
                   key=lambda p: int(re.search(r'-(\d+)\.txt$', p).group(1)))
    if not os.path.isfile(cov):
        return None, f'no coverage.txt in {rundir}'
    if not loads:
        return None, f'no kallsyms-rpcrdma-*.txt in {rundir} (module not loaded, or no rs_coverage=1)'
    with open(cov) as fh:
        executed = {int(x, 16) for x in fh.read().split()}
    hit = set()
    spans = []
    ran = donor or build
    same = same_code(build, donor) if donor else {fn.name: fn for fn in build.funcs}
    for path in loads:
        with open(path) as fh:
            bases, err = ran.section_bases(fh.readlines())
        if err:
            return None, f'{path}: {err}'
        for sec, base in bases.items():
            spans.append((sec, base, base + ran.section_size[sec]))
        for fn in build.funcs:
            rfn = same.get(fn.name)
            if rfn is None:
                continue
            base = bases[rfn.section]
            for off, _, _ in fn.insns:
                if base + rfn.value + (off - fn.value) in executed:
                    hit.add((fn.name, off))
    warn = None
    distinct = sorted(set(spans), key=lambda s: s[1])
    for a, b in zip(distinct, distinct[1:]):
        if b[1] < a[2]:
            warn = (f'{rundir}: loads at overlapping addresses ({a[0]} at {a[1]:x}, '
                    f'{b[0]} at {b[1]:x}): their union may count another load\'s code')
    for fn in build.funcs:
        fn.executed |= {off for name, off in hit if name == fn.name}
    total = sum(len(fn.insns) for fn in build.funcs)
    name = os.path.basename(rundir.rstrip('/'))
    m = re.match(r'^(?:cov-)?(.+?)-(?:c|rust)-\d{8}-\d{6}-\d+$', name)
    return {'run': name, 'workload': m.group(1) if m else name, 'loads': len(loads),
            'hits': hit, 'hit': len(hit), 'total': total, 'kernel_insns': len(executed),
            'warn': warn, 'same': len(same) if donor else None}, None


# Instructions after which execution does not fall through.
NO_FALL_THROUGH = re.compile(r'^(jmp[a-z]*|ret[a-z]*|ud[0-9]|int3|hlt)\b')
JUMP = re.compile(r'^(j[a-z]+)\s+([0-9a-f]+)\s+<')


# The sections whose relocations can name a way into code: code itself
# (an address taken), jump tables and function pointers in data, jump
# labels' targets, exception fixups. The others name places already
# reached in order (call sites, returns, ftrace's entries, BUG sites) or
# are debug information.
ENTRY_SOURCES = re.compile(r'^(\.text|\.rodata|\.data|\.ref\.data|__jump_table|__ex_table)')


def edge_counts(build):
    """Conditional branches of the Send path, as edges (taken, not taken),
    from instruction coverage alone: an edge is known taken when its
    successor ran and has no other way in (no other jump to it, no fall
    into it, no relocation naming it: a jump label, an exception fixup, a
    jump table's entry), known not taken when its branch or its successor
    never ran; otherwise it is not known. A function with an indirect jump
    (a jump table) leaves every executed successor in it unknown, and so
    does a successor outside the Send path's functions. A jump whose
    target is a relocation (a tail call, a return thunk) leaves the
    module's view: its taken edge is unknown once the branch ran."""
    if build.relocs is None:
        build.load_relocs()
    named = collections.defaultdict(set)  # section -> offsets a relocation names
    for source, lst in build.relocs.items():
        if not ENTRY_SOURCES.match(source):
            continue
        for _, _, sym, addend in lst:
            if sym in build.section_size:
                named[sym] |= {addend, addend + 4}
    preds = collections.defaultdict(set)   # (section, offset) -> offsets of ways in
    executed, insns, owner = set(), set(), {}
    branches = []
    for fn in build.funcs:
        relocated = {o for o, _, _, _ in build.relocs.get(fn.section, [])
                     if fn.value <= o < fn.value + fn.size}
        indirect = any(re.match(r'^(notrack\s+)?jmp\s+\*', t) for _, _, t in fn.insns)
        executed |= {(fn.section, o) for o in fn.executed}
        for i, (off, n, text) in enumerate(fn.insns):
            insns.add((fn.section, off))
            owner[(fn.section, off)] = indirect
            m = JUMP.match(text)
            external = any(off <= r < off + n for r in relocated)
            if m and not external:
                preds[(fn.section, int(m.group(2), 16))].add(off)
            nxt = fn.insns[i + 1][0] if i + 1 < len(fn.insns) else None
            if nxt is not None and not NO_FALL_THROUGH.match(text):
                preds[(fn.section, nxt)].add(off)
            if m and m.group(1) != 'jmp' and nxt is not None:
                target = None if external else int(m.group(2), 16)
                branches.append((fn.section, off, target, nxt, indirect))
    out = collections.Counter()
    for sec, off, target, fall, indirect in branches:
        for succ in (target, fall):
            key = (sec, succ)
            if (sec, off) not in executed or (key in insns and key not in executed):
                out['not taken'] += 1
            elif succ is None or key not in insns or indirect or owner.get(key) or succ in named[sec]:
                out['unknown'] += 1
            elif preds[key] == {off}:
                out['taken'] += 1
            else:
                out['unknown'] += 1
    return out


def pct(a, b):
    return 100.0 * a / b if b else 0.0


def counts(funcs):
    ex = sum(len(fn.executed) for fn in funcs)
    tot = sum(len(fn.insns) for fn in funcs)
    return ex, tot


def function_table(build, title):
    lines = [f'{title}:']
    width = max(len(fn.pretty) for fn in build.funcs)
    width = min(max(width, 20), 110)
    lines.append(f'  {"function":<{width}}  {"group":<6} {"executed":>8} / {"total":<5} {"%":>6}  bytes')
    for fn in sorted(build.funcs, key=lambda f: (f.group, f.pretty)):
        ex, tot = len(fn.executed), len(fn.insns)
        name = fn.pretty if len(fn.pretty) <= width else fn.pretty[:width - 3] + '...'
        lines.append(f'  {name:<{width}}  {fn.group:<6} {ex:>8} / {tot:<5} {pct(ex, tot):>5.1f}%  {fn.size}')
    return lines


SRC_PREFIXES = [
    (re.compile(r'^.*/modbuild/[^/]+/'), ''),
    (re.compile(r'^.*/linux-source-[^/]+/(?:build-[^/]+/\.\./)?'), 'linux/'),
    (re.compile(r'^.*/lib/rustlib/src/rust/'), 'rust-src/'),
    (re.compile(r'^/rustc/[0-9a-f]+/'), 'rust-src/'),
]


def short_path(p):
    for rx, repl in SRC_PREFIXES:
        if rx.match(p):
            return rx.sub(repl, p, count=1)
    return p


def ours(path):
    """A file of this repository's sources (src/...), or the staged C file."""
    return path.startswith('src/') or path in ('svc_rdma_sendto.c',)


def symbolize(build, offsets_by_section):
    """(section, offset) -> list of (function, file, line) frames, innermost first."""
    frames = {}
    for sec, offs in offsets_by_section.items():
        offs = sorted(set(offs))
        if not offs:
            continue
        out = run(['addr2line', '-a', '-f', '-i', '-C', '-j', sec, '-e', build.ko],
                  ''.join(f'{o:#x}\n' for o in offs))
        cur = None
        lines = out.splitlines()
        i = 0
        while i < len(lines):
            if lines[i].startswith('0x'):
                cur = int(lines[i], 16)
                frames[(sec, cur)] = []
                i += 1
                continue
            func = lines[i]
            loc = lines[i + 1] if i + 1 < len(lines) else '??:0'
            path, _, line = loc.rpartition(':')
            line = re.sub(r'\s.*', '', line)
            frames[(sec, cur)].append((func, short_path(path),
                                       int(line) if line.isdigit() else 0))
            i += 2
    return frames


def compress(lines_by_file):
    """{file: {line}} -> 'file:1-3,7; other:9'."""
    parts = []
    for f in sorted(lines_by_file):
        nums = sorted(lines_by_file[f])
        ranges, start, prev = [], nums[0], nums[0]
        for n in nums[1:] + [None]:
            if n is not None and n == prev + 1:
                prev = n
                continue
            ranges.append(f'{start}' if start == prev else f'{start}-{prev}')
            if n is not None:
                start = prev = n
        parts.append(f'{f}:{",".join(ranges)}')
    return '; '.join(parts)


def blocks(build):
    """Every maximal run of never-executed instructions, with its sources."""
    found = []
    for fn in build.funcs:
        cur = []
        for insn in fn.insns + [None]:
            if insn is not None and insn[0] not in fn.executed:
                cur.append(insn)
                continue
            if cur:
                found.append((fn, cur))
                cur = []
    wanted = collections.defaultdict(list)
    for fn, insns in found:
        wanted[fn.section] += [o for o, _, _ in insns]
    frames = symbolize(build, wanted)
    out = []
    for fn, insns in found:
        mine, other = collections.defaultdict(set), collections.defaultdict(set)
        for off, _, _ in insns:
            fr = [f for f in frames.get((fn.section, off), []) if f[2] > 0]
            own = [f for f in fr if ours(f[1])]
            if own:
                mine[own[0][1]].add(own[0][2])
            elif fr:
                other[fr[0][1]].add(fr[0][2])
        nbytes = sum(n for _, n, _ in insns)
        padding = all(PADDING.match(t) for _, _, t in insns)
        src = compress(mine) if mine else (compress(other) if other else '?')
        if mine and other:
            src += ' (and ' + compress(other) + ')'
        out.append({'fn': fn, 'off': insns[0][0] - fn.value, 'bytes': nbytes,
                    'insns': len(insns), 'padding': padding, 'src': src,
                    'whole': len(insns) == len(fn.insns)})
    out.sort(key=lambda b: (b['padding'], -b['bytes'], b['fn'].pretty, b['off']))
    return out


REASONS = os.path.join(TOP, 'tests', 'profile', 'coverage-reasons.txt')


def load_reasons(path):
    """[(regex, reason)] from path: 'REGEX<TAB>REASON' lines, # comments.

    A block takes the reason of the first regex that matches "FUNCTION
    SOURCES" (its function's name, a space, its source lines as printed);
    none matching means a test is missing.
    """
    out = []
    if not os.path.exists(path):
        return out
    with open(path) as fh:
        for n, line in enumerate(fh, 1):
            line = line.rstrip('\n')
            if not line.strip() or line.lstrip().startswith('#'):
                continue
            pat, sep, why = line.partition('\t')
            if not sep or not why.strip():
                sys.exit(f'coverage_report: {path}:{n}: not REGEX<TAB>REASON')
            out.append((re.compile(pat), why.strip()))
    return out


UNCALLED = ('never called: an out-of-line copy that the compiler kept after inlining every '
            'call of it (no call, jump or relocation in the object reaches it)')


def reason_of(b, reasons):
    if b['padding']:
        return 'padding'
    if b['whole'] and not b['fn'].referenced:
        return UNCALLED
    key = f'{b["fn"].pretty} {b["src"]}'
    for rx, why in reasons:
        if rx.search(key):
            return why
    return 'test missing'


def block_lines(build, blist, reasons):
    """The blocks file's lines, and the executed share of what can run."""
    lines = [f'Never-executed blocks of the {build.flavour} flavour ({build.ko}), largest first;',
             'padding (nop/int3 only) last. bytes, instructions, function+offset [group], source lines',
             '(innermost inlined frame in our own sources; otherwise the innermost known),',
             f'reason ({os.path.relpath(REASONS, TOP)}; "test missing" where none applies):']
    by_reason = collections.Counter()
    for b in blist:
        why = reason_of(b, reasons)
        by_reason[why] += b['insns']
        tag = ' (whole function)' if b['whole'] else ''
        tag += ' (padding)' if b['padding'] else ''
        lines.append(f'  {b["bytes"]:>5} B {b["insns"]:>4} insns  {b["fn"].pretty}+{b["off"]:#x} '
                     f'[{b["fn"].group}]{tag}')
        lines.append(f'         {b["src"]}')
        lines.append(f'         reason: {why}')
    summary = ['Never-executed instructions by reason:']
    for why, n in by_reason.most_common():
        summary.append(f'  {n:>5}  {why}')
    # A claim that no never-executed block takes is stale: a test reaches
    # what it described (or its pattern drifted), and it should go; one
    # that only some runs reach (timing) is kept, and listed here then.
    if build.flavour == 'rust':
        used = {reason_of(b, reasons) for b in blist}
        stale = [(rx, why) for rx, why in reasons if why not in used]
        if stale:
            summary.append(f'  claims in {os.path.relpath(REASONS, TOP)} that no never-executed block '
                           f'takes (reached in these runs: remove a claim that a test always reaches, '
                           f'fix a pattern that drifted):')
            for rx, why in stale:
                summary.append(f'         {rx.pattern[:70]}  ({why[:60]}...)')
    executed, can = can_run_counts(build, by_reason)
    summary.append(f'  executed share of the instructions less padding, never-called copies and blocks '
                   f'whose reason says unreachable by design: {executed} / {can}, {pct(executed, can):.1f}%')
    excluded = excluded_counts(by_reason)
    summary.append(f'  left out of that share: {excluded["emitted"]} instructions the compiler emitted that no '
                   f'source path reaches (padding, never-called copies), {excluded["claimed"]} in blocks '
                   f'claimed unreachable by design')
    return summary + [''] + lines, (pct(executed, can), excluded)


def excluded_counts(by_reason):
    """Never-executed instructions left out of the can-run share: those
    the compiler emitted that no source path reaches ('emitted': padding,
    never-called copies), and those in blocks the reasons file claims
    unreachable by design ('claimed')."""
    emitted = sum(n for why, n in by_reason.items() if why in ('padding', UNCALLED))
    claimed = sum(n for why, n in by_reason.items() if not can_run(why)) - emitted
    return {'emitted': emitted, 'claimed': claimed}


def can_run_counts(build, by_reason):
    """(executed, instructions less those never executed whose reason
    says they cannot run), by_reason: never-executed instructions per
    reason."""
    executed, total = counts(build.funcs)
    return executed, total - sum(n for why, n in by_reason.items() if not can_run(why))


def can_run(reason):
    """Whether a never-executed block of this reason is one some input or
    timing could run: not padding, not a copy nothing calls, not one whose
    reason (a claim, kept true in the reasons file) shows it unreachable."""
    return not (reason in ('padding', UNCALLED) or reason.startswith('unreachable by design'))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[2])
    ap.add_argument('--floor', type=float, default=None,
                    help='exit non-zero if the rust flavour executed less than PCT%% of its Send-path instructions')
    ap.add_argument('--floor-can-run', type=float, default=None,
                    help='exit non-zero if the rust flavour executed less than PCT%% of its Send-path '
                    'instructions less padding, never-called copies and blocks whose reason says '
                    'unreachable by design')
    ap.add_argument('--max-emitted', type=int, default=None,
                    help='exit non-zero if more than N never-executed rust instructions are padding or '
                    'never-called copies')
    ap.add_argument('--max-claimed', type=int, default=None,
                    help='exit non-zero if more than N never-executed rust instructions are in blocks '
                    'the reasons file claims unreachable by design')
    ap.add_argument('--logs', default=os.path.join(
        os.environ.get('RPCRDMA_CACHE') or os.path.join(
            os.environ.get('XDG_CACHE_HOME') or os.path.expanduser('~/.cache'), 'rpcrdma-rs'),
        'logs'))
    ap.add_argument('runs', nargs='+', metavar='FLAVOUR:BUILD:RUN',
                    help='FLAVOUR c or rust; or kunit or fault, a run of the KUnit or the fault-injection '
                    'build, whose executed instructions count in the rust build\'s functions that are '
                    'the same machine code in both')
    args = ap.parse_args()

    builds, per_run, problems, warnings = {}, [], [], []
    specs = []
    for spec in args.runs:
        try:
            specs.append(tuple(spec.split(':', 2)))
            flavour, bdir, rdir = specs[-1]
        except ValueError:
            sys.exit(f'coverage_report: {spec} is not FLAVOUR:BUILD:RUN')
        if flavour not in ('c', 'rust') + OTHER_BUILDS:
            sys.exit(f'coverage_report: flavour {flavour} is not c, rust, {" or ".join(OTHER_BUILDS)}')
    # The other builds' runs last: their builds are matched against rust's.
    donors = {}
    for flavour, bdir, rdir in sorted(specs, key=lambda t: t[0] in OTHER_BUILDS):
        if flavour in OTHER_BUILDS:
            if 'rust' not in builds:
                sys.exit(f'coverage_report: a {flavour} run needs a rust run too')
            if bdir not in donors:
                donors[bdir] = Build('rust', bdir, like=builds['rust'])
            summary, err = load_run(builds['rust'], rdir, donor=donors[bdir])
        else:
            if flavour not in builds:
                builds[flavour] = Build(flavour, bdir)
            elif os.path.realpath(builds[flavour].path) != os.path.realpath(bdir):
                sys.exit(f'coverage_report: two builds of {flavour}: {builds[flavour].path}, {bdir}')
            summary, err = load_run(builds[flavour], rdir)
        if err:
            problems.append(err)
            continue
        if summary['warn']:
            warnings.append(summary['warn'])
        per_run.append((flavour, summary))

    out = ['Machine-code coverage of the Send path: instructions executed at least once in '
           f'{len(per_run)} VM runs ({", ".join(sorted({f for f, _ in per_run}))}), debuginfo builds.', '']
    for flavour in ('c', 'rust'):
        if flavour in builds:
            b = builds[flavour]
            title = ('c: svc_rdma_sendto.o' if flavour == 'c'
                     else 'rust: the crate (svc_rdma_sendto_rs.o) and the C shim (svc_rdma_sendto_shim.o)')
            out += function_table(b, title) + ['']

    cols = []
    if 'c' in builds:
        cols.append(('c', builds['c'].funcs))
    if 'rust' in builds:
        r = builds['rust'].funcs
        cols += [('rust crate+shim', r), ('rust crate', [f for f in r if f.group == 'crate']),
                 ('rust shim', [f for f in r if f.group == 'shim'])]
    out.append('Totals (union of the runs):')
    out.append(f'  {"":<24}' + ''.join(f'{name:>18}' for name, _ in cols))
    out.append(f'  {"functions":<24}' + ''.join(f'{len(fs):>18}' for _, fs in cols))
    out.append(f'  {"functions entered":<24}' +
               ''.join(f'{sum(1 for f in fs if f.executed):>18}' for _, fs in cols))
    out.append(f'  {"instructions executed":<24}' + ''.join(f'{counts(fs)[0]:>18}' for _, fs in cols))
    out.append(f'  {"instructions":<24}' + ''.join(f'{counts(fs)[1]:>18}' for _, fs in cols))
    out.append(f'  {"executed share":<24}' +
               ''.join(f'{pct(*counts(fs)):>17.1f}%' for _, fs in cols))
    pad = []
    for _, fs in cols:
        n = sum(1 for f in fs for o, _, t in f.insns if o not in f.executed and PADDING.match(t))
        pad.append(n)
    out.append(f'  {"  never run: padding":<24}' + ''.join(f'{n:>18}' for n in pad))
    out.append(f'  {"bytes":<24}' + ''.join(f'{sum(f.size for f in fs):>18}' for _, fs in cols))
    # Side by side on equal terms: each flavour over the workloads both ran.
    wl = {fl: {s['workload'] for f, s in per_run if f == fl} for fl in ('c', 'rust')}
    common = wl['c'] & wl['rust']
    if common and (wl['c'] | wl['rust']) - common:
        hits = {'c': set(), 'rust': set()}
        for f, s in per_run:
            if s['workload'] in common:
                hits[f] |= s['hits']
        shares = []
        for name, fs in cols:
            names = {f.name for f in fs}
            n = sum(1 for fn, _ in hits[name.split()[0]] if fn in names)
            shares.append(f'{pct(n, counts(fs)[1]):>17.1f}%')
        out.append(f'  {"share: " + "+".join(sorted(common)):<24}' + ''.join(shares))
    if 'rust' in builds and any(f in OTHER_BUILDS for f, _ in per_run):
        r = builds['rust'].funcs
        vm = set().union(*[s['hits'] for f, s in per_run if f == 'rust'])
        total = counts(r)[1]
        out.append(f'  rust crate+shim over the production build\'s runs alone: {len(vm)} / {total}, '
                   f'{pct(len(vm), total):.1f}%')
        for other in OTHER_BUILDS:
            if any(f == other for f, _ in per_run):
                alone = set().union(*[s['hits'] for f, s in per_run if f == other])
                out.append(f'  the {other} runs add {len(alone - vm)} instructions not executed there')
    for flavour in ('c', 'rust'):
        if flavour in builds:
            e = edge_counts(builds[flavour])
            n = sum(e.values())
            out.append(f'  {flavour} conditional-branch edges (two per branch): {n}; known taken {e["taken"]}, '
                       f'known never taken {e["not taken"]}, not known {e["unknown"]} (taken share between '
                       f'{pct(e["taken"], n):.1f}% and {pct(e["taken"] + e["unknown"], n):.1f}%)')
    out.append('')
    out.append('Per run (that run alone; Send-path instructions of its flavour, crate + shim for rust;')
    out.append('a kunit or fault run counts only in the functions that are the same machine code in both builds):')
    for flavour, s in per_run:
        same = f', {s["same"]} functions the same code' if s['same'] is not None else ''
        out.append(f'  {flavour:<5} {s["run"]:<48} loads {s["loads"]}  {s["hit"]:>5} / {s["total"]:<5} '
                   f'{pct(s["hit"], s["total"]):5.1f}%  ({s["kernel_insns"]} kernel instructions executed{same})')
    for w in warnings:
        out.append(f'  warning: {w}')
    for p in problems:
        out.append(f'  PROBLEM: {p}')

    os.makedirs(args.logs, exist_ok=True)
    table = os.path.join(args.logs, 'coverage-table.txt')
    with open(table, 'w') as fh:
        fh.write('\n'.join(out) + '\n')
    print('\n'.join(out))
    reasons = load_reasons(REASONS)
    can_run_share = excluded = None
    for flavour, b in builds.items():
        lines, (can, excl) = block_lines(b, blocks(b), reasons)
        if flavour == 'rust':
            can_run_share, excluded = can, excl
        path = os.path.join(args.logs, f'coverage-blocks-{flavour}.txt')
        with open(path, 'w') as fh:
            fh.write('\n'.join(lines) + '\n')
        if flavour == 'rust':
            print()
            print('\n'.join(lines))
    print(f'\n(written: {table} and coverage-blocks-{{{",".join(builds)}}}.txt there)')

    rc = 0
    if problems:
        rc = 1
    if args.floor is not None:
        if 'rust' not in builds:
            print(f'FAIL: coverage floor {args.floor}%: no rust run')
            rc = 1
        else:
            share = pct(*counts(builds['rust'].funcs))
            if share < args.floor:
                print(f'FAIL: rust Send-path coverage {share:.1f}% is below the floor {args.floor}%')
                rc = 1
            else:
                print(f'PASS: rust Send-path coverage {share:.1f}% >= floor {args.floor}%')
    # The exclusions are capped: the can-run share must not rise by
    # claiming more code unreachable.
    for key, cap, what in (('emitted', args.max_emitted, 'padding and never-called copies'),
                           ('claimed', args.max_claimed, 'blocks claimed unreachable by design')):
        if cap is None or excluded is None:
            continue
        if excluded[key] > cap:
            print(f'FAIL: rust Send-path instructions left out as {what}: {excluded[key]}, more than the cap {cap}')
            rc = 1
        else:
            print(f'PASS: rust Send-path instructions left out as {what}: {excluded[key]}, cap {cap}')
    if args.floor_can_run is not None and can_run_share is not None:
        if can_run_share < args.floor_can_run:
            print(f'FAIL: rust Send-path coverage of what can run {can_run_share:.1f}% '
                  f'is below the floor {args.floor_can_run}%')
            rc = 1
        else:
            print(f'PASS: rust Send-path coverage of what can run {can_run_share:.1f}% '
                  f'>= floor {args.floor_can_run}%')
    return rc


if __name__ == '__main__':
    sys.exit(main())
