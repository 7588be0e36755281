#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# debian-check.sh [all|packages|vms] [HOSTILE_REPS]: our module on Debian's
# stock 7.3 kernel, the way a Debian server admin gets it, behind `make
# debian` and a phase of `make check`. In a Debian trixie system with Debian's kernel modules
# and headers (scripts/debian-env.sh; none of the module's toolchain):
#  1. The packages: `dpkg-buildpackage -us -uc` of debian/ (the native
#     source package, which dpkg-source -x gives back as it was, and the
#     .deb), then lintian on both: no error, and no warning that
#     debian/README.source does not list.
#  2. `apt install ./rpcrdma-rs-dkms_*.deb`: its Depends bring the toolchain
#     (rustc, bindgen, dkms, ...) and linux-source-7.3, and DKMS
#     builds for the installed kernel (regenerating what the headers lack,
#     scripts/prepare-kdir.sh) with no compiler warning and no panic path;
#     modprobe's choice (modinfo -n) is ours, signed with DKMS's key (its
#     appended signature verified against DKMS's certificate by openssl).
#  3. The refusals (scripts/toolchain-refusals.sh): wrong rustc, bindgen,
#     source version, missing CONFIG_RUST, rpcrdma built in, exports that
#     differ from Module.symvers.
#  4. Other kernels, package installs only: a point release replayed with
#     a re-versioned linux-source-7.3 (the archive's source moved on): the
#     headers of a kernel of the supported series (another flavour of the
#     same 7.3 release: the archive has one 7.3.x) skipped until their
#     source arrives, the package's upgrade N -> N+1 and roll back with
#     both kernels, the running release rebuilt in place (its headers
#     re-versioned: ours rebuilt by the package's hook) (details below);
#     those of a 7.2 kernel (trixie-backports) and of trixie's 6.12 are
#     skipped by dkms.conf's BUILD_EXCLUSIVE_*, the package's
#     header_postinst.d hook says why with a notice that also goes to the
#     system log, and apt succeeds. Then the package's autopkgtest
#     (debian/tests) on all four. Then another RDMA stack (4b): a stand-in
#     for MLNX_OFED's module package, an ib_core in updates/, installed
#     after ours takes ours out of the kernel (the package's trigger), DKMS
#     skips the kernel while it is there, and its removal puts ours back.
#     Then the other kernels' headers are purged: the cloud kernel (headers
#     only) goes whole, ours and its cached tree with it.
#  5. VMs booting Debian's unmodified vmlinuz: the modules tree as DKMS left
#     it, where plain `modprobe rpcrdma` loads ours and runs the e2e smoke
#     (NFSv3 and v4.1 checksummed copy, verifying fio); Debian's own
#     rpcrdma.ko through the same smoke as the baseline. The guests of ours
#     have the package's files outside the modules tree in place too (its
#     modprobe.d install command and loader, DKMS's archive of Debian's
#     rpcrdma.ko), and one boots with module.sig_enforce=1 (Secure Boot
#     with DKMS's key not enrolled): plain modprobe must fall back to
#     Debian's own, say so in the kernel log, and serve NFS over RDMA. Then in the
#     DMA-mapped mode (swiotlb=force; rxe, siw and the IB core of
#     scripts/debian-test-drivers.sh in updates/ of copies of both trees):
#     NFS WRITEs in Read chunks over rxe and siw, each byte verified, ours
#     and Debian's side by side (tests/vm/guest/read-sink.sh: Debian's must
#     show the Read-sink bug while its source lacks the fix, ours never);
#     ours through the hostile-client suite over rxe and siw, and through
#     teardown with Sends in flight over rxe and siw. With COMPARE=1 (the
#     default of `make debian`; `make check` leaves it out, it asserts
#     nothing) Debian's own runs the hostile suite too.
#  6. `apt remove`: Debian's own rpcrdma.ko is in force again; a reinstall
#     builds and installs ours again; `apt remove --purge` leaves nothing
#     of the package. The next run's start autoremoves what it brought, so
#     that each run proves the Depends again.
#  7. The Depends alone: the package installed into a minimal trixie root
#     with only the kernel's headers (debian-env.sh minroot); apt must
#     bring all DKMS's build needs (minimal_root_install, below).
# all (the default): steps 3, 4, 6 and 7 run niced while the VMs of step 5
# (single-threaded TCG, on a copy of the modules tree) run in the
# background. packages: every step but 5, leaving the copies of the
# modules trees; vms: step 5 alone, on the copies a "packages" run left.
# make check runs "packages" at idle priority beside its VM phases, whose
# guests leave much of the second core idle, and "vms" at its end.
# Prints PASS:/FAIL: lines; exits non-zero on any failure.

. "$(dirname "$0")/lib.sh"

MODE=all
case ${1:-} in all | packages | vms | minroot) MODE=$1; shift ;; esac
REPS=${1:-3}
FAILS=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
# replay FILE: the output of VMs run in a subshell, shown, its FAIL lines
# counted here.
replay() {
	local line
	while IFS= read -r line; do
		echo "$line"
		case $line in FAIL:*) FAILS=$((FAILS + 1)) ;; esac
	done <"$1"
}

R=$(bash "$TOP/scripts/debian-env.sh" env) || die "Debian build environment"
K=$(bash "$TOP/scripts/debian-env.sh" kernel) || die "Debian kernel"
KREL=$(cat "$K/release")
# The Debian version of the kernel's packages (the environment's headers).
KVERSION_DEB=$(awk -v p="linux-headers-$KREL" '$1 == p { print $2 }' "$R/.versions")
[ -n "$KVERSION_DEB" ] || die "no linux-headers-$KREL in $R/.versions"
export DEBIAN_ENV=$R
# NICE: set while the VMs run, so that the builds take the other core.
NICE=
chr() { $NICE bash "$TOP/scripts/debian-env.sh" chroot "$@"; }
PKG=rpcrdma-rs-dkms
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$TOP/dkms.conf")
debver=$(sed -n '1s/^[^ ]* (\([^)]*\)).*/\1/p' "$TOP/debian/changelog")
DEB=/var/tmp/rpcrdma-rs/${PKG}_${debver}_all.deb
MOD=rpcrdma-rs/$ver
# What the package's Depends and Recommends must bring (debian/control).
TOOLCHAIN="dkms rustc rust-src bindgen libclang-dev linux-source-$KVER_PKG"
# The admin's apt; downloaded packages are kept, so that later runs
# reinstall the toolchain from the environment's own cache.
APT="apt -o APT::Keep-Downloaded-Packages=true -y"
TIMES=()
t_mark=$SECONDS
lap() { TIMES+=("$1 $((SECONDS - t_mark))s"); t_mark=$SECONDS; }
# step NAME CMD...: CMD in the environment, output in $LOGS/debian-NAME.log;
# returns its exit status.
step() {
	local name=$1
	shift
	chr "$@" >"$LOGS/debian-$name.log" 2>&1
}
installed() { chr dpkg-query -W -f '${Package} ${Status}\n' "$@" 2>/dev/null | grep -c ' install ok installed$' || true; }
modfile() { chr modinfo -k "$1" -n rpcrdma 2>/dev/null || true; }
STOCK_KO=kernel/net/sunrpc/xprtrdma/rpcrdma.ko

# The headers the environment did not start with (step 4's), for removal.
extra_headers() {
	chr dpkg-query -W -f '${Package} ${Status}\n' 'linux-headers-*' 2>/dev/null |
		sed -n 's/ install ok installed$//p' |
		grep -vx -e "linux-headers-$KREL" -e "linux-headers-${KREL%-*}-common" || true
}
# restore_headers: the running release's headers as the environment had
# them (step 4's rebuild in place leaves them re-versioned), with the
# package gone, so that nothing is built.
restore_headers() {
	local have
	have=$(chr dpkg-query -W -f='${Version}' "linux-headers-$KREL" 2>/dev/null || true)
	[ -z "$have" ] || [ "$have" = "$KVERSION_DEB" ] ||
		step headers-restore $APT install --allow-downgrades "/var/cache/apt/archives/linux-headers-${KREL}_${KVERSION_DEB}_amd64.deb" ||
		fail "cannot put linux-headers-$KREL $KVERSION_DEB back ($LOGS/debian-headers-restore.log)"
}
# Back to the environment as debian-env.sh made it (a run leaves the
# toolchain the package brought; a cold one has nothing to remove): no
# package, no extra headers, none of what they brought.
to_baseline() {
	# dpkg, not apt: after a purge apt no longer knows the local package;
	# then whatever an interrupted run left unconfigured. sudo (dkms
	# recommends it) refuses removal unless told.
	# The extra headers are listed once that is done: an interrupted run
	# can leave some half-configured, which only --configure -a completes.
	rm -f "$R/usr/sbin/logger"
	step baseline sh -c "dpkg --purge $PKG mlnx-ofed-kernel-modules && dpkg --configure -a" && restore_headers &&
		step baseline-headers sh -c "apt-get purge -y $(extra_headers | paste -sd' ') &&
			SUDO_FORCE_REMOVE=yes apt-get autoremove --purge -y"
}

