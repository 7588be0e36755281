# SPDX-License-Identifier: GPL-2.0
# Helpers for the guest scripts: load our rpcrdma.ko, soft-RoCE, knfsd over
# RDMA, mounts and counters. Sourced by tests/vm/guest/*.sh.

set -eu

SERVER_IP=10.11.0.1
RDMA_PORT=20049
EXPORT=/srv/export
FAILS=0
# Our modules: build/ for the test kernel, build-debug/ for the debug kernel
# (scripts/vm-run.sh passes rs_build on the kernel command line).
MODULES=/work/${rs_build:-build}

log()  { echo "[guest $(cut -d' ' -f1 /proc/uptime)s] $*"; }
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
pass() { echo "PASS: $*"; }
# result KEY VALUE: a line of the machine-readable summary for the host.
result() { echo "$1=$2" >>/results/summary; echo "  $1 = $2"; }

# load_rpcrdma FLAVOUR: our build of rpcrdma.ko instead of the kernel's, and
# proof of which one is loaded. On an installed kernel (rs_load=modprobe on
# the kernel command line: Debian's, with its modules tree) the module is
# what a plain `modprobe rpcrdma` picks: FLAVOUR rust must be ours from
# updates/ (DKMS), FLAVOUR stock the distribution's own, FLAVOUR fallback
# the distribution's own although ours is installed: the package's loader
# (its modprobe.d install command) loads it from DKMS's archive when the
# kernel refuses ours (module signatures enforced, DKMS's key not trusted).
# FLAVOUR intree is the kernel's own rpcrdma.ko of a kernel built from the
# RFC series with the Send path's choice on Rust (scripts/series-check.sh
# boot), always loaded with modprobe.
load_rpcrdma() {
	flavour=$1
	modprobe ib_core
	modprobe rdma_cm
	modprobe sunrpc
	modprobe rdma_rxe
	if grep -q '^rpcrdma ' /proc/modules; then
		fail "an rpcrdma module is already loaded"
		return 1
	fi
	kmemleak_baseline
	if [ "${rs_load:-insmod}" = modprobe ] || [ "$flavour" = intree ]; then
		load_installed_rpcrdma "$flavour"
		return
	fi
	# rs_module_dir: another build of the flavour (the differential one).
	ko=$MODULES/${rs_module_dir:-$flavour}/rpcrdma.ko
	[ -f "$ko" ] || { fail "no $ko"; return 1; }
	insmod "$ko"
	want=$(modinfo -F srcversion "$ko")
	have=$(cat /sys/module/rpcrdma/srcversion)
	version=$(cat /sys/module/rpcrdma/version)
	result module_version "$version"
	result module_flavour "$(modinfo -F sendto_flavour "$ko")"
	if [ "$want" = "$have" ] && [ "${version##*-}" = "$flavour" ]; then
		pass "loaded rpcrdma.ko is ours ($flavour, srcversion $have)"
	else
		fail "loaded rpcrdma is not $ko (srcversion $have, want $want; version $version)"
		return 1
	fi
	coverage_note_module
}

# coverage_note_module: with rs_coverage=1 on the kernel command line
# (scripts/coverage.sh), the loaded rpcrdma's text symbols and addresses
# into /results/kallsyms-rpcrdma-N.txt, N counting this VM's loads, so that
# the coverage plugin's addresses can be mapped back to its functions.
# With rs_cov_trace=1 besides, it also enables every svcrdma event, so
# that the code firing them runs (each is a static branch, off unless
# enabled); tracing_on may stay off, the events still fire.
coverage_note_module() {
	[ "${rs_coverage:-0}" = 1 ] || return 0
	cov_n=1
	while [ -e /results/kallsyms-rpcrdma-$cov_n.txt ]; do cov_n=$((cov_n + 1)); done
	awk '$2 ~ /^[tT]$/ && $4 == "[rpcrdma]"' /proc/kallsyms >/results/kallsyms-rpcrdma-$cov_n.txt
	[ "${rs_cov_trace:-0}" = 1 ] || return 0
	for e in /sys/kernel/tracing/events/rpcrdma/svcrdma_*/enable; do
		echo 1 >"$e" || fail "coverage: cannot enable ${e%/enable}"
	done
}

