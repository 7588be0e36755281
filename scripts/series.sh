#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# series.sh [OUT]: the in-tree form (Documentation/intree.rst) as a patch
# series against the kernel our test kernels are built from (Debian's
# linux-source-7.3, v7.3.4), written to OUT (default $CACHE/series/out):
# one patch per helper file and per generic abstraction of src/rust/, each
# with its KUnit suite and Kconfig.test entry, then the driver under
# net/sunrpc/xprtrdma/sendto_rs/ behind a Kconfig choice, and a cover
# letter.
#
# The patches are made from this tree's files at the time of the run: the
# files are copied into a git tree of the kernel source and committed, then
# git format-patch writes them out. Nothing of the kernel is kept here.
# Signed-off-by: lines are left to whoever sends the series.
#
# MAINTAINERS entries come with the files they cover; their reviewers are
# those get_maintainer.pl names for the C code the files serve, and the
# maintainers (M:) are left to the submitter. scripts/series-check.sh builds
# and tests what this makes.

. "$(dirname "$0")/lib.sh"

OUT=${1:-$CACHE/series/out}
SRC=$(kernel_src)
[ -f "$SRC/Makefile" ] || die "no kernel source at $SRC: run scripts/setup.sh"
kver=$(make -s -C "$SRC" kernelversion 2>/dev/null) || die "cannot read the kernel version of $SRC"
TREE=$CACHE/series/linux-$kver
AUTHOR="rpcrdma-rs maintainers <maintainers@users.noreply.a-seed-dd866750.example>"

# The base: the pristine source as one commit, made once (a copy, not hard
# links: the patches edit files in place).
if [ ! -f "$TREE/.git/series-base" ]; then
	say "series: a git tree of $SRC (v$kver), once"
	rm -rf "$TREE.tmp"
	mkdir -p "$CACHE/series"
	cp -a "$SRC" "$TREE.tmp"
	git -C "$TREE.tmp" init -q
	# Debian's top-level .gitignore ignores everything ("/*"): -f.
	rm -f "$TREE.tmp/.extracted"
	git -C "$TREE.tmp" add -A -f
	GIT_AUTHOR_NAME=Linux GIT_AUTHOR_EMAIL=linux@kernel.org \
		GIT_COMMITTER_NAME=Linux GIT_COMMITTER_EMAIL=linux@kernel.org \
		GIT_AUTHOR_DATE="2026-01-01T00:00:00Z" GIT_COMMITTER_DATE="2026-01-01T00:00:00Z" \
		git -C "$TREE.tmp" commit -q -m "Linux $kver (Debian linux-source-$KVER_PKG)"
	git -C "$TREE.tmp" tag "v$kver"
	git -C "$TREE.tmp" rev-parse HEAD >"$TREE.tmp/.git/series-base"
	rm -rf "$TREE"
	mv "$TREE.tmp" "$TREE"
fi

g() { git -C "$TREE" "$@"; }
g checkout -q -f -B series "v$kver"
# (series-check.sh's build directories stay.)
g clean -q -fdx -e "/build-*/"

# commit SUBJECT: commits what changed, with SUBJECT and the body on stdin.
# The dates are fixed, so that the same files give the same patches.
commit() {
	# -f: Debian's .gitignore ignores every top-level path; the build
	# directory of series-check.sh is not the series'.
	g add -A -f -- . ':(exclude)build-*'
	GIT_AUTHOR_DATE="2026-12-07T00:00:00Z" GIT_COMMITTER_DATE="2026-12-07T00:00:00Z" \
		g -c user.name="${AUTHOR% <*}" -c user.email="$(sed 's/.*<\(.*\)>/\1/' <<<"$AUTHOR")" \
		commit -q --author="$AUTHOR" -F - || die "series: nothing to commit for '$1'"
}