# 5. (defined here, run below or on its own) Debian's kernel in VMs:
# its modules tree as the package installs it (stock), and the
# environment's as DKMS left it (its depmod, and Debian's own rpcrdma.ko
# moved aside into /var/lib/dkms while ours is installed), both copies made
# after step 2.
T=$CACHE/debian/trees
declare -A RUN
# Single-threaded TCG: Debian's kernel flips static keys (int3 text patching)
# while other CPUs run, and QEMU 7.2's multi-threaded TCG then lets a CPU
# trap on an int3 already gone ("Oops: int3" in sched_clock_cpu at boot,
# once in about seven boots here). One host thread runs the vCPUs in turn.
# VM_EXTRA: more vm-run.sh options (the DMA-mapped runs' boot parameters).
vm() { # FLAVOUR TREE NAME SCRIPT ARGS...
	local flavour=$1 tree=$2 name=$3 rc=0
	shift 3
	# shellcheck disable=SC2086 # VM_EXTRA is a list of options
	local pkg=()
	# A tree of ours carries the package's files outside the modules tree
	# (package_files): the guest puts them in place (lib.sh).
	[ -d "$T/$tree/.pkg" ] && pkg=(-e rs_pkgroot=/lib/modules/.pkg)
	RUN[$name]=$(bash "$TOP/scripts/vm-run.sh" -t 900 -n "$name" -A tcg,thread=single \
		-K "$K/vmlinuz" -I "$K/initrd.img" -d "$T/$tree" -e rs_load=modprobe "${pkg[@]}" ${VM_EXTRA:-} "$@") || rc=$?
	return $rc
}
# package_files TREE: what the package and DKMS installed outside the
# modules tree, copied from the Debian system into TREE/.pkg, for the
# guests that stand for a server with the package installed: the
# modprobe.d file with rpcrdma's install command, the loader it names,
# DKMS's certificate, and DKMS's archive of the kernel's own rpcrdma.ko.
package_files() {
	local f
	rm -rf "$T/$1/.pkg"
	for f in usr/lib/modprobe.d/rpcrdma-rs-dkms.conf usr/libexec/rpcrdma-rs-dkms/rpcrdma-rs-load \
		var/lib/dkms/mok.pub "var/lib/dkms/rpcrdma-rs/original_module/$KREL"; do
		[ -e "$R/$f" ] || { fail "the package left no /$f"; continue; }
		mkdir -p "$T/$1/.pkg/$(dirname "$f")"
		cp -a "$R/$f" "$T/$1/.pkg/$f"
	done
}
# secure_boot_vm: Debian's kernel enforcing module signatures
# (module.sig_enforce=1, as Secure Boot's lockdown does) and not trusting
# DKMS's key, the package installed: plain modprobe must load Debian's own
# rpcrdma.ko through the package's loader, and NFS over RDMA must work.
secure_boot_vm() {
	local rc=0
	VM_EXTRA="-e module.sig_enforce=1" vm fallback ours debian-secureboot smoke fallback 8 0 3 4.1 || rc=$?
	smoke_checked "$rc" debian-secureboot "Debian Secure Boot, DKMS's key not enrolled"
}
# smoke_checked RC NAME LABEL: the smoke VM run NAME, which exited RC: its
# guest's lines relayed under LABEL, its status, and bytes verified over
# NFSv3 and NFSv4.1.
smoke_checked() {
	local rc=$1 run=${RUN[$2]} v
	relay_guest_log "$3: " "$run"
	[ "$rc" = 0 ] || fail "$3 VM: status $rc ($run)"
	for v in v3 v41; do
		grep -qE "^${v}_bytes_verified=[1-9]" "$run/summary" 2>/dev/null ||
			fail "$3: no verified bytes for $v ($run)"
	done
}
# Debian's kernel in the DMA-mapped mode: every mapping bounced by swiotlb
# (its slots in use counted exactly: track_hiwater), the test drivers
# (scripts/debian-test-drivers.sh, in the -dma trees) registering their
# NIC's PCI function as DMA device; no DMA-API debugging in this kernel.
DMA_BOOT=-D
# read_sink_vm FLAVOUR: NFS WRITEs in Read chunks over rxe and siw, each
# byte compared with what knfsd wrote (tests/vm/guest/read-sink.sh).
read_sink_vm() {
	local f=$1 tree rc=0 run
	tree=$([ "$f" = rust ] && echo ours-dma || echo stock-dma)
	VM_EXTRA=$DMA_BOOT vm "$f" "$tree" "debian-readsink-$f" read-sink "$f@rxe" "$f@siw" || rc=$?
	run=${RUN[debian-readsink-$f]}
	relay_guest_log "Debian $f DMA-mapped: " "$run"
	[ "$rc" = 0 ] || fail "Debian $f DMA-mapped read-sink VM: status $rc ($run)"
}
# vms_of FLAVOUR...: the smoke (and the hostile suite) of each, in turn.
vms_of() {
	for f in "$@"; do
		tree=$([ $f = rust ] && echo ours || echo stock)
		rc=0
		vm $f $tree "debian-smoke-$f" smoke $f 8 10 3 4.1 || rc=$?
		smoke_checked "$rc" "debian-smoke-$f" "Debian $f e2e"
		read_sink_vm $f
		[ $f = rust ] && secure_boot_vm
		[ $f = rust ] || [ "${COMPARE:-1}" = 1 ] || continue
		# The hostile suite DMA-mapped, over rxe (REPS times) and then
		# siw (once per class), as on the test kernels.
		rc=0
		VM_EXTRA=$DMA_BOOT vm $f $tree-dma "debian-hostile-$f" hostile $f "$REPS" siw || rc=$?
		run=${RUN[debian-hostile-$f]}
		if [ $f = rust ]; then
			relay_guest_log "Debian rust hostile DMA-mapped: " "$run"
			[ "$rc" = 0 ] || fail "Debian rust hostile VM: status $rc ($run)"
			for file in hostile.txt hostile-siw.txt; do
				n=$(grep -c '^class=' "$run/$file" 2>/dev/null || true)
				[ "${n:-0}" -ge 20 ] || fail "Debian rust hostile: only ${n:-0} classes ran ($run/$file)"
			done
		fi
	done
}
# teardown_vms: ours, DMA-mapped, knfsd stopped 5 times under a verifying
# load over rxe and over siw: transports freed with Sends in flight, every
# mapping undone after (as the test kernels' teardown phase). Whether a
# stop catches a Send in flight is timing: a run that caught none is
# repeated once before it fails.
teardown_vms() {
	local fab attempt rc run flushed
	for fab in rxe siw; do
		for attempt in 1 2; do
			rc=0
			VM_EXTRA="$DMA_BOOT -e rs_fabric=$fab" vm rust ours-dma "debian-teardown-$fab" teardown rust 5 || rc=$?
			run=${RUN[debian-teardown-$fab]}
			flushed=$(sed -n 's/^teardown_trace_svcrdma_wc_send_flush=//p' "$run/summary" 2>/dev/null)
			[ "$rc" = 0 ] && [ "${flushed:-0}" = 0 ] && [ $attempt = 1 ] &&
				echo "    Debian teardown over $fab: no Send was in flight at any stop; running again" && continue
			# The orphaned connect request of svc_rdma_transport.c (the
			# C listener's teardown, both flavours; testing.rst), as
			# check.sh's teardown runs it: shown, and run once more.
			if [ "$rc" != 0 ] && [ $attempt = 1 ] &&
				grep -qE '^teardown_orphaned_connect_requests=[0-9]' "$run/summary" 2>/dev/null; then
				echo "    Debian teardown over $fab: stalled on an orphaned connect request (svc_rdma_transport.c; $run/stall-teardown.txt); running again"
				continue
			fi
			break
		done
		relay_guest_log "Debian rust teardown DMA-mapped over $fab: " "$run"
		[ "$rc" = 0 ] || fail "Debian rust teardown over $fab: VM status $rc ($run)"
		if [ "${flushed:-0}" -gt 0 ]; then
			pass "Debian rust teardown DMA-mapped over $fab: $flushed Send completions flushed by teardown, handled"
		else
			fail "Debian rust teardown over $fab: no flushed Send completion, the teardown did not catch Sends in flight ($run)"
		fi
	done
}
# vms [parallel]: both flavours, in turn or (single-threaded VMs, one per
# core) at once; then Debian's own and ours side by side.
vms() {
	if [ "${1:-}" = parallel ]; then
		(
			vms_of stock
			teardown_vms
			for k in "${!RUN[@]}"; do echo "$k ${RUN[$k]}"; done >"$LOGS/debian-vms-stock.runs"
		) >"$LOGS/debian-vms-stock.out" 2>&1 &
		local stock=$!
		vms_of rust
		wait $stock || true
		replay "$LOGS/debian-vms-stock.out"
		local k d
		while read -r k d; do RUN[$k]=$d; done <"$LOGS/debian-vms-stock.runs"
	else
		vms_of rust stock
		teardown_vms
	fi

	# Side by side: Debian's own module and ours on Debian's kernel.
	get() { sed -n "s/^$2=//p" "${RUN[$1]}/summary" 2>/dev/null | head -n 1 || true; }
	echo "    Debian $KREL: Debian's rpcrdma.ko (stock) and ours (rust), same kernel, same workload"
	printf '    %-34s %-36s %-36s\n' "" "stock (Debian's)" "rust (ours)"
	for key in module_file module_version kernel_taint v3_bytes_verified v41_bytes_verified \
		v3_write_MiBps v3_read_MiBps v41_write_MiBps v41_read_MiBps fio_read_KiB fio_write_KiB \
		v3_trace_svcrdma_post_send v41_trace_svcrdma_post_send; do
		printf '    %-34s %-36s %-36s\n' "$key" "$(get debian-smoke-stock $key)" "$(get debian-smoke-rust $key)"
	done
	read_sink_judge
	[ "${COMPARE:-1}" = 1 ] || return 0
	printf '    %-34s %-36s %-36s\n' "hostile classes as expected" \
		"$(get debian-hostile-stock hostile_classes_ok)" "$(get debian-hostile-rust hostile_classes_ok)"
	echo "    hostile classes x $REPS (ours asserted; Debian's own for comparison, not asserted):"
	printf '    %-30s %-16s %-22s %-22s\n' class expected "rust (ours)" "stock (Debian's)"
	hostile_table "${RUN[debian-hostile-rust]}" "${RUN[debian-hostile-stock]}" "$LOGS/debian-hostile-table.txt"
}
# read_sink_judge: Debian's own module and ours, DMA-mapped, side by side.
# Ours must write every byte right. Debian's must not while its source
# lacks the fix (an expected failure, reproducing the bug on a stock
# kernel); once Debian's source has it (our build then says "in the kernel
# source already"), Debian's must write every byte right too, and the
# check says the bug is fixed there.
read_sink_judge() {
	local f fab key n fixed
	echo "    Debian $KREL, DMA-mapped (swiotlb=force, test drivers): NFS WRITEs in Read chunks, each byte compared"
	printf '    %-26s %-26s %-26s %-26s %-26s\n' "" "stock (Debian's) rxe" "stock (Debian's) siw" "rust (ours) rxe" "rust (ours) siw"
	for key in fixes writes read_chunks chunk_bytes chunk_bytes_wrong chunk_files_wrong inline_bytes_wrong counter_reads swiotlb; do
		printf '    %-26s' "$key"
		for f in stock rust; do
			for fab in rxe siw; do
				if [ $key = swiotlb ]; then
					n="$(get debian-readsink-$f swiotlb_slots_start)->$(get debian-readsink-$f swiotlb_slots_end) max $(get debian-readsink-$f swiotlb_used_hiwater)"
				else
					n=$(get debian-readsink-$f "rs_${f}_${fab}_$key" | short_fixes | short_counter_reads $key)
				fi
				printf ' %-26s' "${n:--}"
			done
		done
		echo
	done
	fixed=$(get debian-readsink-rust rs_rust_rxe_fixes)
	local fix verdict what
	for fab in rxe siw; do
		# Each module fix's bug: 0001 the Read-chunk writes, 0002 the
		# rdma_stat_* counters.
		for fix in "0001 read_sink_verdict Read-sink" "0002 counter_verdict counter"; do
			read -r n verdict what <<<"$fix"
			if [[ $fixed =~ $n-[^\ ]*\ \(in\ the\ kernel\ source\ already ]]; then
				$verdict "${RUN[debian-readsink-stock]}" "stock_$fab" right \
					"Debian stock DMA-mapped over $fab (Debian's source has the $what fix: fixed upstream or by Debian, no longer a reproduction)"
			else
				$verdict "${RUN[debian-readsink-stock]}" "stock_$fab" wrong \
					"Debian stock (Debian's own rpcrdma.ko) DMA-mapped over $fab, as expected"
			fi
			$verdict "${RUN[debian-readsink-rust]}" "rust_$fab" right \
				"Debian rust (ours, as apt installed it) DMA-mapped over $fab"
		done
	done
}
# 7. The Depends alone: the package installed into a copy of a minimal
# trixie server (debian-env.sh minroot: minbase, trixie-backports in its
# sources, the kernel's headers as apt installs them, nothing else), where
# apt must bring everything DKMS's build for the release needs (the
# environment of the steps above has the packaging tools too, and with
# them a compiler, make, perl, python3...). The packages the environment
# downloaded are offered to apt first. Run by "packages" and "all" last,
# and on its own by "minroot" (on the .deb a "packages" run built).
minimal_root_install() {
	local base m=$CACHE/debian/minroot-run rc=0 t0=$SECONDS n0 n1 ko v
	base=$(bash "$TOP/scripts/debian-env.sh" minroot) ||
		{ fail "Debian minimal root: cannot make it ($LOGS/debian-minroot-*.log)"; return; }
	rm -rf "$m"
	cp -a "$base" "$m"
	cp -l "$R"/var/cache/apt/archives/*.deb "$m/var/cache/apt/archives/" 2>/dev/null || true
	mkdir -p "$m/var/tmp/rpcrdma-rs"
	cp "$R$DEB" "$m/var/tmp/rpcrdma-rs/"
	mchr() { DEBIAN_ENV=$m $NICE bash "$TOP/scripts/debian-env.sh" chroot "$@"; }
	n0=$(mchr dpkg-query -W -f '${Package}\n' | wc -l)
	say "debian: apt install ./$(basename "$DEB") into a minimal trixie root with only the headers ($n0 packages)"
	(progress_logged debian-minroot-install mchr sh -c "cd /var/tmp/rpcrdma-rs && $APT install ./$(basename "$DEB")") || rc=$?
	n1=$(mchr dpkg-query -W -f '${Package}\n' | wc -l)
	ko=$(ls "$m/lib/modules/$KREL/updates/dkms/"rpcrdma.ko* 2>/dev/null | head -n 1)
	v=$(mchr sh -c "modinfo -F version /lib/modules/$KREL/updates/dkms/rpcrdma.ko*" 2>/dev/null || true)
	if [ "$rc" = 0 ] && [ -n "$ko" ] && [ "$v" = "$KREL-rs.v$ver-rust" ] &&
		mchr dkms status "$MOD" -k "$KREL" 2>/dev/null | grep -q ': installed'; then
		pass "minimal trixie root with only linux-headers-$KREL ($n0 packages): apt install ./$(basename "$DEB") exit 0, its Depends brought $((n1 - n0)) packages, and DKMS built and installed ours ($v) in $((SECONDS - t0)) s"
	else
		grep -E "Error|error|Unable|unmet|not found" "$LOGS/debian-minroot-install.log" | tail -n 10 | sed 's/^/    /'
		cp "$m/var/cache/rpcrdma-rs/logs/"*.log "$LOGS/" 2>/dev/null || true
		fail "minimal trixie root: apt install ./$(basename "$DEB") exit $rc, module '${ko:-none}' version '$v' ($LOGS/debian-minroot-install.log)"
	fi
	rm -rf "$m"
}
if [ "$MODE" = minroot ]; then
	[ -f "$R$DEB" ] || die "no $R$DEB: run 'debian-check.sh packages' first"
	minimal_root_install
	[ "$FAILS" = 0 ]
	exit
fi
if [ "$MODE" = vms ]; then
	[ -f "$T/complete" ] && [ -d "$T/ours/$KREL" ] ||
		die "no modules trees of a finished 'debian-check.sh packages' run in $T"
	say "debian: Debian's $KREL in VMs: ours (e2e smoke, hostile suite x $REPS) and, at the same time, Debian's own (e2e smoke)"
	vms parallel
	[ "$FAILS" = 0 ]
	exit
fi

# 1. The package, built with Debian's tools from a copy of this tree.
say "debian: dpkg-buildpackage and lintian ($PKG $debver)"
rm -rf "$R/root/pkg" "$R/var/tmp/rpcrdma-rs"
mkdir -p "$R/root/pkg/rpcrdma-rs" "$R/var/tmp/rpcrdma-rs"
git -C "$TOP" ls-files -z --cached --others --exclude-standard |
	(cd "$TOP" && xargs -0 tar cf - 2>/dev/null) | tar xf - -C "$R/root/pkg/rpcrdma-rs"
# The source package too (native: debian/ is upstream's): dpkg-source -b,
# then the .dsc unpacked anew must hold the same files (but git's
# .gitignore files, which dpkg-source leaves out).
DSC=/root/pkg/rpcrdma-rs_${debver}.dsc
if step dpkg-buildpackage sh -c 'cd /root/pkg/rpcrdma-rs && dpkg-buildpackage -us -uc' &&
	cp "$R/root/pkg/${PKG}_${debver}_all.deb" "$R$DEB" &&
	step dpkg-source-x sh -c "cd /root/pkg/rpcrdma-rs && debian/rules clean && cd .. && rm -rf x && dpkg-source -x $DSC x && diff -r -x .gitignore x rpcrdma-rs && rm -rf x"; then
	pass "dpkg-buildpackage -us -uc: $(basename "$DSC") ($(cat "$R/root/pkg/rpcrdma-rs_${debver}.tar."* | wc -c) bytes of source, unpacking to the same tree) and $(basename "$DEB") ($(stat -c %s "$R$DEB") bytes; Depends: $(dpkg-deb -f "$R$DEB" Depends))"
else
	tail -n 15 "$LOGS/debian-dpkg-buildpackage.log" | sed 's/^/    /'
	fail "dpkg-buildpackage ($LOGS/debian-dpkg-buildpackage.log)"
	exit 1
fi
rc=0
chr lintian "$DSC" "$DEB" >"$LOGS/debian-lintian.log" 2>&1 || rc=$?
sed -n 's/^\([EWI]\): /    lintian \1: /p' "$LOGS/debian-lintian.log"
known=$(sed -n 's/^\* ``\([a-z0-9-]*\)``: .*/\1/p' "$TOP/debian/README.source")
errors=$(grep -c '^E: ' "$LOGS/debian-lintian.log" || true)
unknown=$(sed -n 's/^W: [^:]*: \([a-z0-9-]*\).*/\1/p' "$LOGS/debian-lintian.log" | grep -vxF "$known" || true)
# lintian exits 2 when it reports an error, 1 when it could not check.
if [ "$rc" != 0 ] && [ "$rc" != 2 ]; then
	tail -n 5 "$LOGS/debian-lintian.log" | sed 's/^/    /'
	fail "lintian did not run (exit $rc, $LOGS/debian-lintian.log)"
elif [ "$errors" = 0 ] && [ -z "$unknown" ]; then
	pass "lintian $(chr dpkg-query -W -f '${Version}' lintian) on the source and binary packages: no error; $(grep -c '^W: ' "$LOGS/debian-lintian.log" || true) warnings, each listed with its reason in debian/README.source"
else
	fail "lintian: $errors errors, warnings not in debian/README.source: $(echo $unknown) ($LOGS/debian-lintian.log)"
fi
# Reproducible: the .deb built again from another directory, under another
# umask and at another time, must be the same bytes (dh clamps mtimes to
# the changelog's date; nothing is compiled).
rc=0
step dpkg-buildpackage-again sh -c "rm -rf /root/pkg-again && mkdir -p /root/pkg-again &&
	cp -a /root/pkg/rpcrdma-rs /root/pkg-again/rpcrdma-rs-copy && cd /root/pkg-again/rpcrdma-rs-copy &&
	umask 0002 && dpkg-buildpackage -us -uc -b" || rc=$?
a=$(sha256sum <"$R$DEB" | cut -c1-16)
b=$(sha256sum <"$R/root/pkg-again/${PKG}_${debver}_all.deb" 2>/dev/null | cut -c1-16)
if [ "$rc" = 0 ] && [ "$a" = "$b" ]; then
	pass "reproducible: the .deb built again (another directory, umask 0002, $(date +%T)) is the same bytes (sha256 $a...)"
else
	fail "not reproducible: the .deb built again (exit $rc) has sha256 ${b:-none}..., the first $a... ($LOGS/debian-dpkg-buildpackage-again.log)"
fi
rm -rf "$R/root/pkg-again"
lap build+lintian

# 2. apt install ./rpcrdma-rs-dkms_*.deb, from the environment as made.
if ! to_baseline; then
	tail -n 10 "$LOGS/debian-baseline.log" "$LOGS/debian-baseline-headers.log" 2>/dev/null | sed 's/^/    /'
	fail "cannot return the environment $R to its baseline ($LOGS/debian-baseline.log, $LOGS/debian-baseline-headers.log)"
	exit 1
fi
# shellcheck disable=SC2086
if [ "$(installed $TOOLCHAIN)" != 0 ]; then
	fail "the environment $R already has some of $TOOLCHAIN before the package is installed (delete it, scripts/debian-env.sh makes it anew)"
	exit 1
fi
lap baseline
say "debian: apt install ./$(basename "$DEB") (its Depends, linux-source-$KVER_PKG, DKMS build for $KREL)"
rc=0
(progress_logged debian-apt-install-pkg chr sh -c "cd ${DEB%/*} && $APT install ./$(basename "$DEB")") || rc=$?
lap install
# shellcheck disable=SC2086
n=$(installed $TOOLCHAIN)
if [ "$rc" = 0 ] && [ "$n" = "$(wc -w <<<"$TOOLCHAIN")" ]; then
	pass "apt install ./$(basename "$DEB"): exit 0; Depends and Recommends brought $(chr dpkg-query -W -f '${Package} ${Version}, ' $TOOLCHAIN | sed 's/, $//')"
else
	tail -n 20 "$LOGS/debian-apt-install-pkg.log" | sed 's/^/    /'
	fail "apt install ./$(basename "$DEB"): exit $rc, $n of the $(wc -w <<<"$TOOLCHAIN") packages $TOOLCHAIN installed ($LOGS/debian-apt-install-pkg.log)"
fi
# The build's own logs: make's summary (DKMS) and the compilers' output.
cp "$R/var/cache/rpcrdma-rs/logs/module-rust.log" "$LOGS/debian-module-build.log" 2>/dev/null || true
grep -E "^Building for|^Autoinstall|^Signing|^Installing|Error|rpcrdma.ko \(rust\): toolchain" "$LOGS/debian-apt-install-pkg.log" | sed 's/^/    /' || true
if chr dkms status "$MOD" -k "$KREL" 2>/dev/null | grep -q ': installed'; then
	pass "DKMS: $(chr dkms status "$MOD" -k "$KREL" 2>/dev/null | head -n 1), built by the package's postinst"
else
	fail "DKMS: $MOD is not installed for $KREL ($LOGS/debian-apt-install-pkg.log)"
fi
ko=$(modfile "$KREL")
if [[ $ko == "/lib/modules/$KREL/updates/dkms/rpcrdma.ko"* ]]; then
	pass "Debian $KREL: modinfo -n rpcrdma is ours, $ko"
else
	fail "Debian $KREL: modinfo -n rpcrdma is '$ko', not updates/dkms/rpcrdma.ko"
	exit 1
fi
# No warning from the compilers (rustc, gcc, modpost) in the KUnit-off build.
if ! grep -q 'RUSTC \[M\]' "$LOGS/debian-module-build.log" 2>/dev/null; then
	fail "Debian build: the build log has no compiler lines ($LOGS/debian-module-build.log)"
elif grep -E '(^|[: ])(warning|WARNING)[:[]' "$LOGS/debian-module-build.log" >"$LOGS/debian-dkms-warnings.txt"; then
	head -n 10 "$LOGS/debian-dkms-warnings.txt" | sed 's/^/    /'
	fail "Debian build printed $(wc -l <"$LOGS/debian-dkms-warnings.txt") warnings ($LOGS/debian-module-build.log)"
else
	pass "Debian build: no compiler or modpost warning (KUnit off, overflow checks on)"
fi
# No panic path: Debian's kernel has CONFIG_RUST_OVERFLOW_CHECKS=y, so any
# arithmetic, index or conversion that can fail would import a core panic
# function, and a panic is BUG() on the server.
# DKMS compresses the module as the kernel's own are (.ko.xz).
case $ko in *.xz) xz -dc "$R$ko" ;; *) cat "$R$ko" ;; esac >"$LOGS/debian-rpcrdma.ko"
panics=$(nm -u "$LOGS/debian-rpcrdma.ko" 2>/dev/null | grep -E ' U _R.*(4core9panicking|panic|unwrap_failed|expect_failed)' || true)
if [ -z "$panics" ] && nm -u "$LOGS/debian-rpcrdma.ko" >/dev/null 2>&1; then
	pass "Debian build: the module imports no core panic function (overflow checks on, KUnit off)"