load_installed_rpcrdma() {
	if [ -n "${rs_pkgroot:-}" ]; then
		install_package_files "$rs_pkgroot" || return 1
		loader=/usr/libexec/rpcrdma-rs-dkms/rpcrdma-rs-load
		if modprobe -c | grep -q "^install rpcrdma $loader "; then
			pass "modprobe's configuration has the package's install command for rpcrdma ($loader)"
		else
			fail "modprobe's configuration lacks the package's install command for rpcrdma"
		fi
		sb_rc=0
		sb=$($loader --status) || sb_rc=$?
		result signature_status "$sb"
		case $1:$sb_rc in
		rust:0 | fallback:2) pass "$loader --status: $sb" ;;
		*) fail "$loader --status exits $sb_rc for a $1 run: $sb" ;;
		esac
	fi
	# The package's own autopkgtest that needs a machine (isolation-machine):
	# its verdict on this boot, then the checks below.
	if [ -n "${rs_pkgroot:-}" ] && [ "$1" = rust ]; then
		t_rc=0
		t_out=$(/work/debian/tests/load-module 2>&1) || t_rc=$?
		echo "$t_out" | sed 's/^/    load-module: /'
		if [ "$t_rc" = 0 ]; then
			pass "the package's autopkgtest load-module passes on $(uname -r)"
		else
			fail "the package's autopkgtest load-module exits $t_rc on $(uname -r)"
		fi
	fi
	modprobe rpcrdma || { fail "modprobe rpcrdma"; return 1; }
	file=$(modinfo -n rpcrdma)
	version=$(cat /sys/module/rpcrdma/version 2>/dev/null || echo none)
	result module_file "$file"
	result module_version "$version"
	# The flavour of the file on disk, when that is what was loaded.
	flavour_tag=
	[ "$version" = none ] || flavour_tag=$(modinfo -F sendto_flavour rpcrdma 2>/dev/null || true)
	result module_flavour "${flavour_tag:-$1}"
	result kernel_release "$(uname -r)"
	result kernel_taint "$(cat /proc/sys/kernel/tainted)"
	# Modules without a version carry no srcversion (the distribution's).
	if [ -r /sys/module/rpcrdma/srcversion ] &&
		[ "$(modinfo -F srcversion rpcrdma)" != "$(cat /sys/module/rpcrdma/srcversion)" ]; then
		fail "the loaded rpcrdma is not $file (srcversion differs)"
		return 1
	fi
	case $1:$file:$version in
	rust:*/updates/*:*-rs.*-rust)
		pass "modprobe rpcrdma on $(uname -r) loads ours from updates/ ($version)" ;;
	stock:*/kernel/net/sunrpc/xprtrdma/*:none)
		pass "modprobe rpcrdma on $(uname -r) loads the distribution's own ($file)" ;;
	intree:*/kernel/net/sunrpc/xprtrdma/*:none)
		# The Rust crate's functions carry its name in their (v0
		# mangled) symbols: net/sunrpc/xprtrdma/sendto_rs/ was linked;
		# and svc_rdma_sendto.o was not (its Send completion handler,
		# whose address it takes, is always a symbol of its own).
		n=$(grep -c '18svc_rdma_sendto_rs.*\[rpcrdma\]$' /proc/kallsyms || true)
		if [ "$n" -gt 0 ] && ! grep -qE ' svc_rdma_wc_send\s+\[rpcrdma\]$' /proc/kallsyms; then
			pass "modprobe rpcrdma on $(uname -r) loads the kernel's own, its Send path the in-tree Rust one ($n symbols of sendto_rs/)"
		else
			fail "the kernel's own rpcrdma has no Rust Send path ($n symbols of sendto_rs/)"
			return 1
		fi ;;
	fallback:*/updates/*:none)
		why=$(dmesg | grep -m1 'rpcrdma-rs-dkms: the kernel refused our rpcrdma.ko' || true)
		if [ -n "$why" ] && dmesg | grep -q "rpcrdma-rs-dkms: loaded the kernel's own rpcrdma.ko"; then
			pass "modprobe rpcrdma on $(uname -r) with ours refused loads the distribution's own (kernel log: ${why#*] })"
		else
			fail "modprobe rpcrdma loaded a module without our version, but the kernel log does not say the loader fell back"
			return 1
		fi ;;
	*)
		fail "modprobe rpcrdma loaded $file (version $version), not the $1 module"
		return 1 ;;
	esac
}

# install_package_files ROOT: in a VM that stands for a server with the
# package installed (rs_pkgroot=ROOT on the kernel command line), the files
# the package and DKMS put outside the modules tree (the modprobe.d file,
# the loader, DKMS's certificate and its archive of the kernel's own
# rpcrdma.ko), as scripts/debian-check.sh copied them from the Debian
# system where apt installed the package, put in place over the read-only
# root with overlays.
install_package_files() {
	# Once per boot: a later load (read-sink.sh loads per fabric) finds
	# them in place.
	[ -e /tmp/package-files ] && return 0
	: >/tmp/package-files
	for d in /usr/lib/modprobe.d /usr/libexec /var/lib; do
		ov=/tmp/overlay$(echo "$d" | tr / _)
		mkdir -p "$ov/upper" "$ov/work"
		mount -t overlay overlay -o "lowerdir=$d,upperdir=$ov/upper,workdir=$ov/work" "$d" ||
			{ fail "cannot overlay $d for the package's files"; return 1; }
	done
	(cd "$1" && find . -type f) | while read -r f; do
		mkdir -p "$(dirname "${f#.}")" && cp -p "$1/$f" "${f#.}"
	done
	# The overlay on /var/lib hides guest-init's tmpfs for NFS's state.
	mount -t tmpfs -o mode=0755 tmpfs /var/lib/nfs
	mkdir -p /var/lib/nfs/sm /var/lib/nfs/sm.bak /var/lib/nfs/v4recovery /var/lib/nfs/nfsdcld
	log "package files in place: $(cd "$1" && find . -type f | sed 's/^\.//' | tr '\n' ' ')"
}

# setup_fabric [IP]: soft-RoCE on eth0, addressed IP (default: the server's).
# The RDMA fabric: soft-RoCE (rxe, the default) or soft-iWARP (siw), from
# the kernel command line (vm-run.sh -e rs_fabric=siw).
FABRIC=${rs_fabric:-rxe}

# setup_fabric [IP]: eth0 at IP (the server's by default) with the fabric's
# software RDMA device on it.
setup_fabric() {
	# Built in on the test kernels, a module on a distribution's.
	modprobe virtio_net 2>/dev/null || true
	ip addr add "${1:-$SERVER_IP}"/24 dev eth0
	ip link set eth0 up
	ctl_up "${1:-$SERVER_IP}"
	case $FABRIC in
	siw)
		if [ -n "${rs_siw_strand:-}" ]; then
			# scripts/build-siw-strand.sh's siw: a drain leaves the
			# WRs in flight unflushed (1: until the QP is destroyed,
			# 2: for ever).
			# insmod, which loads no dependency and reads no siw.*
			# of the command line: both done here.
			modprobe -a $(modinfo -F depends "$MODULES/siw-strand/siw.ko" | tr , ' ')
			insmod "$MODULES/siw-strand/siw.ko" strand_sends="$rs_siw_strand" \
				$([ "${rs_dma:-0}" = 1 ] && echo dma_mapped=1) ||
				{ fail "siw with strand_sends=$rs_siw_strand"; return 1; }
		else
			modprobe siw
		fi
		dev=siw0
		;;
	*)
		# rs_dma_pci_bits=N (scripts/dma-exhaust.sh): the rdma_rxe of
		# scripts/build-rxe-dma-pci.sh, mapping through eth1's PCI
		# function, left down, its DMA mask narrowed to N bits: behind
		# the IOMMU the RDMA device's mappings alone get a small range
		# of addresses. insmod reads no rdma_rxe.* of the command line.
		if [ -n "${rs_dma_pci_bits:-}" ]; then
			# Without the IOMMU a narrow mask refuses every mapping
			# (swiotlb's pool is above it): nothing would be tested.
			[ "$DMA_MAPPED" = 1 ] && [ "$DMA_IOMMU" = 1 ] ||
				{ fail "rs_dma_pci_bits needs the DMA-mapped mode behind the IOMMU (vm-run.sh -D, DMA_IOMMU=1)"; return 1; }
			pci=$(basename "$(dirname "$(readlink -f /sys/class/net/eth1/device)")")
			ko=$MODULES/rxe-dma-pci/rdma_rxe.ko
			[ -f "$ko" ] || { fail "no $ko (scripts/build-rxe-dma-pci.sh)"; return 1; }
			# load_rpcrdma loaded the kernel's own; no device yet.
			rmmod rdma_rxe 2>/dev/null || true
			modprobe -a $(modinfo -F depends "$ko" | tr , ' ')
			insmod "$ko" dma_mapped=1 dma_pci="$pci" dma_mask_bits="$rs_dma_pci_bits" ||
				{ fail "rdma_rxe with dma_pci=$pci dma_mask_bits=$rs_dma_pci_bits"; return 1; }
			log "rdma_rxe maps through eth1's PCI function $pci, DMA mask $rs_dma_pci_bits bits"
		else
			modprobe rdma_rxe
		fi
		dev=rxe0
		;;
	esac
	rdma link add $dev type "$FABRIC" netdev eth0
	rdma link show | grep -q "$dev/" || { fail "$dev did not come up"; return 1; }
	log "$FABRIC: $(rdma link show $dev/1)"
	dma_mode_start eth0 $dev
}

# The DMA-mapped mode (scripts/vm-run.sh -D, rs_dma=1 on the kernel command
# line): soft-RoCE and soft-iWARP register their NIC's PCI function as
# their DMA device (scripts/kernel-patches/0002), so every ib_dma_* call of
# rpcrdma and of the IB core is a real DMA-API call; swiotlb=force bounces
# each mapping, so a missing sync sends stale bytes, and the drivers refuse
# (WARNING) any access through an address that is not mapped; DMA-API
# debugging checks every map, unmap and sync. Each device's mappings at
# start are recorded in /tmp/dma-devs; dma_mode_check compares at the end.
# Behind the emulated IOMMU (rs_iommu=1: vm-run.sh -D with DMA_IOMMU=1) nothing bounces:
# a DMA address is an IOVA, translated through the NIC's IOMMU domain, and
# one that is not mapped (never, or no longer) is refused.
DMA_MAPPED=${rs_dma:-0}
DMA_IOMMU=${rs_iommu:-0}
# rs_dma_debug=0: a kernel without CONFIG_DMA_API_DEBUG (Debian's, with the
# test drivers built out of tree: scripts/debian-test-drivers.sh). What is
# left there: the drivers' own checks (an access outside a live bounce slot
# of the default pool is refused with a WARNING), and swiotlb's count of
# the slots in use, which must come back to its value at start (with
# swiotlb=force every mapping holds slots; the virtio devices bypass the
# DMA API, so the RDMA devices' mappings are the only ones).
DMA_DEBUG=${rs_dma_debug:-1}
DMA_API=/sys/kernel/debug/dma-api
SWIOTLB=/sys/kernel/debug/swiotlb
# dma_mappings DEV: the live mappings of device DEV that DMA-API debugging
# tracks, less the NIC driver's receive pages. Behind the IOMMU the NICs
# are virtio devices with iommu_platform=on, so virtio-net maps through
# the DMA API as well, and its page_pool keeps its pages mapped while it
# holds them, growing with traffic (soft-iWARP's TCP doubled it, 128 to
# 256 pages). page_pool maps with DMA_ATTR_SKIP_CPU_SYNC |
# DMA_ATTR_WEAK_ORDERING (attrs=0x22), which nothing in the RDMA core,
# rxe, siw or xprtrdma uses.
# dma_live DEV prints their lines of the DMA-API debugging dump.
dma_live() { awk -v d="$1" '$2 == d && !/ DMA_FROM_DEVICE .* attrs=0x22$/' $DMA_API/dump; }
dma_mappings() { dma_live "$1" | wc -l; }
# dma_translated DEV: how many of DEV's live mappings (as dma_mappings
# counts them) have a DMA address other than their physical one (P= and
# D= of the DMA-API debugging dump).
dma_translated() {
	dma_live "$1" | awk '{
		p = $0; sub(/.* P=0x/, "", p); sub(/ .*/, "", p); sub(/^0+/, "", p)
		a = $0; sub(/.* D=/, "", a); sub(/ .*/, "", a); sub(/^0+/, "", a)
		if (tolower(p) != tolower(a)) n++
	} END { print n + 0 }'
}