# insert_sorted FILE LINE: adds LINE to FILE among the lines of the same
# kind (the same first two words, or for #include the same delimiter), in
# sorted order, as the kernel keeps its lists; above the attributes and
# comments of the line it goes before.
insert_sorted() {
	local file=$1 line=$2
	python3 - "$file" "$line" <<'EOF'
import sys
path, new = sys.argv[1], sys.argv[2]
lines = open(path).read().split("\n")


def kind(line):
    w = line.split()
    if len(w) < 2:
        return None
    return (w[0], w[1][0]) if w[0] == "#include" else (w[0], w[1])


same = [i for i, l in enumerate(lines) if kind(l) == kind(new)]
if not same:
    sys.exit(f"series: no line like '{new}' in {path}")
if new in lines:
    sys.exit(f"series: '{new}' is in {path} already")
at = same[-1] + 1
for i in same:
    if lines[i] > new:
        at = i
        while at > 0 and lines[at - 1].lstrip().startswith(("#[", "///", "//")):
            at -= 1
        break
lines.insert(at, new)
open(path, "w").write("\n".join(lines))
EOF
}

# kconfig_test NAME WHAT: a Kconfig.test entry as the kernel's own, inside
# its "if RUST_KUNIT_TESTS" block (before the file's last endif).
kconfig_test() {
	python3 - "$TREE/rust/kernel/Kconfig.test" "$1" "$2" <<'EOF'
import sys
path, name, what = sys.argv[1:]
entry = f"""config {name}
	bool "KUnit tests for Rust {what}" if !KUNIT_ALL_TESTS
	default KUNIT_ALL_TESTS
	help
	  This option enables KUnit tests for the Rust {what}.
	  These are only for development and testing, not for regular
	  kernel use cases.

	  If unsure, say N.

"""
text = open(path).read()
at = text.rfind("endif")
if at < 0:
    sys.exit(f"series: no endif in {path}")
open(path, "w").write(text[:at] + entry + text[at:])
EOF
}

# maintainers_entry AFTER TITLE SECTION FILE [LINE...]: a MAINTAINERS entry
# TITLE placed after the entry AFTER (the list is sorted by title), with
# R: lines for the M: and R: people of SECTION, as get_maintainer.pl gives
# it for FILE, then the LINEs (L:, S:, F:).
maintainers_entry() {
	local after=$1 title=$2 section=$3 file=$4
	shift 4
	(cd "$TREE" && perl scripts/get_maintainer.pl --no-git --no-git-fallback --sections -f "$file") |
		python3 -c '
import sys
path, after, title, section, *lines = sys.argv[1:]
sections, name = {}, None
for line in sys.stdin.read().split("\n"):
    if line and line[1:2] != ":":
        name = line
        sections[name] = []
    elif name and line[:2] in ("M:", "R:"):
        sections[name].append("R:" + line[2:])
if not sections.get(section):
    sys.exit(f"series: get_maintainer.pl names no one for {section!r} ({sorted(sections)})")
text = open(path).read().split("\n")
if title in text:
    sys.exit(f"series: {title!r} is in MAINTAINERS already")
at = text.index(after)
while text[at] != "":
    at += 1
text[at + 1:at + 1] = [title] + sections[section] + lines + [""]
open(path, "w").write("\n".join(text))
' "$TREE/MAINTAINERS" "$after" "$title" "$section" "$@" || die "series: MAINTAINERS entry '$title'"
}

# 1. The llist helpers.
cp "$TOP/src/rust/helpers/llist.c" "$TREE/rust/helpers/llist.c"
insert_sorted "$TREE/rust/helpers/helpers.c" '#include "llist.c"'
commit "rust: helpers: add llist helpers" <<'EOF'
rust: helpers: add llist helpers

llist_add() and llist_del_all() are static inline functions, so Rust
cannot call them directly. Add helpers for them, for the lock-less list
abstraction that follows.
EOF

# 2. The llist abstraction.
cp "$TOP/src/rust/kernel/llist.rs" "$TREE/rust/kernel/llist.rs"
insert_sorted "$TREE/rust/kernel/lib.rs" 'pub mod llist;'
kconfig_test RUST_LLIST_KUNIT_TEST "lock-less list (llist) API"
commit "rust: add lock-less list (llist) abstraction" <<'EOF'
rust: add lock-less list (llist) abstraction

Add `kernel::llist`, an abstraction of `include/linux/llist.h` for objects
that embed a `struct llist_node`: `HasLlistNode` (implemented with
`impl_has_llist_node!`) ties a type to its node, `LlistHead<T>` borrows
an `llist_head` of such objects and pushes, takes all or pops them, and
`Chain<T>` is what was taken, walked without synchronisation.

The list does not own its objects: it gives back the `NonNull<T>` it was
given, so that a user keeps the ownership rules of its own objects (often
embedded in a structure that C allocates). The operations whose safety
depends on the list's discipline (which of them may race, as the table in
llist.h says) are unsafe, with that discipline as their precondition.

