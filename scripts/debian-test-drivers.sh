#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# debian-test-drivers.sh: soft-RoCE (rdma_rxe.ko) and soft-iWARP (siw.ko)
# with the DMA-mapped test mode (scripts/kernel-patches/0002, module
# parameter dma_mapped) for Debian's stock kernel, built out of tree against
# its headers with its compiler (gcc-14, in scripts/debian-env.sh's trixie
# system) from the same Debian version's source (linux-source-7.3, as
# scripts/setup.sh extracts it), so that Debian's unmodified vmlinuz can run
# NFS over RDMA with every mapping bounced (swiotlb=force), as a server
# behind swiotlb does. Loaded in place of Debian's from updates/.
# Prints the directory holding the two modules (cached, keyed by the
# patches, this script and the kernel).
#
# What the test kernels have and these lack, because it is built into the
# kernel (Debian's has neither):
#  - CONFIG_DMA_API_DEBUG, which checks every map, unmap and sync against
#    the mapping (size, direction, double and missing unmaps). In its
#    place the guest counts swiotlb's slots in use (swiotlb=track_hiwater)
#    before and after: every mapping bounced holds slots, so one left
#    mapped shows (tests/vm/guest/lib.sh, dma_mode_check_slots).
#  - swiotlb_mapping_at(), 0002's "which mapping is this bounce-slot
#    address in" in kernel/dma/swiotlb.c. It is provided here by the
#    modules themselves, reading the slots of the default swiotlb pool with
#    the layout of struct io_tlb_slot taken from this very kernel's source
#    at build time; without 0002's slot tags it knows no direction and no
#    generation (so a device access against a mapping's direction, and a
#    posted address unmapped and mapped again to the same memory, are
#    caught on the test kernels only). Dynamic pools (CONFIG_SWIOTLB_DYNAMIC: more pools when the
#    default one is full) cannot be found from a module (the lookup is not
#    exported): an access into one is refused as not mapped, and fails the
#    run loudly rather than pass unchecked.
#  - 0002's change to ib_umem_get() (drivers/infiniband/core/umem.c) is in
#    ib_core, a module: without it user memory regions cannot be
#    registered on a DMA-mapped device (swiotlb=force refuses the coherent
#    mapping it asks for), so user-space verbs (the hostile suite's
#    pyverbs client) could not run. The IB core's modules
#    (drivers/infiniband/core: ib_core, ib_cm, iw_cm, rdma_cm, ib_uverbs,
#    ...) are rebuilt here as well, from the same source and .config with
#    that one change, which takes effect only for rxe and siw in the
#    DMA-mapped mode; they go to core/ and replace Debian's as a set.

. "$(dirname "$0")/lib.sh"

R=$(bash "$TOP/scripts/debian-env.sh" env) || die "Debian build environment"
read -r KREL DEB_VERSION < <(bash "$TOP/scripts/debian-env.sh" target)
PRISTINE=$(kernel_src)
SRCDEB=$(ls "$CACHE"/deb/linux-source-${KVER_PKG}_*.deb 2>/dev/null | tail -n 1)
srcver=$(dpkg-deb -f "$SRCDEB" Version 2>/dev/null || true)
[ "$srcver" = "$DEB_VERSION" ] ||
	die "the cached kernel source is linux-source-$KVER_PKG ${srcver:-?}, Debian's kernel is $DEB_VERSION: the test drivers must come from the same source (delete $CACHE/src and $CACHE/deb, run scripts/setup.sh)"
P1=$TOP/scripts/kernel-patches/0001-RDMA-rxe-drain-packet-queues-outside-state_lock.patch
P2=$TOP/scripts/kernel-patches/0002-RDMA-rxe-siw-DMA-mapped-test-mode.patch
KEY=$({ patch_diffs "$P1" "$P2"; cat "$0"; echo "$KREL $DEB_VERSION"; } | sha256sum | cut -c1-12)
OUT=$CACHE/debian/test-drivers-$KREL-$KEY
if [ -f "$OUT/.complete" ]; then
	say "Debian test drivers: $OUT (cached)" >&2
	echo "$OUT"
	exit 0
fi