# dma_mode_start NETDEV RDMADEV: in the DMA-mapped mode, proves that
# RDMADEV (just added on NETDEV) maps through a PCI device with every
# mapping bounced, and records that device's mappings now.
dma_mode_start() {
	[ "$DMA_MAPPED" = 1 ] || return 0
	case $2 in siw*) mod=siw ;; *) mod=rdma_rxe ;; esac
	if [ "$(cat /sys/module/$mod/parameters/dma_mapped 2>/dev/null)" != Y ]; then
		fail "DMA-mapped mode: $mod.dma_mapped is not set (a kernel without scripts/kernel-patches/0002?)"
		return 1
	fi
	line=$(dmesg | grep "$mod: dma_mapped: $1 uses " | tail -n 1)
	dev=$(echo "$line" | sed -n 's/.* uses \([^ ]*\) as its DMA device.*/\1/p')
	if [ "$DMA_DEBUG" = 0 ]; then
		case $line in
		*"every mapping bounced"*) ;;
		*) fail "DMA-mapped mode: $2 on $1 has no bounced DMA device (${line:-no message from $mod})"; return 1 ;;
		esac
		[ -r $SWIOTLB/io_tlb_used ] || { fail "DMA-mapped mode: no $SWIOTLB/io_tlb_used"; return 1; }
		base=$(cat $SWIOTLB/io_tlb_used)
		echo "$dev $base $2" >>/tmp/dma-devs
		pass "DMA-mapped mode: $2 on $1 maps through PCI device $dev, every mapping bounced by swiotlb ($base slots in use at start); no DMA-API debugging in this kernel"
		return 0
	fi
	[ -r $DMA_API/dump ] && [ "$(cat $DMA_API/disabled)" = N ] ||
		{ fail "DMA-mapped mode: DMA-API debugging is not active"; return 1; }
	base=$(dma_mappings "$dev")
	if [ "$DMA_IOMMU" = 1 ]; then
		group=/sys/bus/pci/devices/$dev/iommu_group
		case $line in
		*"translated by its IOMMU"*) ;;
		*) fail "DMA-mapped mode: $2 on $1 is not behind an IOMMU (${line:-no message from $mod})"; return 1 ;;
		esac
		# Strict: "DMA" (a lazy domain would be "DMA-FQ").
		[ "$(cat $group/type 2>/dev/null)" = DMA ] ||
			{ fail "DMA-mapped mode: $dev's IOMMU domain is $(cat $group/type 2>/dev/null || echo missing), not strict DMA"; return 1; }
		translated=$(dma_translated "$dev")
		[ "$translated" -gt 0 ] ||
			{ fail "DMA-mapped mode: none of $dev's $base mappings has an IOVA other than its address"; return 1; }
		how="behind the IOMMU in a strict DMA domain (group $(basename "$(readlink $group)"); $translated of its $base mappings at start translated)"
		result dma_mode iommu
	else
		case $line in
		*"every mapping bounced"*) ;;
		*) fail "DMA-mapped mode: $2 on $1 has no bounced DMA device (${line:-no message from $mod})"; return 1 ;;
		esac
		how="every mapping bounced by swiotlb ($base mappings at start)"
		result dma_mode swiotlb
	fi
	echo "$dev $base $2" >>/tmp/dma-devs
	pass "DMA-mapped mode: $2 on $1 maps through PCI device $dev, $how, checked by DMA-API debugging"
}