The first user is the RPC-over-RDMA server's Send path in Rust, whose send
contexts move between lock-less lists; svcrdma's receive and R/W context
caches (`sc_recv_ctxts`, `sc_rw_ctxts`) and the client's free reply list
are lists of the same kind.

A KUnit suite (CONFIG_RUST_LLIST_KUNIT_TEST) checks order, emptiness,
llist_del_first() and private chains.
EOF

# 3. The RDMA verbs header for bindgen.
insert_sorted "$TREE/rust/bindings/bindings_helper.h" '#include <rdma/ib_verbs.h>'
commit "rust: bindings: add the RDMA verbs header" <<'EOF'
rust: bindings: add the RDMA verbs header

Generate bindings for include/rdma/ib_verbs.h, for the RDMA abstractions
that follow (work completions and their `ib_cqe`).
EOF

# 4. The completion dispatch abstraction.
# rdma.rs as it is before the next patch: without the device and dma
# modules, their lines in its list, and their mention of ib_dma_*.
mkdir -p "$TREE/rust/kernel/rdma"
python3 - "$TOP/src/rust/kernel/rdma.rs" >"$TREE/rust/kernel/rdma.rs" <<'PY' || die "series: rdma.rs without device and dma"
import re, sys
text = open(sys.argv[1]).read()
out, skip = [], False
for line in text.split("\n"):
    if line.startswith(("//! - [`device`]", "//! - [`dma`]")):
        skip = True
        continue
    if skip and line.startswith("//!   "):
        continue
    skip = False
    if line in ("pub mod device;", "pub mod dma;"):
        continue
    out.append(line)
text = "\n".join(out)
text = re.sub(r" \(the `ib_dma_\*`\n//! functions are inline, over the DMA API\)", "", text)
if "ib_dma" in text or "mod dma" in text or "mod device" in text:
    sys.exit("series: rdma.rs changed shape; update the filter")
sys.stdout.write(text)
PY
cp "$TOP/src/rust/kernel/rdma/cq.rs" "$TREE/rust/kernel/rdma/cq.rs"
insert_sorted "$TREE/rust/kernel/lib.rs" 'pub mod rdma;'
kconfig_test RUST_RDMA_KUNIT_TEST "RDMA API"
maintainers_entry "INFINIBAND SUBSYSTEM" "INFINIBAND SUBSYSTEM [RUST]" \
	"INFINIBAND SUBSYSTEM" include/rdma/ib_verbs.h \
	"L:	linux-rdma@vger.kernel.org" "L:	rust-for-linux@vger.kernel.org" \
	"S:	Maintained" "F:	rust/kernel/rdma.rs" "F:	rust/kernel/rdma/"
commit "rust: rdma: add work completion dispatch" <<'EOF'
rust: rdma: add work completion dispatch

An RDMA upper-layer protocol posts a work request with `wr_cqe` pointing
to a `struct ib_cqe` embedded in an object of its own, and the RDMA core
calls that `ib_cqe`'s `done` with the work completion; the C handler then
finds its object with container_of().

Add `kernel::rdma::cq`: `WorkCompletion` wraps a polled `struct ib_wc`,
`HasCqe` (implemented with `impl_has_cqe!`) ties a type to its embedded
`ib_cqe`, a `CompletionHandler` says what to do with a completed object,
and `set_done()` stores the `done` function that recovers the object and
calls the handler. The raw callback, the container_of() and the cast back
are written once.

The first user is the RPC-over-RDMA server's Send completion in Rust; the
Receive, Read and Write completions of svcrdma, the client's and those
of other upper-layer protocols have the same shape.

A KUnit suite (CONFIG_RUST_RDMA_KUNIT_TEST) plays the RDMA core: it calls
the stored `done` with a completion that carries an object's `ib_cqe`.
EOF

# 5. RDMA devices and DMA mapping, with their helpers.
cp "$TOP/src/rust/kernel/rdma.rs" "$TREE/rust/kernel/rdma.rs"
cp "$TOP/src/rust/kernel/rdma/device.rs" "$TREE/rust/kernel/rdma/device.rs"
cp "$TOP/src/rust/kernel/rdma/dma.rs" "$TREE/rust/kernel/rdma/dma.rs"
cp "$TOP/src/rust/helpers/rdma.c" "$TREE/rust/helpers/rdma.c"
insert_sorted "$TREE/rust/helpers/helpers.c" '#include "rdma.c"'
commit "rust: rdma: add devices and DMA mapping" <<'EOF'
rust: rdma: add devices and DMA mapping

