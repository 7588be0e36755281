#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# vm-run.sh [-t TIMEOUT] [-n NAME] [-m MEM] [-c CPUS] [-N NETDEV] [-M MAC] [-d MODULES]
#           [-K KERNEL -I INITRD] [-e PARAM] [-A ACCEL] [-P PLUGIN] [-Q QEMU_ARGS] [-D]
#           SCRIPT [ARG...]
#
# Boots the test kernel under QEMU (TCG) with the cached rootfs as a
# read-only 9p root, runs tests/vm/guest/SCRIPT.sh inside with ARGs, and
# exits with its status. Shares: the repo (ro, /work), the kernel's modules
# (ro, /lib/modules) and a fresh results dir (rw, /results), which is kept
# at $CACHE/runs/NAME-<time> and printed. The serial console goes to
# console.log there. A guest that does not finish within TIMEOUT seconds is
# killed and the run fails, naming its log; one whose kernel does not reach
# init within VM_BOOT_LIMIT seconds (default 120) is booted once more.
#
# The guest's one NIC is on a QEMU hub with no other port unless NETDEV
# says otherwise (e.g. "socket,listen=127.0.0.1:PORT" and
# "socket,connect=127.0.0.1:PORT" join two VMs, see vm-pair.sh). -d shares
# MODULES as /lib/modules instead of the test kernel's installed modules
# (the install tests use a tree with ours in updates/). -K and -I boot
# another kernel (Debian's vmlinuz, with an initramfs that loads what a 9p
# root needs; scripts/debian-env.sh kernel), whose modules -d must give;
# -e adds a kernel command-line parameter (repeatable), e.g. rs_load=modprobe.
# -A replaces the accelerator option (default tcg: one host thread per vCPU).
# -P loads a TCG plugin ("PATH.so,arg=value,..."; @RUN@ in it becomes the
# run's directory), e.g. the instruction profiler of scripts/profile.sh.
# -Q adds QEMU options (split on spaces), e.g. "-icount shift=0,sleep=off".
# -D boots in the DMA-mapped mode (the test kernel, or with -K a kernel
# whose modules tree has the test drivers, without DMA-API debugging): soft-RoCE and
# soft-iWARP map through their NIC's PCI function (rdma_rxe.dma_mapped=1,
# siw.dma_mapped=1, scripts/kernel-patches/0002), every mapping bounced
# through swiotlb (swiotlb=force) and checked by CONFIG_DMA_API_DEBUG, as
# on a server whose RDMA NIC is behind swiotlb; a second NIC, eth1, is
# there for a second software RDMA device (tests/vm/guest/lib.sh, dma_*).
# With DMA_IOMMU=1 (environment), -D puts the NICs behind QEMU's emulated
# Intel IOMMU instead (q35, intel-iommu, iommu.strict=1; the NICs with
# iommu_platform=on): a DMA address is an IOVA of the NIC's IOMMU domain,
# and the drivers refuse one that is not mapped (kernel-patches/0003).
# The test kernels have ACPI and the IOMMU driver for it.
# CTL_NETDEV (environment; vm-pair.sh -C sets it) adds a NIC on that QEMU
# netdev, MAC 52:54:00:12:35:xx, for a pair's control traffic (rsh.py),
# so that the fabric's NIC can go away and come back (rs_ctl=1).
# DMA_SWIOTLB_SLABS=N (environment) gives -D a swiotlb pool of N slots
# (2 KiB each; swiotlb rounds the count up) in place of the default, for
# mapping failures of the DMA layer's own (by hand; testing.rst).
# VM_KERNEL_BUILD=DIR (environment) boots the kernel built in DIR, with its
# own modules, in place of the test kernel: the series' kernel, which
# series-check.sh boot builds with the test kernel's config and patches
# (make check's intree phase; the guests load its rpcrdma with
# rs_load=modprobe).

. "$(dirname "$0")/lib.sh"