# dma_mode_check WHO: in the DMA-mapped mode, once the server has stopped:
# DMA-API debugging found no error; each device's mappings are back to
# their number at start (within 30 s: transports are freed asynchronously);
# swiotlb did bounce. Fails WHO otherwise.
dma_mode_check() {
	[ "$DMA_MAPPED" = 1 ] || return 0
	[ -s /tmp/dma-devs ] || { fail "$1: the DMA-mapped mode was never set up"; return 1; }
	[ "$DMA_DEBUG" = 1 ] || { dma_mode_check_slots "$1"; return; }
	while read -r dev base rdev; do
		w=0
		while [ "$(dma_mappings "$dev")" -gt "$base" ] && [ $w -lt 30 ]; do
			sleep 1
			w=$((w + 1))
		done
		now=$(dma_mappings "$dev")
		result "dma_mappings_${rdev}_start" "$base"
		result "dma_mappings_${rdev}_end" "$now"
		if [ "$now" -le "$base" ]; then
			pass "$1: no DMA mapping of $rdev ($dev) left after the server stopped ($now, $base at start)"
		else
			dma_live "$dev" >"/results/dma-left-$rdev.txt"
			fail "$1: $((now - base)) DMA mappings of $rdev ($dev) left 30 s after the server stopped (dma-left-$rdev.txt)"
		fi
	done </tmp/dma-devs
	errors=$(cat $DMA_API/error_count)
	hiwater=$(cat $SWIOTLB/io_tlb_used_hiwater 2>/dev/null || echo 0)
	result dma_api_debug_errors "$errors"
	result dma_api_debug_disabled "$(cat $DMA_API/disabled)"
	result swiotlb_used_hiwater "$hiwater"
	if [ "$errors" = 0 ] && [ "$(cat $DMA_API/disabled)" = N ]; then
		pass "$1: DMA-API debugging found no error in any map, unmap or sync"
	else
		dmesg | grep -A3 'DMA-API' | head -n 20 | sed 's/^/    /'
		fail "$1: DMA-API debugging: $errors errors, disabled=$(cat $DMA_API/disabled)"
	fi
	if [ "$DMA_IOMMU" = 1 ]; then
		# Nothing bounces behind the IOMMU; what it refused is a WARNING
		# of the driver, which fails the run (vm-run.sh).
		:
	elif [ "$hiwater" -gt 0 ]; then
		pass "$1: swiotlb bounced the mappings ($hiwater slots in use at most)"
	else
		fail "$1: swiotlb bounced nothing (io_tlb_used_hiwater 0)"
	fi
}