say "Debian test drivers: rdma_rxe.ko and siw.ko with dma_mapped for $KREL, out of tree (gcc-14, Debian's headers)" >&2
W=$R/root/test-drivers
rm -rf "$W" "$OUT"
# include/trace: the IB core's trace headers name themselves relative to
# the kernel's include/trace (TRACE_INCLUDE_PATH ../../drivers/...), which
# from there reaches these copies.
mkdir -p "$W/src/drivers/infiniband/sw" "$W/src/include/rdma" "$W/src/include/trace" "$OUT/core"
cp -r "$PRISTINE/drivers/infiniband/sw/rxe" "$PRISTINE/drivers/infiniband/sw/siw" "$W/src/drivers/infiniband/sw/"
cp -r "$PRISTINE/drivers/infiniband/core" "$W/src/drivers/infiniband/"
# only_paths PATCH REGEX: the file sections of PATCH whose path matches.
only_paths() {
	awk -v re="$2" '
		/^--- / { held = $0; next }
		/^\+\+\+ / { path = $2; sub(/^b\//, "", path); keep = (path ~ re); if (keep) print held; held = "" }
		held != "" { if (keep) print held; held = "" }
		keep' "$1"
}
patch -d "$W/src" -p1 -s --fuzz=0 <"$P1" || die "$(basename "$P1") does not apply to Debian's rxe"
only_paths "$P2" '^(drivers/infiniband/sw/|drivers/infiniband/core/umem\.c$|include/rdma/ib_sw_dma\.h$)' >"$W/0002-drivers.patch"
grep -q '^+++ b/include/rdma/ib_sw_dma.h' "$W/0002-drivers.patch" || die "no ib_sw_dma.h in $(basename "$P2")"
grep -q '^+++ b/drivers/infiniband/core/umem.c' "$W/0002-drivers.patch" || die "no umem.c change in $(basename "$P2")"
patch -d "$W/src" -p1 -s --fuzz=0 <"$W/0002-drivers.patch" || die "$(basename "$P2")'s driver part does not apply to Debian's rxe/siw/umem.c"

# swiotlb_mapping_at() for a kernel that lacks it: the slot layout from the
# kernel's own kernel/dma/swiotlb.c (its free-slot marker, INVALID_PHYS_ADDR,
# is in linux/mm.h), struct swiotlb_mapping_info from 0002.
slot=$(sed -n '/^struct io_tlb_slot {$/,/^};$/p' "$PRISTINE/kernel/dma/swiotlb.c")
[ -n "$slot" ] || die "kernel/dma/swiotlb.c of $KREL has no struct io_tlb_slot: this script needs updating"
! grep -q '^struct swiotlb_mapping_info {$' "$PRISTINE/include/linux/swiotlb.h" ||
	die "include/linux/swiotlb.h of $KREL has a struct swiotlb_mapping_info: this script needs updating"
info=$(sed -n '/^+struct swiotlb_mapping_info {$/,/^+};$/p' "$P2" | sed 's/^+//')
[ -n "$info" ] || die "no struct swiotlb_mapping_info in $(basename "$P2"): this script needs updating"
cat >"$W/src/include/rdma/ib_sw_dma_oot.h" <<EOF
/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Generated by rpcrdma-rs scripts/debian-test-drivers.sh for $KREL: what
 * include/rdma/ib_sw_dma.h needs of kernel/dma/swiotlb.c, for a kernel
 * without scripts/kernel-patches/0002's swiotlb_mapping_at(). Test use
 * only.
 */
#include <linux/device.h>
#include <linux/dma-mapping.h>
#include <linux/mm.h>
#include <linux/swiotlb.h>

/* From this kernel's kernel/dma/swiotlb.c, copied at build time. */
$slot

/* From 0002's include/linux/swiotlb.h. */
$info

/*
 * 0002's swiotlb_mapping_at() from the slots alone, without its slot
 * tags: no direction, no generation. A mapping's first slot is the one
 * whose predecessor does not stand for the memory just before it. Only
 * the default pool can be searched from a module; an address in another
 * one is reported as not mapped, so that it shows.
 */
static inline bool swiotlb_mapping_at(struct device *dev, phys_addr_t paddr,
				      struct swiotlb_mapping_info *info)
{
	struct io_tlb_mem *mem = dev->dma_io_tlb_mem;
	struct io_tlb_pool *pool;
	unsigned long index;
	phys_addr_t orig;
	size_t alloc_size;
	long tlb_offset;

	if (!mem)
		return false;
	pool = &mem->defpool;
	if (paddr < pool->start || paddr >= pool->end)
		return false;
	index = (paddr - pool->start) >> IO_TLB_SHIFT;
	orig = READ_ONCE(pool->slots[index].orig_addr);
	alloc_size = READ_ONCE(pool->slots[index].alloc_size);
	if (orig == INVALID_PHYS_ADDR)
		return false;
	tlb_offset = (long)(paddr & (IO_TLB_SIZE - 1)) -
		     (long)(orig & dma_get_min_align_mask(dev) & (IO_TLB_SIZE - 1));
	if (tlb_offset < 0 &&
	    (!index || READ_ONCE(pool->slots[index - 1].orig_addr) != orig - IO_TLB_SIZE))
		return false;
	info->orig_addr = orig + tlb_offset;
	info->left = tlb_offset < (long)alloc_size ? alloc_size - tlb_offset : 0;
	info->gen = 0;
	info->dir = DMA_NONE;
	return true;
}
EOF

# ib_sw_dma.h (this build's copy) takes it right after linux/swiotlb.h.
sed -i 's|^#include <linux/swiotlb.h>$|&\n#include <rdma/ib_sw_dma_oot.h>|' "$W/src/include/rdma/ib_sw_dma.h"
grep -q '^#include <rdma/ib_sw_dma_oot.h>$' "$W/src/include/rdma/ib_sw_dma.h" || die "ib_sw_dma.h does not include linux/swiotlb.h: this script needs updating"

cc=$(sed -n 's/^CONFIG_CC_VERSION_TEXT="\(x86_64-linux-gnu-gcc-[0-9]*\) .*/\1/p' "$R/usr/src/linux-headers-$KREL/.config")
[ -n "$cc" ] || cc=gcc
# Debian builds rdma_rxe but not siw (CONFIG_RDMA_SIW is not set): both are
# switched on for their own directory's build.
for d in sw/rxe sw/siw core; do
	run_logged "debian-test-driver-${d#sw/}" bash "$TOP/scripts/debian-env.sh" chroot \
		make -C "/lib/modules/$KREL/build" M="/root/test-drivers/src/drivers/infiniband/$d" \
		CONFIG_RDMA_RXE=m CONFIG_RDMA_SIW=m CC="$cc" \
		KCFLAGS="-I/root/test-drivers/src/include -I/root/test-drivers/src/include/trace" \
		-j"$(nproc)" modules >&2
	if grep -E '(^|[: ])(warning|WARNING)[:[]' "$LOGS/debian-test-driver-${d#sw/}.log" >&2; then
		die "the ${d#sw/} test build printed warnings ($LOGS/debian-test-driver-${d#sw/}.log)"
	fi
done
cp "$W/src/drivers/infiniband/sw/rxe/rdma_rxe.ko" "$W/src/drivers/infiniband/sw/siw/siw.ko" "$OUT/"
cp "$W/src/drivers/infiniband/core"/*.ko "$OUT/core/"
# The set must be Debian's own: a module of Debian's left beside ours
# would load against our ib_core, one of ours missing would load Debian's.
want=$(ls "$R/usr/lib/modules/$KREL/kernel/drivers/infiniband/core/" | sed 's/\.ko.*//' | sort)
have=$(ls "$OUT/core/" | sed 's/\.ko$//' | sort)
[ "$want" = "$have" ] || die "the IB core modules built ($(echo $have)) are not Debian's ($(echo $want))"
for m in rdma_rxe siw; do
	modinfo -F parm "$OUT/$m.ko" | grep -q '^dma_mapped:' || die "$OUT/$m.ko has no dma_mapped parameter"
	[ "$(modinfo -F vermagic "$OUT/$m.ko" | cut -d' ' -f1)" = "$KREL" ] || die "$OUT/$m.ko is not built for $KREL"
done
rm -rf "$W"
touch "$OUT/.complete"
# Builds of other keys (an older script or patch) are used by nothing now.
for d in "$CACHE/debian/test-drivers-$KREL-"*; do [ "$d" = "$OUT" ] || rm -rf "$d"; done
say "Debian test drivers: $OUT/rdma_rxe.ko, siw.ko ($KREL, dma_mapped) and the IB core: $(ls "$OUT/core" | paste -sd' ' -)" >&2
echo "$OUT"