TIMEOUT=600 NAME= MEM=2048 SMP=2 NETDEV="hubport,hubid=0" MAC=52:54:00:12:34:01 MODTREE=
KIMAGE= INITRD= EXTRA= ACCEL=tcg PLUGIN= QEMU_EXTRA= DMA_MAPPED=0 MACHINE=
while getopts t:n:m:c:N:M:d:K:I:e:A:P:Q:D o; do
	case $o in
	t) TIMEOUT=$OPTARG ;;
	n) NAME=$OPTARG ;;
	m) MEM=$OPTARG ;;
	c) SMP=$OPTARG ;;
	N) NETDEV=$OPTARG ;;
	M) MAC=$OPTARG ;;
	d) MODTREE=$OPTARG ;;
	K) KIMAGE=$OPTARG ;;
	I) INITRD=$OPTARG ;;
	e) EXTRA="$EXTRA $OPTARG" ;;
	A) ACCEL=$OPTARG ;;
	P) PLUGIN=$OPTARG ;;
	Q) QEMU_EXTRA=$OPTARG ;;
	D) DMA_MAPPED=1 ;;
	*) die "usage: vm-run.sh [-t TIMEOUT] [-n NAME] [-m MEM] [-c CPUS] [-N NETDEV] [-M MAC] [-d MODULES] [-K KERNEL -I INITRD] [-e PARAM] [-A ACCEL] [-P PLUGIN] [-Q QEMU_ARGS] [-D] SCRIPT [ARG...]" ;;
	esac
done
shift $((OPTIND - 1))
# KASAN, lockdep and kmemleak slow the debug kernel down about threefold.
# BOOT_LIMIT: seconds from QEMU's start to guest-init (about 2 s as a rule,
# 7 s at most in 100 boots under a loaded host).
BOOT_LIMIT=${VM_BOOT_LIMIT:-120}
[ "$KERNEL_VARIANT" = debug ] && TIMEOUT=$((TIMEOUT * 3)) BOOT_LIMIT=$((BOOT_LIMIT * 3))
SCRIPT=${1:?guest script name}
shift
[ -x "$TOP/tests/vm/guest/$SCRIPT.sh" ] || die "no guest script tests/vm/guest/$SCRIPT.sh"

# -D with another kernel (-K: Debian's) needs the test drivers in its
# modules tree (scripts/debian-test-drivers.sh); such a kernel has no
# DMA-API debugging, and the guest counts swiotlb's slots instead
# (rs_dma_debug=0, tests/vm/guest/lib.sh).
OTHER_KERNEL=${KIMAGE:+1}
[ "$DMA_MAPPED" = 0 ] || [ -z "$OTHER_KERNEL" ] || [ "$DMA_IOMMU" != 1 ] ||
	die "-D behind the IOMMU needs a test kernel (0003), not -K"

ROOTFS=$(bash "$TOP/scripts/mkrootfs.sh" 2>/dev/null) || die "rootfs missing: run scripts/mkrootfs.sh"
if [ -n "$KIMAGE" ]; then
	[ -f "$KIMAGE" ] && [ -n "$MODTREE" ] || die "-K needs a kernel image and -d its modules tree"
else
	KB=${VM_KERNEL_BUILD:-$(kernel_build)}
	[ -f "$KB/.build-complete" ] || die "no complete kernel build in $KB: run scripts/build-kernel.sh"
	KIMAGE=$KB/arch/x86/boot/bzImage
	# The kernel's modules, installed once per kernel build (locked: make
	# check starts VMs of two phases at once).
	MODS=$KB/.modinst
	if [ ! -f "$MODS/.complete" ]; then
		exec 8>"$KB/.modinst.lock"
		flock 8
		if [ ! -f "$MODS/.complete" ]; then
			rm -rf "$MODS"
			run_logged modules-install make -C "$KB" LLVM="$LLVM_SUFFIX" \
				INSTALL_MOD_PATH="$MODS" modules_install >&2
			touch "$MODS/.complete"
		fi
		exec 8>&-
	fi
	MODTREE=${MODTREE:-$MODS/lib/modules}
fi

if [ -w /dev/kvm ]; then
	kvm_note="KVM present but not used (nested KVM is slower than TCG here)"
else
	kvm_note="no KVM"
fi

fs() { # id path [ro]
	echo "-fsdev local,id=$1,path=$2,security_model=none,multidevs=remap${3:+,readonly=on}"
	echo "-device virtio-9p-pci,fsdev=$1,mount_tag=$1"
}