# dma_mode_check_slots WHO: dma_mode_check without DMA-API debugging: the
# swiotlb slots in use back to their number at start (the lowest of the
# devices' starts) within 30 s, and swiotlb did bounce.
dma_mode_check_slots() {
	base=$(awk 'NR == 1 || $2 < b { b = $2 } END { print b }' /tmp/dma-devs)
	w=0
	while [ "$(cat $SWIOTLB/io_tlb_used)" -gt "$base" ] && [ $w -lt 30 ]; do
		sleep 1
		w=$((w + 1))
	done
	now=$(cat $SWIOTLB/io_tlb_used)
	hiwater=$(cat $SWIOTLB/io_tlb_used_hiwater 2>/dev/null || echo 0)
	result swiotlb_slots_start "$base"
	result swiotlb_slots_end "$now"
	result swiotlb_used_hiwater "$hiwater"
	if [ "$now" -le "$base" ]; then
		pass "$1: every swiotlb slot freed after the server stopped ($now in use, $base at start): no mapping left"
	else
		fail "$1: $((now - base)) swiotlb slots still in use 30 s after the server stopped: mappings left"
	fi
	if [ "$hiwater" -gt "$base" ]; then
		pass "$1: swiotlb bounced the mappings ($hiwater slots in use at most)"
	else
		fail "$1: swiotlb bounced nothing (io_tlb_used_hiwater $hiwater)"
	fi
}

# Two-VM tests driven by the client VM (bench, storm): srv COMMAND runs
# COMMAND on the server VM through its rsh.py, with this library sourced.
srv() { python3 /work/tests/vm/guest/rsh.py $RSH_IP "$@"; }

# A pair's control link (vm-pair.sh -C, rs_ctl=1): rsh.py's traffic goes
# over a NIC of its own (MAC 52:54:00:12:35:xx), 10.12.0.x for the
# fabric's 10.11.0.x, so that the fabric's NIC can be removed under it.
RSH_IP=$SERVER_IP
[ "${rs_ctl:-0}" = 1 ] && RSH_IP=10.12.${SERVER_IP#10.11.}
ctl_up() {
	[ "${rs_ctl:-0}" = 1 ] || return 0
	local n
	for n in /sys/class/net/*; do
		case $(cat "$n/address") in
		52:54:00:12:35:*)
			ip addr add "10.12.${1#10.11.}/24" dev "${n##*/}"
			ip link set "${n##*/}" up
			return 0
			;;
		esac
	done
	fail "control link: no NIC with a 52:54:00:12:35 MAC"
	return 1
}