An RDMA upper-layer protocol names the memory of a work request by the
address its device uses for it, made by the RDMA core's ib_dma_*()
functions: through the DMA API, or for a software device (rdma_rxe,
siw) the kernel virtual address the CPU copies from and to. They are
static inline functions; add helpers for them, ib_uses_virt_dma() and
ibdev_to_node().

Add `kernel::rdma::device::Device`, a borrowed `struct ib_device`, and
`kernel::rdma::dma`. The mapping functions belong to `Dma`, a handle
(`Device::dma()`) that asks ib_uses_virt_dma() once, so that the
mappings of a batch on a device without DMA skip the mapping-error call
they never need. `Dma::map_page()` maps part of a `Page` for the device
to read into a `Mapping` that borrows the page and is undone when
dropped; a mapping the device writes needs its memory to itself:
`Dma::map_owned_page()` gives a `PageMapping` that owns its page (any
`kernel::dma::DataDirection`), `map_page_with_direction()` is unsafe.
`Dma::map_single()` (unsafe: the caller vouches that the buffer is in
the direct map) maps a buffer. A range outside the page, an empty one or
`DataDirection::None` is refused with EINVAL, a mapping the DMA layer
refuses is ENOMEM. A mapping stored in a work request's SGE is handed
over with `Mapping::into_raw()` as a `RawMapping` (address, length,
direction, and which map function made it) and undone by its new owner
with the unsafe `Device::unmap_raw()`. Addresses are `u64`, as every
verbs structure carries them.

The first user is the RPC-over-RDMA server's Send path in Rust, which
maps the pages and kvecs of a reply and the header buffer of each send
context; every upper-layer protocol maps its payloads this way.

The KUnit suite (CONFIG_RUST_RDMA_KUNIT_TEST) maps pages and a buffer on
a device without DMA, where the address is the kernel address: the bytes
written into the page are those at the mapping's address, the bounds and
directions are checked (an owned page comes back with the error), an
owned page comes back with what was written through its mapping, and raw
forms carry their kind and direction and are undone.
EOF

# in_tree_rs: a Rust file of the driver as it is in a kernel tree, stdin to
# stdout. The kernel crate has the abstractions there, so what only the
# out-of-tree module needs goes: each item under
# #[cfg(not(rpcrdma_kernel_abstractions))], with the comment just above it
# (the module's own copy of src/rust/kernel/, whose #[path] rustfmt would
# look for, the helpers' bindings, the kernel crate's paths for that copy),
# and the #[cfg(rpcrdma_kernel_abstractions)] of what stays.
in_tree_rs() {
	python3 -c '
import sys
lines = sys.stdin.read().split("\n")
out = []
i = 0
while i < len(lines):
    line = lines[i]
    if line == "#[cfg(rpcrdma_kernel_abstractions)]":
        i += 1
        continue
    if line != "#[cfg(not(rpcrdma_kernel_abstractions))]":
        out.append(line)
        i += 1
        continue
    while out and out[-1].startswith("//"):
        out.pop()
    depth = 0
    while i < len(lines):
        item = lines[i]
        depth += sum(item.count(c) for c in "([{") - sum(item.count(c) for c in ")]}")
        i += 1
        if depth == 0 and item.rstrip().endswith((";", "}")):
            break
    else:
        sys.exit("in_tree_rs: an item under cfg(not(rpcrdma_kernel_abstractions)) does not end")
# What was removed leaves no run of blank lines (rustfmt keeps one at most).
kept = []
for line in out:
    if line == "" and kept and kept[-1] == "":
        continue
    kept.append(line)
text = "\n".join(kept).rstrip("\n") + "\n"
if "rpcrdma_kernel_abstractions" in text:
    sys.exit("in_tree_rs: rpcrdma_kernel_abstractions left in a form this filter does not know")
sys.stdout.write(text)
'
}

