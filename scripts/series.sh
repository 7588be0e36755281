#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# series.sh [OUT]: the in-tree form (Documentation/intree.rst) as a patch
# series against the kernel our test kernels are built from (Debian's
# linux-source-7.3, v7.3.4), written to OUT (default $CACHE/series/out):
# one patch per helper file and per generic abstraction of src/rust/, each
# with its KUnit suite and Kconfig.test entry, and a cover letter.
#
# The patches are made from this tree's files at the time of the run: the
# files are copied into a git tree of the kernel source and committed, then
# git format-patch writes them out. Nothing of the kernel is kept here.
# Signed-off-by: lines are left to whoever sends the series.
#
# Not yet in the series (Documentation/intree.rst, "The series"): the
# driver under net/sunrpc/xprtrdma/ behind a Kconfig choice, and the
# MAINTAINERS entry. scripts/series-check.sh builds and tests what this makes.

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
# (series-check.sh's build directory stays.)
g clean -q -fdx -e /build-series/

# commit SUBJECT: commits what changed, with SUBJECT and the body on stdin.
# The dates are fixed, so that the same files give the same patches.
commit() {
	# -f: Debian's .gitignore ignores every top-level path; the build
	# directory of series-check.sh is not the series'.
	g add -A -f -- . ':(exclude)build-series'
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
mkdir -p "$TREE/rust/kernel/rdma"
cp "$TOP/src/rust/kernel/rdma.rs" "$TREE/rust/kernel/rdma.rs"
cp "$TOP/src/rust/kernel/rdma/cq.rs" "$TREE/rust/kernel/rdma/cq.rs"
insert_sorted "$TREE/rust/kernel/lib.rs" 'pub mod rdma;'
kconfig_test RUST_RDMA_KUNIT_TEST "RDMA API"
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

rm -rf "$OUT"
mkdir -p "$OUT"
g -c user.name="${AUTHOR% <*}" -c user.email="$(sed 's/.*<\(.*\)>/\1/' <<<"$AUTHOR")" \
	format-patch -q --cover-letter --subject-prefix="RFC PATCH" -o "$OUT" "v$kver..series" ||
	die "series: git format-patch failed"
cover=$(ls "$OUT"/0000-*.patch)
python3 - "$cover" <<'EOF'
import sys
path = sys.argv[1]
text = open(path).read()
text = text.replace("*** SUBJECT HERE ***",
                    "rust: lock-less lists and RDMA completion dispatch")
text = text.replace("*** BLURB HERE ***", """\
This series adds two small abstractions that an RDMA upper-layer protocol
in Rust needs: lock-less lists (llist) and the dispatch of work
completions, through the `ib_cqe` embedded in the object a work request
was posted for, to a typed handler.

Their first user is a Rust implementation of the RPC-over-RDMA server's
Send path (what net/sunrpc/xprtrdma/svc_rdma_sendto.c does), developed
out of tree as a module that replaces svc_rdma_sendto.o in rpcrdma.ko and
tested end to end over soft-RoCE and soft-iWARP. The same abstraction files
are compiled into that module today; the driver itself, as a reference
implementation behind a Kconfig choice, will follow in a later version of
this series.

Each abstraction has a KUnit suite. Neither calls an exported function of
the RDMA core, so neither needs CONFIG_INFINIBAND=y.""")
open(path, "w").write(text)
EOF
say "series: $(ls "$OUT" | wc -l) files in $OUT"
g log --oneline "v$kver..series"