# unplug_fabric_nic: on a server VM in the DMA-mapped mode, under a pair's
# control link (rsh.py), what a hot-unplug or a driver unbind does: the
# fabric NIC's PCI function removed, so its net device and soft-RoCE's
# device go, which waits for every transport on it to release what it had
# there. When the PCI driver lets go of the function, DMA-API debugging
# reports any of its mappings still live ("pending DMA allocations"). Then
# the function is found again, the fabric set up on its new net device
# (same address, rxe0 again), and the Send path's leak counters printed,
# as after a deletion. Prints what went wrong and fails.
unplug_fabric_nic() {
	local pci e0 n ifname live p secs
	pci=$(basename "$(readlink -f /sys/class/net/eth0/device/..)")
	[ -e "/sys/bus/pci/devices/$pci" ] || { echo "no PCI function under eth0 ($pci)"; return 1; }
	e0=$(cat $DMA_API/error_count)
	live=$(dma_mappings "$pci")
	echo 1 >"/sys/bus/pci/devices/$pci/remove" &
	p=$!
	n=0
	while kill -0 $p 2>/dev/null && [ $n -lt 150 ]; do
		sleep 1
		n=$((n + 1))
	done
	if kill -0 $p 2>/dev/null; then
		for p in /proc/[0-9]*; do
			[ "$(awk '{ print $3 }' "$p/stat" 2>/dev/null)" = D ] || continue
			echo "== $(cat "$p/comm") (${p#/proc/})"
			cat "$p/stack" 2>/dev/null
		done >/results/unplug-blocked.txt
		echo "removing PCI function $pci took over 150 s (blocked tasks: unplug-blocked.txt); Send path: $(send_path_leaks)"
		return 1
	fi
	secs=$n
	if [ "$(cat $DMA_API/error_count)" != "$e0" ] || dmesg | grep -q 'pending DMA allocations'; then
		dmesg | grep -A6 'DMA-API' | tail -n 12
		echo "DMA-API debugging reported $(($(cat $DMA_API/error_count) - e0)) errors at the removal of $pci, $live mappings live before it"
		return 1
	fi
	echo 1 >/sys/bus/pci/rescan
	n=0
	while ! ls "/sys/bus/pci/devices/$pci"/virtio*/net/ >/dev/null 2>&1 && [ $n -lt 30 ]; do
		sleep 1
		n=$((n + 1))
	done
	ifname=$(ls "/sys/bus/pci/devices/$pci"/virtio*/net/ 2>/dev/null | head -n 1)
	[ -n "$ifname" ] || { echo "$pci came back with no net device"; return 1; }
	ip addr add "$SERVER_IP"/24 dev "$ifname"
	ip link set "$ifname" up
	rdma link add rxe0 type rxe netdev "$ifname" || { echo "rxe0 on $ifname after the return of $pci"; return 1; }
	echo "unplug_mappings_live=$live unplug_remove_seconds=$secs" >>/tmp/unplugs
	send_path_leaks
}

# rsh_client CLIENT_IP: the kernel's NFS/RDMA client on soft-RoCE at
# CLIENT_IP, and the server VM's rsh.py answering; however the script ends,
# the server VM is told to finish too.
rsh_client() {
	modprobe rpcrdma
	setup_fabric "$1"
	srv true || { fail "the server VM's rsh did not answer"; exit 1; }
	trap 'srv exit >/dev/null 2>&1 || true' EXIT
}

start_nfsd() {
	modprobe nfsd
	mount -t nfsd nfsd /proc/fs/nfsd
	# Kernel messages from here on are the server's (not KUnit's at load).
	DMESG_MARK=$(dmesg | wc -l)
	# Short lease and grace: NFSv4 OPEN otherwise waits out 90 s of grace.
	echo 10 >/proc/fs/nfsd/nfsv4leasetime
	echo 10 >/proc/fs/nfsd/nfsv4gracetime
	mkdir -p /run/rpcbind $EXPORT
	rpcbind -w
	echo "$EXPORT *(rw,sync,no_root_squash,insecure,no_subtree_check,fsid=0)" >/etc/exports
	exportfs -ra
	rpc.mountd
	rpc.nfsd "${NFSD_THREADS:-8}"
	echo "rdma $RDMA_PORT" >/proc/fs/nfsd/portlist
	grep -q "rdma $RDMA_PORT" /proc/fs/nfsd/portlist || { fail "knfsd is not listening on rdma $RDMA_PORT"; return 1; }
	log "knfsd listening on: $(tr '\n' ' ' </proc/fs/nfsd/portlist)"
}

# mount_rdma VERS DIR: the server's export over RDMA, with $MOUNT_OPTS added.
mount_rdma() {
	vers=$1 dir=$2
	mkdir -p "$dir"
	case $vers in
	3) mount -t nfs -o rdma,port=$RDMA_PORT,vers=3,nolock${MOUNT_OPTS:+,$MOUNT_OPTS} $SERVER_IP:$EXPORT "$dir" ;;
	*) mount -t nfs -o rdma,port=$RDMA_PORT,vers="$vers"${MOUNT_OPTS:+,$MOUNT_OPTS} $SERVER_IP:/ "$dir" ;;
	esac
}

# mount_opts DIR: the options the kernel shows for the mount at DIR.
mount_opts() { awk -v d="$1" '$2 == d { print $4 }' /proc/mounts; }

# xprt_of DIR: the transport named in the client's mountstats for DIR.
xprt_of() {
	awk -v d="$1" '$1 == "device" && $5 == d { m = 1; next }
		$1 == "device" { m = 0 }
		m && $1 == "xprt:" { print $2; exit }' /proc/self/mountstats
}

# The first line: a module without scripts/module-patches/0002 (Debian's
# own) may append a spliced second value (upstream-reports.rst, report 12).
stat_rdma() { head -n 1 "/proc/sys/sunrpc/svc_rdma/rdma_stat_$1"; }