# A virtio NIC, by default on a QEMU hub with no other port: soft-RoCE gets
# a real Ethernet device, and no frame ever leaves the VM.
NIC_OPTS=
if [ "$DMA_MAPPED" = 1 ]; then
	EXTRA="$EXTRA rs_dma=1 rdma_rxe.dma_mapped=1 siw.dma_mapped=1"
	if [ "$DMA_IOMMU" = 1 ]; then
		# The IOMMU is created before the devices it translates for;
		# virtio goes through it only as a modern device with
		# ACCESS_PLATFORM.
		MACHINE="-M q35 -device intel-iommu,intremap=off"
		NIC_OPTS=",iommu_platform=on,disable-legacy=on"
		EXTRA="$EXTRA rs_iommu=1 intel_iommu=on iommu.strict=1"
	else
		# DMA_SWIOTLB_SLABS: a pool of that many 2 KiB slots instead of
		# the default 64 MiB, so that mappings fail for want of slots.
		EXTRA="$EXTRA swiotlb=${DMA_SWIOTLB_SLABS:+$DMA_SWIOTLB_SLABS,}force,track_hiwater"
	fi
	[ -z "$OTHER_KERNEL" ] || EXTRA="$EXTRA rs_dma_debug=0"
fi
NET="-netdev $NETDEV,id=n0 -device virtio-net-pci,netdev=n0,mac=$MAC$NIC_OPTS"
[ "$DMA_MAPPED" = 1 ] &&
	NET="$NET -netdev hubport,hubid=1,id=n1 -device virtio-net-pci,netdev=n1,mac=${MAC%:*}:f1$NIC_OPTS"
if [ -n "${CTL_NETDEV:-}" ]; then
	NET="$NET -netdev $CTL_NETDEV,id=nc -device virtio-net-pci,netdev=nc,mac=52:54:00:12:35:${MAC##*:}"
	EXTRA="$EXTRA rs_ctl=1"
fi

CMDLINE="console=ttyS0 root=rootfs rootfstype=9p ro
rootflags=trans=virtio,version=9p2000.L,msize=262144,cache=loose
init=/sbin/rpcrdma-init panic=-1 oops=panic loglevel=6 rs_script=$SCRIPT
rs_build=$MODULE_OUT$EXTRA"
# The debug kernel: KASAN reports once per bug by default; every report
# should reach the console, and kmemleak's is requested by the tests.
# no5lvl: with 5-level paging (QEMU's -cpu max has LA57), an interrupt
# while identify_cpu() has cleared the boot CPU's feature bits makes
# pgtable_l5_enabled() false, so KASAN takes the direct map (0xff11...) for
# a wild address and reports on every tick, before init (testing.rst).
[ "$KERNEL_VARIANT" = debug ] && CMDLINE="$CMDLINE kasan.fault=report kasan_multi_shot no5lvl"