else
	echo "$panics" | sed 's/^/    /'
	fail "Debian build: the module has panic paths ($(echo "$panics" | grep -c .) core panic imports)"
fi
# modinfo_ok KREL FILE: our version string, the kernel's vermagic, and a
# signature by DKMS's own key (sign-file names the certificate by its
# issuer and serial number: modinfo's sig_key is that serial).
modinfo_ok() {
	local k=$1 f=$2 v vm signer key ski
	v=$(chr modinfo -F version "$f")
	vm=$(chr modinfo -F vermagic "$f")
	signer=$(chr modinfo -F signer "$f")
	key=$(chr modinfo -F sig_key "$f" | tr -d ':' | tr 'A-F' 'a-f')
	ski=$(chr openssl x509 -inform DER -in /var/lib/dkms/mok.pub -noout -serial 2>/dev/null |
		sed -n 's/^serial=//p' | tr 'A-F' 'a-f')
	if [[ $v == "$k-rs.v$ver-rust" ]] && [[ $vm == "$k "* ]]; then
		pass "$k: modinfo version $v, vermagic '$vm'"
	else
		fail "$k: modinfo version '$v' (want $k-rs.v$ver-rust), vermagic '$vm' ($f)"
	fi
	if [ -n "$key" ] && [ "$key" = "$ski" ]; then
		pass "$k: signed by DKMS's key (signer '$signer', serial $key of /var/lib/dkms/mok.pub)"
	else
		fail "$k: signer '$signer', sig_key '$key', but DKMS's certificate /var/lib/dkms/mok.pub has serial '$ski' ($f)"
	fi
	local out
	if out=$(sig_verifies "$R$f" "$R/var/lib/dkms/mok.pub" 2>&1); then
		pass "$k: the module's signature verifies against DKMS's certificate (openssl cms -verify: the kernel's check once the key is enrolled)"
	else
		fail "$k: the module's signature does not verify against DKMS's certificate: $(tail -n 1 <<<"$out")"
	fi
}
# sig_verifies MODULE CERT: the PKCS#7 signature appended to MODULE (as
# scripts/sign-file appends it: the signature, a 12-byte trailer ending
# with its big-endian length, the magic string) verifies over the rest of
# the module with CERT (DER) as the trust anchor.
sig_verifies() {
	local tmp rc=0
	tmp=$(mktemp -d)
	python3 - "$1" "$tmp" <<'PY' &&
import lzma, struct, sys
data = open(sys.argv[1], "rb").read()
if sys.argv[1].endswith(".xz"):
    data = lzma.decompress(data)
magic = b"~Module signature appended~\n"
if not data.endswith(magic):
    sys.exit("no appended signature")
end = len(data) - len(magic) - 12
sig_len = struct.unpack(">I", data[end + 8:end + 12])[0]
open(sys.argv[2] + "/sig", "wb").write(data[end - sig_len:end])
open(sys.argv[2] + "/content", "wb").write(data[:end - sig_len])
PY
		openssl x509 -inform DER -in "$2" -out "$tmp/cert.pem" &&
		openssl cms -verify -binary -inform DER -in "$tmp/sig" -content "$tmp/content" \
			-certfile "$tmp/cert.pem" -CAfile "$tmp/cert.pem" -purpose any -out /dev/null || rc=$?
	rm -rf "$tmp"
	return $rc
}
modinfo_ok "$KREL" "$ko"
# The module fixes (scripts/module-patches/): each one applied to the
# build's copy of Debian's C, or found there already; named in modinfo.
fixes=$(chr modinfo -F fixes "$ko" 2>/dev/null || true)
missing=
for f in $(module_patches); do
	n=$(basename "$f" .patch)
	grep -qE "^$n: (applied|in the kernel source already, skipped);" <<<"$fixes" || missing="$missing $n"