# Tracepoint counting: trace_start EVENT...; trace_count EVENT after.
# TRACE_BUFFER_KB: the buffer per CPU (8 MiB unless set).
trace_start() {
	t=/sys/kernel/tracing
	echo 0 >$t/tracing_on
	echo >$t/trace
	echo "${TRACE_BUFFER_KB:-8192}" >$t/buffer_size_kb
	# No command names: recording them hooks sched_switch, and enabling
	# or removing the events (rpcrdma's go with its unload) then patches
	# __schedule's tracepoint while every CPU runs it. Once, under TCG, a
	# CPU trapped on that patch's int3 after it was gone ("Oops: int3" in
	# __schedule, teardown, 2026-12-03). The counts need no names.
	echo 0 >$t/options/record-cmd
	for e in "$@"; do echo "$e" >>$t/set_event; done
	echo 1 >$t/tracing_on
}
trace_stop() { echo 0 >/sys/kernel/tracing/tracing_on; }
trace_count() { grep -c " $1:" /sys/kernel/tracing/trace || true; }

# send_path_leaks: "name=value" for each of the Send path's leak counters
# that is not 0 (nothing for the c flavour, which has none).
send_path_leaks() {
	for p in send_ctxts_live send_pages_held send_sges_mapped; do
		f=/sys/module/rpcrdma/parameters/$p
		[ -r $f ] && [ "$(cat $f)" != 0 ] && echo "$p=$(cat $f)"
	done
	true
}

# server_dmesg: the kernel messages since knfsd was started.
server_dmesg() { dmesg | tail -n +$((${DMESG_MARK:-0} + 1)); }

# expect_no_leaks WHO: records the leak counters; any not 0 fails WHO.
# Transports are freed asynchronously after the server stops (a soft-iWARP
# connection's teardown can take seconds, and each transport's pool is
# freed with it): the counters get up to 30 s to drain, and how long they
# took is recorded.
expect_no_leaks() {
	w=0
	while [ -n "$(send_path_leaks)" ] && [ $w -lt 30 ]; do
		sleep 1
		w=$((w + 1))
	done
	result leak_counters_drained_after_s "$w"
	for p in send_ctxts_live send_pages_held send_sges_mapped; do
		f=/sys/module/rpcrdma/parameters/$p
		[ -r $f ] || continue
		result "after_$p" "$(cat $f)"
	done
	# Sends posted whose completion never came, reclaimed when their
	# transport was freed (a provider fault survived, not a leak): counted
	# and shown. A refused second put of a ctxt is our bug: it fails.
	f=/sys/module/rpcrdma/parameters/send_ctxts_reclaimed
	if [ -r $f ]; then
		result send_ctxts_reclaimed "$(cat $f)"
		server_dmesg | grep 'rpcrdma: transport teardown:' | tail -5 | sed 's/^/    /'
	fi
	if server_dmesg | grep -q 'rpcrdma: send ctxt put while'; then
		server_dmesg | grep 'rpcrdma: send ctxt put while' | tail -5 | sed 's/^/    /'
		fail "$1: a send ctxt was put twice"
	fi
	l=$(send_path_leaks)
	if [ -n "$l" ]; then
		# What still exists of RDMA connections.
		rdma resource show cm_id 2>&1 | sed 's/^/    /'
		rdma resource show qp 2>&1 | sed 's/^/    /'
		fail "$1: the Send path still holds $l 30 s after the server stopped"
	fi
}

# start_verifying_load DIR NAME: in the background, fio randrw 64 KiB with
# crc32c verify (it stops at the first bad block) and, beside it, small
# direct reads, whose inline replies carry mapped pages. Sets FIO_PID and
# READS_PID (stop_verifying_fio checks and stops the former). Returns once
# fio has laid out its file, so that faults hit verified I/O, not set-up.
start_verifying_load() {
	fio --name="$2" --directory="$1" --rw=randrw --bs=64k --size=16m \
		--direct=1 --ioengine=libaio --iodepth=8 --runtime=3600 --time_based \
		--verify=crc32c --verify_backlog=16 --verify_fatal=1 --invalidate=0 \
		--serialize_overlap=1 --verify_state_save=0 \
		--output-format=terse --terse-version=3 >/tmp/fio.out 2>&1 &
	FIO_PID=$!
	head -c 3000 /dev/urandom >"$1/small"
	(while :; do
		dd if="$1/small" of=/dev/null bs=2000 count=1 iflag=direct status=none 2>/dev/null
	done) &
	READS_PID=$!
	n=0
	while [ "$(stat -c %s "$1/$2.0.0" 2>/dev/null || echo 0)" -lt 16777216 ] && [ $n -lt 300 ]; do
		sleep 1
		n=$((n + 1))
	done
	sleep 2
}

# client_connects: the client's count of RDMA connections made, all mounts
# (mountstats "xprt: rdma").
client_connects() {
	awk '$1 == "xprt:" && $2 == "rdma" { n += $5 } END { print n + 0 }' /proc/self/mountstats
}

# stop_verifying_fio PID KEY: fio stops at its first verify error
# (verify_fatal), so one still running has verified every block it read
# back. Stops it, records the KiB it moved as KEY; fails if it had stopped.
stop_verifying_fio() {
	if kill -0 "$1" 2>/dev/null; then
		kill -INT "$1"
		wait "$1" || true
		FIO_KIB=$(grep '^3;' /tmp/fio.out | awk -F';' '{ print $6 + $47 }')
		result "$2" "$FIO_KIB"
		return 0
	fi
	tail -n 5 /tmp/fio.out
	return 1
}