# 6. The driver: this tree's src/ as net/sunrpc/xprtrdma/sendto_rs/ (less
# the abstractions, which the kernel crate has now, and the out-of-tree
# module's version string), bindings/ beneath it, Kconfig as its Kconfig
# (the choice), src/Makefile included by the directory's Makefile.
D=$TREE/net/sunrpc/xprtrdma/sendto_rs
mkdir -p "$D"
git -C "$TOP" ls-files -z -- src bindings .kunitconfig |
	grep -zvE '^(src/rust/|src/rpcrdma_flavour\.c$|bindings/helpers_allowlist$)' |
	while IFS= read -r -d '' f; do
		case $f in
		src/*) to=$D/${f#src/} ;;
		*) to=$D/$f ;;
		esac
		mkdir -p "$(dirname "$to")"
		case $f in
		*.rs) in_tree_rs <"$TOP/$f" >"$to" || die "series: $f" ;;
		*) cp "$TOP/$f" "$to" ;;
		esac
	done
cp "$TOP/Kconfig" "$D/Kconfig"
python3 - "$TREE" <<'EOF' || die "series: the driver's Kconfig and Makefile hooks do not apply"
import sys
tree = sys.argv[1]


def edit(rel, old, new):
    path = f"{tree}/{rel}"
    text = open(path).read()
    if text.count(old) != 1:
        sys.exit(f"series: {rel} is not as expected (looking for {old!r})")
    open(path, "w").write(text.replace(old, new))


edit("net/sunrpc/Kconfig",
     "\t  If unsure, or you know there is no RDMA capability on your\n"
     "\t  hardware platform, say N.\n",
     "\t  If unsure, or you know there is no RDMA capability on your\n"
     "\t  hardware platform, say N.\n\n"
     'source "net/sunrpc/xprtrdma/sendto_rs/Kconfig"\n')
edit("net/sunrpc/xprtrdma/Makefile",
     "\tsvc_rdma_sendto.o svc_rdma_recvfrom.o svc_rdma_rw.o \\\n",
     "\tsvc_rdma_recvfrom.o svc_rdma_rw.o \\\n")
edit("net/sunrpc/xprtrdma/Makefile",
     "rpcrdma-$(CONFIG_SUNRPC_BACKCHANNEL) += backchannel.o\n",
     "rpcrdma-$(CONFIG_SUNRPC_XPRT_RDMA_SENDTO_C) += svc_rdma_sendto.o\n"
     "rpcrdma-$(CONFIG_SUNRPC_BACKCHANNEL) += backchannel.o\n"
     "\n"
     "# The Send path's reference implementation in Rust, in place of\n"
     "# svc_rdma_sendto.o: its objects and bindings are in sendto_rs/Makefile.\n"
     "ifdef CONFIG_SUNRPC_XPRT_RDMA_RUST_SENDTO\n"
     "rpcrdma_rs := sendto_rs\n"
     "rpcrdma_rs_bindings := sendto_rs/bindings\n"
     "include $(src)/sendto_rs/Makefile\n"
     "endif\n"
     "clean-files += sendto_rs/bindings/*_generated.rs\n")
EOF
maintainers_entry "KERNEL NFSD BLOCK and SCSI LAYOUT DRIVER" \
	"KERNEL NFSD RPC-OVER-RDMA SEND PATH [RUST]" \
	"KERNEL NFSD, SUNRPC, AND LOCKD SERVERS" net/sunrpc/xprtrdma/svc_rdma_sendto.c \
	"L:	linux-nfs@vger.kernel.org" "L:	linux-rdma@vger.kernel.org" \
	"L:	rust-for-linux@vger.kernel.org" "S:	Maintained" \
	"F:	net/sunrpc/xprtrdma/sendto_rs/"
commit "svcrdma: add a Rust reference implementation of the Send path" <<'EOF'
svcrdma: add a Rust reference implementation of the Send path

Add the RPC-over-RDMA server's Send path in Rust, as a reference
implementation of what svc_rdma_sendto.c does: svc_rdma_sendto(),
svc_rdma_result_payload(), svc_rdma_send_error_msg(),
svc_rdma_map_reply_msg(), the send context pool, Send Queue accounting
and the Send completion. It exports the same functions and shares the
same structure layouts, so the rest of rpcrdma.ko is unchanged. A Kconfig
choice selects it; C stays the default.

The code is in two layers. Below, Rust types over the C objects the Send
path touches (the transport, its send contexts, DMA mappings, xdr_buf,
svc_rqst), each with its invariants; it uses kernel::llist for the
context cache and kernel::rdma::cq for the Send completion. Above, the
Send path itself in safe Rust: the Write list and Reply chunk encoders,
the pull-up of small replies and the planning of a Send's SGEs form a core
that needs no device, tested by KUnit suites
(CONFIG_SUNRPC_XPRT_RDMA_RUST_SENDTO_KUNIT_TEST). What the kernel crate
lacks (static inlines, macros, tracepoints) goes through a small C shim;
bindings for the svcrdma headers are generated at build time.

Behaviour differs from C only where C is wrong; the Kconfig help lists
those cases (for example, a Reply chunk whose Writes would exceed the Send
Queue gets ERR_CHUNK where C's nfsd thread stalls).

It was developed out of tree as a module that replaces svc_rdma_sendto.o
in rpcrdma.ko, and tested end to end over soft-RoCE and soft-iWARP:
against the C implementation on the wire, with hostile clients, injected
faults and a DMA-mapped test mode of both drivers.
EOF

rm -rf "$OUT"
mkdir -p "$OUT"
g -c user.name="${AUTHOR% <*}" -c user.email="$(sed 's/.*<\(.*\)>/\1/' <<<"$AUTHOR")" \
	format-patch -q --cover-letter --subject-prefix="RFC PATCH" -o "$OUT" "v$kver..series" ||
	die "series: git format-patch failed"
cover=$(ls "$OUT"/0000-*.patch)
# The figures: the last full make check on this machine (scripts/check.sh
# writes its result and the coverage report's totals to the logs), named
# with its commit and date; none are invented when there was none.
python3 - "$cover" "$LOGS/check-result-all.txt" "$LOGS/coverage-table.txt" <<'EOF'
import sys
path, result, coverage = sys.argv[1:]
try:
    run = dict(line.split("=", 1) for line in open(result).read().splitlines() if "=" in line)
    figures = (f"The project's `make check` at {run['rev']} ({run['date']}, "
               f"{int(run['seconds']) // 60} min on 2 cores): {run['result']}.")
except (OSError, KeyError, ValueError):
    figures = "No full `make check` result was found where this series was made."
try:
    lines = open(coverage).read().split("\n")
    at = next(i for i, l in enumerate(lines) if l.startswith("Totals"))
    end = next((i for i, l in enumerate(lines[at:]) if not l.strip()), len(lines) - at)
    totals = "\n".join("  " + l for l in lines[at:at + end])
    figures += "\nMachine-code coverage of the Send path over those runs:\n\n" + totals
except (OSError, StopIteration):
    pass
text = open(path).read()
text = text.replace("*** SUBJECT HERE ***",
                    "rust: llist, RDMA completion dispatch, and a Rust svcrdma Send path")
text = text.replace("*** BLURB HERE ***", f"""\
This series adds two small abstractions that an RDMA upper-layer protocol
in Rust needs, lock-less lists (llist) and the dispatch of work
completions through the `ib_cqe` embedded in the object a work request
was posted for to a typed handler, and their first user: a Rust
implementation of the RPC-over-RDMA server's Send path (what
net/sunrpc/xprtrdma/svc_rdma_sendto.c does), as a reference
implementation behind a Kconfig choice. C stays the default.

Each abstraction has a KUnit suite. Neither calls an exported function of
the RDMA core, so neither needs CONFIG_INFINIBAND=y.

The driver was developed out of tree as a module that replaces
svc_rdma_sendto.o in rpcrdma.ko, from the same files, and tested end to
end in QEMU over soft-RoCE and soft-iWARP: a two-VM conformance suite
that compares its replies with C's on the wire, hostile clients, injected
faults and allocation failures, a DMA-mapped test mode of rxe and siw
(swiotlb and an emulated IOMMU) with deliberate DMA-API mutations that
must be caught, an instruction-count profile against C per reply class,
and machine-code coverage.

{figures}

Still to come: the IB DMA mapping with DataDirection as an abstraction of
its own, posting a WR chain, and XdrBuf/SvcRqst/SvcXprt wrappers, with the
driver's types over them moving out of the driver.""")
open(path, "w").write(text)
EOF
say "series: $(ls "$OUT" | wc -l) files in $OUT"
g log --oneline "v$kver..series"