done
if [ -n "$fixes" ] && [ -z "$missing" ]; then
	pass "$KREL: modinfo -F fixes: $(sed 's/;.*//' <<<"$fixes" | paste -sd' ' -)"
else
	fail "$KREL: the module lacks the fixes$missing (modinfo -F fixes: '${fixes:-none}')"
fi
# DKMS moved Debian's own rpcrdma.ko out of the kernel's tree (it keeps it
# in its original_module/ and puts it back on removal): dpkg --verify of the
# kernel's modules package reports exactly that file missing, nothing else.
verify=$(chr dpkg --verify "linux-modules-$KREL" 2>&1 || true)
if [ "$(grep -c . <<<"$verify")" = 1 ] && grep -qE "^missing .*/kernel/net/sunrpc/xprtrdma/rpcrdma\.ko" <<<"$verify" &&
	[ -n "$(ls "$R/var/lib/dkms/rpcrdma-rs/original_module/$KREL"/*/rpcrdma.ko* 2>/dev/null)" ]; then
	pass "dpkg --verify linux-modules-$KREL while ours is installed: only Debian's rpcrdma.ko missing, which DKMS keeps in /var/lib/dkms/rpcrdma-rs/original_module/$KREL/"
else
	fail "dpkg --verify linux-modules-$KREL while ours is installed: $(head -n 3 <<<"$verify" | tr '\n' ' ')"