# kmemleak, on the debug kernel only (elsewhere both are no-ops).
# kmemleak_baseline forgets what is suspected already (objects of other
# subsystems from boot); kmemleak_check WHO scans and fails WHO on any new
# suspect, keeping kmemleak's report in /results.
KMEMLEAK=/sys/kernel/debug/kmemleak
kmemleak_baseline() {
	[ -w $KMEMLEAK ] || return 0
	echo scan >$KMEMLEAK
	echo clear >$KMEMLEAK
}
kmemleak_check() {
	[ -w $KMEMLEAK ] || return 0
	# A leak is reported once unreferenced through a scan and older than
	# kmemleak's minimum age (5 s): wait, then scan twice.
	sleep 6
	echo scan >$KMEMLEAK
	echo scan >$KMEMLEAK
	cat $KMEMLEAK >/tmp/kmemleak
	n=$(grep -c '^unreferenced object' /tmp/kmemleak || true)
	result "kmemleak_suspects" "$n"
	if [ "$n" = 0 ]; then
		pass "$1: kmemleak finds no leak"
	else
		cp /tmp/kmemleak "/results/kmemleak.txt"
		head -n 40 /tmp/kmemleak
		fail "$1: kmemleak suspects $n objects (kmemleak.txt in the results)"
	fi
}

# stall_dump FILE: what a hung workload waits for: blocked tasks' kernel
# stacks, the NFS client's RPC tasks and transports, nfsd threads, the
# Send path's counters and the kernel log's tail.
# qp_modify_trace: records every modify_qp of a soft-RoCE QP, with the
# attributes that set its packet sequence numbers and the caller's stack,
# in the trace buffer (a kprobe event; call it after trace_start, which
# clears the buffer). For the storm's stall (Documentation/testing.rst):
# which modify gave a connected QP the PSNs its peer does not expect.
# The offsets are struct ib_qp_attr's qp_state, rq_psn, sq_psn and
# dest_qp_num, the same in the test and the debug kernel (measured with
# offsetof); qp is the struct ib_qp pointer.
qp_modify_trace() {
	t=/sys/kernel/tracing
	[ -w $t/kprobe_events ] || return 0
	[ -d $t/events/rs/qp_modify ] ||
		echo 'p:rs/qp_modify rdma_rxe:rxe_modify_qp qp=%di:x64 mask=%dx:x32 state=+0(%si):u32 rq_psn=+20(%si):u32 sq_psn=+24(%si):u32 dqpn=+28(%si):u32' \
			>>$t/kprobe_events || return 0
	echo stacktrace >$t/events/rs/qp_modify/trigger
	echo 1 >$t/events/rs/qp_modify/enable
	echo 1 >$t/tracing_on
}

stall_dump() {
	# A subshell without set -e: one failed read (a debugfs file the
	# kernel lacks) must not end the dump. Run through rsh.py, where
	# nothing catches the status, it did: a storm server's dump stopped
	# at the first missing file.
	(
		set +e
		for p in /proc/[0-9]*; do
			st=$(sed -n 's/^State:\s*\(.\).*/\1/p' $p/status 2>/dev/null)
			c=$(cat $p/comm 2>/dev/null)
			case "$st:$c" in
			D:* | *:nfsd | *:rpciod* | *:xprtiod*) echo "--- ${p#/proc/} $c ($st)"; cat $p/stack 2>/dev/null ;;
			esac
		done
		for t in /sys/kernel/debug/sunrpc/rpc_clnt/*/tasks; do echo "--- $t"; cat "$t"; done
		for x in /sys/kernel/debug/sunrpc/rpc_xprt/*/info; do echo "--- $x"; cat "$x"; done
		echo "--- mountstats (xprt: rdma port bind_count connect_count connect_time idle_time ...)"
		grep -E '^device|xprt:' /proc/self/mountstats
		echo "--- rdma resources"
		rdma resource show cm_id 2>&1 | head -n 20
		rdma resource show qp 2>&1 | head -n 20
		for s in recv read write sq_starve; do echo "rdma_stat_$s=$(stat_rdma $s)"; done
		send_path_leaks
		echo "--- modify_qp of soft-RoCE QPs (qp_modify_trace), the last ones"
		grep -E 'qp_modify:|<stack trace>|^ *=> ' /sys/kernel/tracing/trace 2>/dev/null | tail -n 900
		dmesg | tail -n 60
	) >"$1" 2>&1
}

# wait_or_dump PID SECONDS WHO: waits for PID at most SECONDS; if it is
# still running then, leaves a stall dump in /results and fails WHO.
wait_or_dump() {
	n=0
	while kill -0 "$1" 2>/dev/null && [ $n -lt "$2" ]; do
		sleep 1
		n=$((n + 1))
	done
	if kill -0 "$1" 2>/dev/null; then
		stall_dump "/results/stall-$3.txt"
		fail "$3: still running after $2 s; stall dump in stall-$3.txt"
		kill -9 "$1" 2>/dev/null
		return 1
	fi
	wait "$1"
}

# unload_rpcrdma SECONDS: rmmod rpcrdma, retried for up to SECONDS: after
# umount and nfsd stop the client's transports are destroyed asynchronously.
# Sets UNLOAD_WAIT to the seconds waited; fails (returns 1) after SECONDS.
unload_rpcrdma() {
	UNLOAD_WAIT=0
	until rmmod rpcrdma 2>/dev/null; do
		UNLOAD_WAIT=$((UNLOAD_WAIT + 1))
		[ $UNLOAD_WAIT -ge "$1" ] && return 1
		sleep 1
	done
}