# boot: one run of the guest in a fresh results dir ($RUN); qemu's status
# in $rc.
boot() {
	RUN=$CACHE/runs/${NAME:-$SCRIPT}-$(date +%Y%m%d-%H%M%S)-$$-$1
	mkdir -p "$RUN"
	printf '%s\n' "${ARGS[@]}" >"$RUN/args"
	say "vm: $SCRIPT (timeout ${TIMEOUT}s, TCG, $kvm_note$([ "$DMA_MAPPED" = 1 ] && echo ", DMA-mapped mode")$([ -n "$MACHINE" ] && echo " behind an IOMMU")${VM_KERNEL_BUILD:+, kernel of $VM_KERNEL_BUILD}), logs in $RUN" >&2
	t0=$SECONDS
	rc=0
	# shellcheck disable=SC2046,SC2086 # the option lists are meant to split
	timeout -k 10 "$TIMEOUT" qemu-system-x86_64 \
		-accel "$ACCEL" $MACHINE -cpu max -smp "$SMP" -m "$MEM" -bios /usr/share/qemu/qboot.rom \
		-kernel "$KIMAGE" ${INITRD:+-initrd "$INITRD"} -append "$(echo $CMDLINE)" \
		-no-reboot -display none -monitor none -nodefaults \
		${PLUGIN:+-plugin "${PLUGIN//@RUN@/$RUN}"} $QEMU_EXTRA \
		-serial file:"$RUN/console.log" \
		$(fs rootfs "$ROOTFS" ro) $(fs work "$TOP" ro) $(fs mods "$MODTREE" ro) \
		$(fs results "$RUN") $NET \
		>"$RUN/qemu.log" 2>&1 &
	local qemu=$! booted_by=$((SECONDS + BOOT_LIMIT))
	# guest-init.sh creates /results/booted first thing; a guest that
	# has not reached it in BOOT_LIMIT seconds stalled in the kernel's own
	# boot, before anything of ours ran (testing.rst, "boot stall").
	while kill -0 "$qemu" 2>/dev/null && [ ! -e "$RUN/booted" ]; do
		if [ "$SECONDS" -ge "$booted_by" ]; then
			touch "$RUN/boot-stall"
			kill "$qemu" 2>/dev/null || true
			break
		fi
		sleep 2
	done
	wait "$qemu" || rc=$?
}
ARGS=("$@")
# A guest killed by the emulator's stale int3 (lib.sh stale_int3) is booted
# once more, saying so; the first run's dir is kept, marked stale-int3. A
# guest joined to another (a socket NETDEV, vm-pair.sh) is not: its partner
# must start again too, which vm-pair.sh does.
#
# A guest whose kernel stalls before init (no /results/booted within
# BOOT_LIMIT seconds; seen once, Debian's kernel in CI on 2026-12-05, silent
# after audit's first line) is killed and booted once more, saying so; its
# run is marked boot-stall. A second stall fails the run.
boot 1
if stale_int3 "$RUN/console.log"; then
	touch "$RUN/stale-int3"
	retry_why="the emulator trapped on an int3 no longer in memory (multi-threaded TCG, lib.sh stale_int3)"
elif [ -e "$RUN/boot-stall" ]; then
	retry_why="its kernel stalled before init: no sign of guest-init within ${BOOT_LIMIT}s, console silent since: \"$( (tail -n 1 "$RUN/console.log" 2>/dev/null || true) | cut -c1-100)\""
else
	retry_why=
fi
if [ -n "$retry_why" ]; then
	case $NETDEV in
	socket,*) ;;
	*)
		warn "vm: $SCRIPT: $retry_why; $RUN/console.log; booting again"
		boot 2
		;;
	esac
fi
if [ -e "$RUN/boot-stall" ]; then
	warn "vm: $SCRIPT: the guest's kernel stalled before init (${BOOT_LIMIT}s); console: $RUN/console.log"
	tail -n 5 "$RUN/console.log" >&2 2>/dev/null || true
	echo "$RUN"
	exit 124
fi

if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
	warn "vm: $SCRIPT timed out after ${TIMEOUT}s; console: $RUN/console.log"
	tail -n 20 "$RUN/console.log" >&2 || true
	echo "$RUN"
	exit 124
fi
if [ ! -f "$RUN/status" ]; then
	warn "vm: $SCRIPT ended without a status (qemu exit $rc); console: $RUN/console.log"
	tail -n 30 "$RUN/console.log" >&2 || true
	tail -n 5 "$RUN/qemu.log" >&2 || true
	echo "$RUN"
	exit 1
fi
status=$(cat "$RUN/status")
printf '    vm %s: status %s after %ds\n' "$SCRIPT" "$status" $((SECONDS - t0)) >&2
# Any report of the kernel's checkers fails the run (lib.sh KERNEL_REPORTS).
if grep -qE "$KERNEL_REPORTS" "$RUN/console.log"; then
	warn "vm: kernel reported a problem; console: $RUN/console.log"
	# The first lines only: head's exit may end grep with SIGPIPE when
	# there is more (a mutant's many reports behind the IOMMU), which under
	# pipefail would end this script before it names the run.
	grep -nE -A3 "$KERNEL_REPORTS" "$RUN/console.log" | head -n 20 >&2 || true
	[ "$status" = 0 ] && status=1
fi
echo "$RUN"
exit "$status"