fi
lap checks

# trees_for_vms: the copies of the modules trees the VMs of step 5 boot
# with (see above). In "all", taken here, and the VMs run in the
# background while steps 3, 4 and 6 run (they are single-threaded TCG:
# they leave the other core to the builds, which run niced). In
# "packages" (make check), taken after step 4's point release, package
# upgrade, rebuild in place and roll back, so that the VMs boot the module
# those left.
trees_for_vms() {
	rm -rf "$T"
	mkdir -p "$T/stock" "$T/ours" "$T/stock.base/lib"
	cp -al "$K/root/usr/lib/modules/$KREL" "$T/stock/$KREL"
	cp -al "$R/usr/lib/modules/$KREL" "$T/ours/$KREL"
	package_files ours
	ln -s "$T/stock" "$T/stock.base/lib/modules"
	depmod -b "$T/stock.base" "$KREL"
	# The same two with the test drivers (dma_mapped) in updates/, where
	# modprobe prefers them to Debian's, for the DMA-mapped runs.
	if TD=$($NICE bash "$TOP/scripts/debian-test-drivers.sh" 2>"$LOGS/debian-test-drivers.out"); then
		for t in stock ours; do
			mkdir -p "$T/$t-dma" "$T/$t-dma.base/lib"
			cp -al "$T/$t/$KREL" "$T/$t-dma/$KREL"
			rm -f "$T/$t-dma/$KREL"/modules.*
			cp "$T/$t/$KREL"/modules.* "$T/$t-dma/$KREL/"
			mkdir -p "$T/$t-dma/$KREL/updates/rpcrdma-rs-test"
			cp "$TD/rdma_rxe.ko" "$TD/siw.ko" "$TD"/core/*.ko "$T/$t-dma/$KREL/updates/rpcrdma-rs-test/"
			[ $t = stock ] || package_files $t-dma
			ln -s "$T/$t-dma" "$T/$t-dma.base/lib/modules"
			depmod -b "$T/$t-dma.base" "$KREL"
		done
		pass "Debian test drivers: rdma_rxe.ko and siw.ko with dma_mapped, and the IB core with its user-MR change of the mode ($(ls "$TD/core" | wc -l) modules), built out of tree for $KREL with Debian's gcc and headers ($TD)"
	else
		tail -n 5 "$LOGS/debian-test-drivers.out" | sed 's/^/    /'
		fail "Debian test drivers: the out-of-tree build failed ($LOGS/debian-test-drivers.out)"
	fi
	touch "$T/complete"
}
[ "$MODE" = packages ] || trees_for_vms
if [ "$MODE" = all ]; then
	vms >"$LOGS/debian-vms.out" 2>&1 &
	VMS=$!
	t_vms=$SECONDS
	NICE="nice -n 10"
fi

# 3. Refusals, against changed copies of the same headers, from the tree
# the package was built from, with the package's cache (the exports case
# needs the tree regenerated by the build above).
while IFS= read -r line; do
	case $line in PASS:* | FAIL:* | "    "*) echo "$line" ;; esac
	case $line in FAIL:*) FAILS=$((FAILS + 1)) ;; esac
done < <(chr env RPCRDMA_CACHE=/var/cache/rpcrdma-rs bash /root/pkg/rpcrdma-rs/scripts/toolchain-refusals.sh \
	"/lib/modules/$KREL/build" 2>&1)
# A point release moves the archive's linux-source-7.3 on: the kernel that
# runs now keeps its headers, and its rebuilds (the package's upgrade, DKMS
# at boot) must still work. Its tree, cached, is used before any source is
# looked for: with the source package's tarball out of the way, the build
# succeeds from the cache.
src_tar=$(ls "$R"/usr/src/linux-source-7.3.tar.* 2>/dev/null | head -n 1)
if [ -n "$src_tar" ] && mv "$src_tar" "$src_tar.away"; then
	rc=0
	out=$(chr env RPCRDMA_CACHE=/var/cache/rpcrdma-rs KDIR="/lib/modules/$KREL/build" \
		bash /root/pkg/rpcrdma-rs/scripts/build-module.sh rust 2>&1) || rc=$?
	mv "$src_tar.away" "$src_tar"
	if [ "$rc" = 0 ] && grep -q "regenerated before, in .* (cached)" <<<"$out"; then
		pass "$KREL: with no linux-source-7.3 at all (the archive moved on), the module builds from the kernel's cached tree"
	else
		tail -n 3 <<<"$out" | sed 's/^/    /'
		fail "$KREL: with no linux-source-7.3, the build from the cached tree failed (exit $rc)"
	fi
else
	fail "no linux-source-7.3 tarball in the environment to take away"
fi
lap refusals

# 4. Other kernels. The supported one: the same release's cloud flavour
# (trixie-backports carries a single 7.3.x, in three flavours). The
# unsupported ones: the newest 7.2 of trixie-backports (CONFIG_RUST, but
# another Send path) and trixie's own 6.12 (no CONFIG_RUST).
KSUP=${KREL%-amd64}-cloud-amd64
K72=$(chr apt-cache pkgnames linux-headers-7.2. | sed -n 's/^linux-headers-\(7\.2\.[0-9]*+deb13-amd64\)$/\1/p' | sort -V | tail -n 1)
K612=$(chr apt-cache depends "linux-headers-amd64/$(chr sh -c '. /etc/os-release; echo $VERSION_CODENAME')" 2>/dev/null |
	sed -n 's/^ *Depends: linux-headers-\(6\.12\.[0-9]*+deb13-amd64\)$/\1/p' | head -n 1)
say "debian: headers of other kernels: $KSUP (DKMS must build), ${K72:-no 7.2} and ${K612:-no 6.12} (DKMS must skip)"
# A point release, replayed with the packages at hand (the archive has one
# 7.3.x): linux-source-7.3 re-versioned ($SV+rs1, the same tarball) stands
# for the archive's source having moved on, the cloud flavour's headers
# ($SV) for a kernel whose source is not installed, as a point release's
# new headers configured before its source (apt does not order them) or
# the previous kernel's once the archive moved past it. Then:
#  - the cloud headers' installation: apt exit 0, DKMS skips the kernel
#    (dkms.conf), the package's hook says why and marks it;
#  - the package's own upgrade N -> N+1 (a copy of this tree re-versioned
#    $ver+upgrade1) with both kernels installed: apt exit 0, $KREL rebuilt
#    from its cached tree (its source has moved on), the cloud one still
#    skipped with the reason;
#  - the source of the cloud kernel's version installed: the package's
#    trigger on /usr/src builds N+1 for it;
#  - the roll back N+1 -> N (apt install --allow-downgrades): both kernels
#    rebuilt, N's version string in both.
SV=$(chr dpkg-query -W -f='${Version}' linux-source-7.3)
SRC_DEB=/var/cache/apt/archives/linux-source-7.3_${SV}_all.deb
NEXT=$ver+upgrade1
NEXT_DEB=/var/tmp/rpcrdma-rs/${PKG}_${NEXT}_all.deb
rm -rf "$R"/var/cache/rpcrdma-rs/kernels/"$KSUP"-* "$R/root/src-next" "$R/root/pkg-next"
rc=0
# fetched PKG=VERSION: its .deb in apt's archive, downloaded if apt did not
# keep it.
fetched() { echo "[ -f /var/cache/apt/archives/\$(echo '$1' | sed 's/=/_/; s/:/%3a/')_*.deb ] || (cd /var/cache/apt/archives && apt-get -o APT::Sandbox::User=root download '$1')"; }
step source-next sh -c "$(fetched "linux-source-7.3=$SV") && dpkg-deb -R $SRC_DEB /root/src-next &&
	sed -i 's/^Version: .*/Version: $SV+rs1/' /root/src-next/DEBIAN/control &&
	dpkg-deb -Znone -b /root/src-next /root/linux-source-next.deb >/dev/null && rm -rf /root/src-next &&
	$APT install /root/linux-source-next.deb && apt-mark auto linux-source-7.3" || rc=$?
[ "$rc" = 0 ] && [ "$(chr dpkg-query -W -f='${Version}' linux-source-7.3)" = "$SV+rs1" ] ||
	fail "the re-versioned linux-source-7.3 ($SV+rs1) does not install: exit $rc ($LOGS/debian-source-next.log)"
rc=0
step headers-supported $APT install "linux-headers-$KSUP" || rc=$?
said=$(grep -m1 "^rpcrdma-rs-dkms: not built for $KSUP: not yet" "$LOGS/debian-headers-supported.log" || true)
left=$(chr sh -c "ls /lib/modules/$KSUP/updates/dkms/ 2>/dev/null" || true)
if [ "$rc" = 0 ] && grep -q "^Autoinstall on $KSUP was skipped for module(s) rpcrdma-rs" "$LOGS/debian-headers-supported.log" &&
	[ -n "$said" ] && [ -z "$left" ]; then
	pass "apt install linux-headers-$KSUP ($SV) with linux-source-7.3 $SV+rs1 installed: exit 0; DKMS skipped it, and the package's hook said: '$said'"
else
	grep -E "^Autoinstall|rpcrdma-rs-dkms|Error|error" "$LOGS/debian-headers-supported.log" | tail -n 10 | sed 's/^/    /'
	fail "apt install linux-headers-$KSUP with another linux-source-7.3: exit $rc, not the logged skip expected ($LOGS/debian-headers-supported.log)"
fi
# N+1: this tree with a changelog entry and dkms.conf's version moved on.
rc=0
step build-next sh -c "mkdir -p /root/pkg-next && cp -a /root/pkg/rpcrdma-rs /root/pkg-next/ && cd /root/pkg-next/rpcrdma-rs &&
	sed -i 's/^PACKAGE_VERSION=.*/PACKAGE_VERSION=\"$NEXT\"/' dkms.conf &&
	{ printf '%s\n\n  * %s\n\n -- %s  %s\n\n' 'rpcrdma-rs ($NEXT) unstable; urgency=medium' \
		'Test upgrade (scripts/debian-check.sh).' 'rpcrdma-rs tests <tests@invalid>' \"\$(date -R)\"; cat debian/changelog; } >c &&
	mv c debian/changelog && dpkg-buildpackage -us -uc -b >/dev/null && cp ../${PKG}_${NEXT}_all.deb $NEXT_DEB" || rc=$?
[ "$rc" = 0 ] || fail "the package N+1 ($NEXT) does not build ($LOGS/debian-build-next.log)"
# modversion KREL: the version string of our rpcrdma.ko in KREL's
# updates/dkms (the cloud flavour has headers only, no modules.dep for
# modinfo -k to look it up by name).
modversion() { chr sh -c "modinfo -F version /lib/modules/$1/updates/dkms/rpcrdma.ko* 2>/dev/null" || true; }
rc=0
step upgrade-next sh -c "cd ${NEXT_DEB%/*} && $APT install ./$(basename "$NEXT_DEB")" || rc=$?
v1=$(modversion "$KREL")
said=$(grep -m1 "^rpcrdma-rs-dkms: not built for $KSUP: not yet" "$LOGS/debian-upgrade-next.log" || true)
if [ "$rc" = 0 ] && [ "$v1" = "$KREL-rs.v$NEXT-rust" ] && [ -n "$said" ] &&
	[ -z "$(chr sh -c "ls /lib/modules/$KSUP/updates/dkms/ 2>/dev/null" || true)" ]; then
	pass "package upgrade $ver -> $NEXT with the source moved on ($SV+rs1): apt exit 0; $KREL rebuilt from its cached tree ($v1); $KSUP still skipped: '$said'"
else
	grep -E "rpcrdma-rs|Error|error" "$LOGS/debian-upgrade-next.log" | tail -n 10 | sed 's/^/    /'
	fail "package upgrade $ver -> $NEXT: apt exit $rc; $KREL has '$v1'; the skip line for $KSUP: '$said' ($LOGS/debian-upgrade-next.log)"
fi
# The running release rebuilt in place: its headers again, in another
# Debian version ($SV+rs1, the same files), as a kernel package rebuilt
# with the same release name arrives. DKMS keeps the module it installed
# (no MODVERSIONS to catch a changed layout): the package's hook must
# rebuild it against the new headers (a tree regenerated from the source
# of their version, which is $SV+rs1 here), and the package's trigger
# must drop the tree made for the old ones. The environment's headers
# return to $SV at the end of the run (after the purge: no rebuild then).
HDR_DEB=/var/cache/apt/archives/linux-headers-${KREL}_${SV}_amd64.deb
rc=0
step headers-rebuilt sh -c "$(fetched "linux-headers-$KREL=$SV") && rm -rf /root/hdr-next && dpkg-deb -R $HDR_DEB /root/hdr-next &&
	sed -i 's/^Version: .*/Version: $SV+rs1/' /root/hdr-next/DEBIAN/control &&
	dpkg-deb -b /root/hdr-next /root/linux-headers-next.deb >/dev/null && rm -rf /root/hdr-next &&
	$APT install /root/linux-headers-next.deb" || rc=$?
said=$(grep -m1 "^rpcrdma-rs-dkms: rebuilt and installed our rpcrdma.ko for $KREL against headers $SV+rs1" "$LOGS/debian-headers-rebuilt.log" || true)
pruned=$(grep -m1 "^rpcrdma-rs-dkms: removed the kernel tree cached for $KREL .*: it was made for its headers $SV, now $SV+rs1" "$LOGS/debian-headers-rebuilt.log" || true)
against=$(cat "$R/var/cache/rpcrdma-rs/built-against/$KREL" 2>/dev/null || true)
v1=$(modversion "$KREL")
if [ "$rc" = 0 ] && [ -n "$said" ] && [ -n "$pruned" ] && [ "$against" = "$SV+rs1" ] && [ "$v1" = "$KREL-rs.v$NEXT-rust" ]; then
	pass "$KREL rebuilt in place (its headers again as $SV+rs1): apt exit 0; the package's hook rebuilt ours against them ('$said'), and the tree made for $SV went ('${pruned#rpcrdma-rs-dkms: }')"
else
	grep -E "rpcrdma-rs|Error|error" "$LOGS/debian-headers-rebuilt.log" | tail -n 10 | sed 's/^/    /'
	fail "$KREL rebuilt in place: apt exit $rc; built against '$against', module '$v1'; rebuild line '$said', pruned '$pruned' ($LOGS/debian-headers-rebuilt.log)"
fi
rm -f "$R/root/linux-headers-next.deb"
rc=0
step source-back sh -c "$APT install --allow-downgrades $SRC_DEB && apt-mark auto linux-source-7.3" || rc=$?
ko2=$(chr sh -c "ls /lib/modules/$KSUP/updates/dkms/rpcrdma.ko* 2>/dev/null" | head -n 1)
v2=$(modversion "$KSUP")
if [ "$rc" = 0 ] && grep -q "^rpcrdma-rs-dkms: installed our rpcrdma.ko into $KSUP" "$LOGS/debian-source-back.log" &&
	[ -n "$ko2" ] && [ "$v2" = "$KSUP-rs.v$NEXT-rust" ]; then
	pass "apt install linux-source-7.3=$SV then: exit 0; the package's trigger built and installed ours ($NEXT) for $KSUP ($ko2)"
else
	grep -E "rpcrdma-rs-dkms|Error|error" "$LOGS/debian-source-back.log" | tail -n 10 | sed 's/^/    /'
	fail "apt install linux-source-7.3=$SV then: exit $rc, module for $KSUP '${ko2:-none}' version '$v2' ($LOGS/debian-source-back.log)"
fi
rc=0
t0=$SECONDS
step rollback sh -c "cd ${DEB%/*} && $APT install --allow-downgrades ./$(basename "$DEB")" || rc=$?
v1=$(modversion "$KREL")
v2=$(modversion "$KSUP")
if [ "$rc" = 0 ] && [ "$v1" = "$KREL-rs.v$ver-rust" ] && [ "$v2" = "$KSUP-rs.v$ver-rust" ]; then
	pass "roll back $NEXT -> $ver (apt install --allow-downgrades): exit 0; both kernels rebuilt in $((SECONDS - t0)) s ($v1, $v2)"
	modinfo_ok "$KSUP" "$(chr sh -c "ls /lib/modules/$KSUP/updates/dkms/rpcrdma.ko*" | head -n 1)"
else
	grep -E "rpcrdma-rs|Error|error" "$LOGS/debian-rollback.log" | tail -n 10 | sed 's/^/    /'
	fail "roll back $NEXT -> $ver: apt exit $rc; $KREL has '$v1', $KSUP '$v2' ($LOGS/debian-rollback.log)"
fi
rm -rf "$R/root/pkg-next" "$R/root/linux-source-next.deb" "$R$NEXT_DEB"
[ "$MODE" != packages ] || trees_for_vms
lap supported-kernel
# The hook's notice goes to the system log too (logger): a stand-in logger
# ahead of util-linux's in PATH records what it is given, then passes it on.
LOGGER_SHIM=/usr/sbin/logger
if [ -n "$K72" ] && [ -n "$K612" ]; then
	rc=0
	printf '#!/bin/sh\nprintf "%%s\\n" "$*" >>/root/logger-calls.txt\nexec /usr/bin/logger "$@"\n' >"$R$LOGGER_SHIM"
	chmod 755 "$R$LOGGER_SHIM"
	rm -f "$R/root/logger-calls.txt"
	step headers-unsupported $APT install "linux-headers-$K72" "linux-headers-$K612" || rc=$?
	rm -f "$R$LOGGER_SHIM"
	for k in "$K72" "$K612"; do
		why=$(chr sh -c "grep -E '^CONFIG_RUST=y' /lib/modules/$k/build/.config >/dev/null &&
			echo 'not the 7.3 series (BUILD_EXCLUSIVE_KERNEL)' || echo 'no CONFIG_RUST (BUILD_EXCLUSIVE_CONFIG)'")
		left=$(chr sh -c "ls /lib/modules/$k/updates/dkms/ 2>/dev/null" || true)
		said=$(grep -m1 "^rpcrdma-rs-dkms: not built for $k: " "$LOGS/debian-headers-unsupported.log" || true)
		if [ "$rc" = 0 ] && grep -q "^Autoinstall on $k was skipped for module(s) rpcrdma-rs" "$LOGS/debian-headers-unsupported.log" &&
			[ -n "$said" ] && [ -z "$left" ]; then
			pass "apt install linux-headers-$k: exit 0; DKMS skipped it ($why), and the package's hook said: '$said'"
			if grep -q "^rpcrdma-rs-dkms: NOTICE: booted into $k, this server's NFS over RDMA runs the kernel's own (C) rpcrdma.ko" "$LOGS/debian-headers-unsupported.log" &&
				grep -q -- "-t rpcrdma-rs-dkms -p user.warning -- NOTICE: booted into $k" "$R/root/logger-calls.txt" 2>/dev/null; then
				pass "$k: the hook's notice that it runs Debian's C module stands out at the installation and went to the system log (logger -p user.warning)"
			else
				fail "$k: no notice that it runs Debian's C module, at the installation or in the system log ($LOGS/debian-headers-unsupported.log)"
			fi
		else
			grep -E "^Autoinstall|BUILD_EXCLUSIVE|Error" "$LOGS/debian-headers-unsupported.log" | tail -n 6 | sed 's/^/    /'
			fail "apt install linux-headers-$k: exit $rc, no skip line or no reason for $k ('$said'), or a module was left: '$left' ($LOGS/debian-headers-unsupported.log)"
		fi
	done
else
	fail "no 7.2 ('$K72') or 6.12 ('$K612') headers package in the environment's apt sources"
fi
lap unsupported-kernels

# The package's autopkgtest (debian/tests), as Debian's CI runs it, on the
# installed package with the four kernels' headers present.
rc=0
# Only the package's own tests (--no-auto-control): the generic one of
# autopkgtest-pkg-dkms purges the package first, and with it the cached
# kernel trees (about 5 min each to regenerate). load-module needs a machine
# of its own (isolation-machine), which the null runner is not: autopkgtest
# skips it here (exit 2), and the Debian VM of ours runs it (step 5).
step autopkgtest autopkgtest --no-auto-control "$DEB" /root/pkg/rpcrdma-rs/ -- null || rc=$?
grep -E '^(PASS|FAIL|SKIP) |^(dkms-modinfo|load-module) ' "$LOGS/debian-autopkgtest.log" | sed 's/^/    autopkgtest: /' || true
ran=$(grep -c '^PASS ' "$LOGS/debian-autopkgtest.log" || true)
skipped=$(grep -c '^SKIP ' "$LOGS/debian-autopkgtest.log" || true)
if [ "$rc" = 2 ] && grep -qE '^dkms-modinfo +PASS' "$LOGS/debian-autopkgtest.log" &&
	grep -qE '^load-module +SKIP .*isolation-machine' "$LOGS/debian-autopkgtest.log" && [ "$ran" = 2 ] && [ "$skipped" = 2 ]; then
	pass "autopkgtest (null): dkms-modinfo PASS, 2 kernels built and read by modinfo, 2 skipped; load-module left to the VM (isolation-machine)"
else
	fail "autopkgtest: exit $rc (want 2: load-module skipped), $ran kernels passed (want 2), $skipped skipped (want 2) ($LOGS/debian-autopkgtest.log)"
fi
lap autopkgtest

# 4b. Another RDMA stack (NVIDIA MLNX_OFED/DOCA-OFED), as a stand-in: a
# package with MOFED's binary-modules name whose ib_core.ko (a copy of the
# kernel's) goes into updates/ of this kernel, where modprobe prefers it.
# Installed after ours, its arrival must take our rpcrdma.ko out of that
# kernel and drop its build (the package's trigger); DKMS must skip the
# kernel while it is there (dkms.conf), at boot too; its removal must build
# and put ours back. apt never fails.
other_stack() {
	local ib pkgdir=/root/mofed-stand-in
	ib=$(chr modinfo -k "$KREL" -n ib_core 2>/dev/null | sed 's,^/lib/,/usr/lib/,')
	chr sh -c "rm -rf $pkgdir && mkdir -p $pkgdir/DEBIAN $pkgdir/usr/lib/modules/$KREL/updates &&
		cp '$ib' $pkgdir/usr/lib/modules/$KREL/updates/ &&
		printf '%s\n' 'Package: mlnx-ofed-kernel-modules' 'Version: 99.0-stand-in' 'Architecture: amd64' \
			'Maintainer: rpcrdma-rs tests <tests@invalid>' 'Description: stand-in for MLNX_OFED kernel modules (test only)' \
			>$pkgdir/DEBIAN/control &&
		printf '#!/bin/sh\ndepmod -a $KREL\n' >$pkgdir/DEBIAN/postinst &&
		printf '#!/bin/sh\ndepmod -a $KREL\n' >$pkgdir/DEBIAN/postrm &&
		chmod 755 $pkgdir/DEBIAN/postinst $pkgdir/DEBIAN/postrm &&
		dpkg-deb -b $pkgdir /root/mofed-stand-in.deb" >"$LOGS/debian-other-stack-build.log" 2>&1 ||
		{ fail "another RDMA stack: the stand-in package does not build ($LOGS/debian-other-stack-build.log)"; return; }
	local rc=0 k said
	step other-stack-install $APT install /root/mofed-stand-in.deb || rc=$?
	k=$(modfile "$KREL")
	said=$(grep -m1 "^rpcrdma-rs-dkms: took our rpcrdma.ko out of $KREL: " "$LOGS/debian-other-stack-install.log" || true)
	if [ "$rc" = 0 ] && [[ $k == "/lib/modules/$KREL/$STOCK_KO"* ]] && [ -n "$said" ] &&
		chr sh -c "ls /lib/modules/$KSUP/updates/dkms/rpcrdma.ko*" >/dev/null 2>&1; then
		pass "another RDMA stack installed after ours (stand-in mlnx-ofed-kernel-modules, ib_core in updates/): apt exit 0; our rpcrdma.ko taken out of $KREL, modinfo -n rpcrdma is Debian's ($k), $KSUP keeps ours; it said: '$said'"
	else
		fail "another RDMA stack installed after ours: apt exit $rc; modinfo -n rpcrdma is '$k', no or another message ('$said') ($LOGS/debian-other-stack-install.log)"
	fi
	rc=0
	step other-stack-autoinstall dkms autoinstall -k "$KREL" || rc=$?
	k=$(modfile "$KREL")
	if [ "$rc" = 0 ] && grep -q "^Autoinstall on $KREL was skipped for module(s) rpcrdma-rs" "$LOGS/debian-other-stack-autoinstall.log" &&
		[[ $k == "/lib/modules/$KREL/$STOCK_KO"* ]]; then
		pass "another RDMA stack present: dkms autoinstall -k $KREL (as at boot) exits 0 and skips ours (dkms.conf); modinfo -n rpcrdma stays Debian's"
	else
		fail "another RDMA stack present: dkms autoinstall -k $KREL: exit $rc, modinfo -n rpcrdma '$k' ($LOGS/debian-other-stack-autoinstall.log)"
	fi
	rc=0
	step other-stack-remove $APT remove mlnx-ofed-kernel-modules || rc=$?
	k=$(modfile "$KREL")
	said=$(grep -m1 "^rpcrdma-rs-dkms: put our rpcrdma.ko back into $KREL" "$LOGS/debian-other-stack-remove.log" || true)
	if [ "$rc" = 0 ] && [[ $k == "/lib/modules/$KREL/updates/dkms/rpcrdma.ko"* ]] && [ -n "$said" ]; then
		pass "the other RDMA stack removed: apt exit 0; ours is back in $KREL ($k); it said: '$said'"
	else
		fail "the other RDMA stack removed: apt exit $rc; modinfo -n rpcrdma is '$k' ('$said') ($LOGS/debian-other-stack-remove.log)"
	fi
}
other_stack
lap other-rdma-stack
# The other kernels' headers go again (after the other RDMA stack's test,
# which checks that the cloud kernel keeps ours). The cloud kernel has
# headers only here, so with them it is gone: our module must go
# from its /lib/modules (the package's trigger; DKMS's own hook removes it
# only with a kernel's image package), and its regenerated tree (about
# 2 GB) too; the running release's stays.
# shellcheck disable=SC2046
step headers-purge apt-get purge -y $(extra_headers) || fail "apt-get purge of the other kernels' headers ($LOGS/debian-headers-purge.log)"
gone=$(ls -d "$R"/var/cache/rpcrdma-rs/kernels/"$KSUP"-* 2>/dev/null || true)
kept=$(ls -d "$R"/var/cache/rpcrdma-rs/kernels/"$KREL"-* 2>/dev/null || true)
if [ -z "$gone" ] && [ -n "$kept" ] && grep -q "removed the kernel tree cached for $KSUP" "$LOGS/debian-headers-purge.log"; then
	pass "headers of $KSUP purged: its cached kernel tree went with them ($(grep -m1 "removed the kernel tree cached for $KSUP" "$LOGS/debian-headers-purge.log" | sed 's/.*(\([0-9?]* MB\).*/\1/')), $KREL's stays"
else
	fail "headers of $KSUP purged: cached trees left ${gone:-none}, $KREL's ${kept:-missing} ($LOGS/debian-headers-purge.log)"
fi
# (linux-base-<release>, which the headers brought, stays until an
# autoremove: its System.map, config and modules.builtin* are dpkg's.)
ours_left=$(cd "$R" && find "lib/modules/$KSUP" -path '*/updates*' -o -name 'rpcrdma.ko*' -o -name 'modules.dep*' 2>/dev/null | paste -sd' ' || true)
if [ -z "$ours_left" ] && ! chr dkms status "$MOD" -k "$KSUP" 2>/dev/null | grep -q "$KSUP" &&
	grep -q "^rpcrdma-rs-dkms: removed our rpcrdma.ko from $KSUP: its modules and headers are gone" "$LOGS/debian-headers-purge.log"; then
	pass "$KSUP gone (it had headers only): nothing of ours left under /lib/modules/$KSUP (what stays is linux-base's, dpkg's files), and DKMS has no build for it"
else
	fail "$KSUP gone: left under /lib/modules/$KSUP: '${ours_left}'; dkms status: '$(chr dkms status "$MOD" -k "$KSUP" 2>/dev/null)' ($LOGS/debian-headers-purge.log)"
fi
lap headers-purge
# 6. Remove, reinstall, purge (the VMs run on their own copy of the tree).
rc=0
step apt-remove $APT remove "$PKG" || rc=$?
k=$(modfile "$KREL")
if [ "$rc" = 0 ] && [[ $k == "/lib/modules/$KREL/$STOCK_KO"* ]] && [ -z "$(chr dkms status "$MOD" 2>/dev/null)" ] &&
	[ ! -e "$R/usr/src/rpcrdma-rs-$ver" ] && ! chr modprobe -c | grep -q '^install rpcrdma '; then
	pass "apt remove $PKG: exit 0; modinfo -n rpcrdma is Debian's own again ($k); DKMS has no $MOD; modprobe has no install command for rpcrdma"
	if verify=$(chr dpkg --verify "linux-modules-$KREL" 2>&1) && [ -z "$verify" ]; then
		pass "dpkg --verify linux-modules-$KREL after apt remove: clean"
	else
		fail "dpkg --verify linux-modules-$KREL after apt remove: $(head -n 3 <<<"$verify" | tr '\n' ' ')"
	fi
else
	fail "apt remove $PKG: exit $rc; modinfo -n rpcrdma is '$k' ($LOGS/debian-apt-remove.log)"
fi
rc=0
t0=$SECONDS
step apt-reinstall sh -c "cd ${DEB%/*} && $APT install ./$(basename "$DEB")" || rc=$?
k=$(modfile "$KREL")
if [ "$rc" = 0 ] && [[ $k == "/lib/modules/$KREL/updates/dkms/rpcrdma.ko"* ]]; then
	pass "reinstall (apt install ./$(basename "$DEB")): exit 0; DKMS built and installed ours again in $((SECONDS - t0)) s ($k)"
else
	fail "reinstall: exit $rc; modinfo -n rpcrdma is '$k' ($LOGS/debian-apt-reinstall.log)"
fi
rc=0
step apt-purge $APT remove --purge "$PKG" || rc=$?
k=$(modfile "$KREL")
left=$(cd "$R" && ls -d var/cache/rpcrdma-rs var/lib/dkms/rpcrdma-rs "usr/src/rpcrdma-rs-$ver" \
	etc/kernel/header_postinst.d/rpcrdma-rs-dkms var/lib/rpcrdma-rs-dkms \
	usr/lib/modules/*/updates/dkms/rpcrdma.ko* 2>/dev/null | paste -sd' ' || true)
if [ "$rc" = 0 ] && [[ $k == "/lib/modules/$KREL/$STOCK_KO"* ]] && [ -z "$left" ] &&
	[ -z "$(chr dpkg-query -W -f '${Status}' "$PKG" 2>/dev/null | grep -v not-installed)" ]; then
	pass "apt remove --purge $PKG: exit 0; modinfo -n rpcrdma is Debian's own ($k); nothing of the package left"
else
	fail "apt remove --purge $PKG: exit $rc; modinfo -n rpcrdma is '$k'; left: '$left' ($LOGS/debian-apt-purge.log)"
fi
restore_headers
lap remove-reinstall-purge
minimal_root_install
lap minimal-root

NICE=
if [ "$MODE" = all ]; then
	say "debian: waiting for the VMs ($LOGS/debian-vms.out)"
	wait "$VMS" || true
	replay "$LOGS/debian-vms.out"
	TIMES+=("vms(background) $((SECONDS - t_vms))s")
	lap vms-wait
fi

echo "    debian phase steps: ${TIMES[*]}"
[ "$FAILS" = 0 ]

