#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# kernel-support.sh RELEASE [CONFIG]: can this module be built for the
# kernel RELEASE (its headers' .config: CONFIG, by default
# /lib/modules/RELEASE/build/.config)? The one statement of that rule,
# shared by dkms.conf (which makes DKMS skip the kernel), the Debian
# package's kernel hook and postinst (which say why, and build once what
# was missing arrives) and its autopkgtest (which fails when a kernel that
# can be built was not). POSIX sh: DKMS sources dkms.conf in bash, the
# package's scripts run in dash.
#
# Prints nothing and exits 0 when it can be built. Otherwise prints the
# reason in one line and exits
#   1  never: not a kernel this module is for (series, architecture,
#      configuration);
#   2  not yet: a Debian kernel whose regenerated tree is not cached and
#      whose source (linux-source-7.3 of its headers' Debian version) is not
#      installed: a point release's headers configured before its source,
#      or a kernel the archive's source has moved past;
#   3  another RDMA stack: the ib_core modprobe loads for it is not the
#      kernel's own (NVIDIA MLNX_OFED, DOCA-OFED, or one built from source).
k=${1:?usage: kernel-support.sh RELEASE [CONFIG]}
cfg=${2:-/lib/modules/$k/build/.config}
# Where DKMS builds of the package keep the regenerated trees (dkms.conf's
# RPCRDMA_CACHE).
cache=/var/cache/rpcrdma-rs/kernels

never() {
	echo "$*"
	exit 1
}

case $k in
7.3.*) ;;
*) never "the module is Linux 7.3's RPC-over-RDMA Send path, for 7.3.x kernels only" ;;
esac
[ -r "$cfg" ] || never "its headers' configuration ($cfg) is not installed"
grep -qs '^CONFIG_X86_64=y' "$cfg" || never "it is not an x86-64 kernel, the only architecture tested"
grep -qs '^CONFIG_RUST=y' "$cfg" || never "it is built without CONFIG_RUST"
grep -qs '^CONFIG_SUNRPC_XPRT_RDMA=m' "$cfg" ||
	never "its RPC-over-RDMA (CONFIG_SUNRPC_XPRT_RDMA) is not a module"
! grep -qs '^CONFIG_HIGHMEM=y' "$cfg" || never "it is built with CONFIG_HIGHMEM"

# Another RDMA stack: judged by where modprobe would take ib_core from, not
# by package names, so that a stack from its own installer counts too.
ib_core=$(modinfo -k "$k" -n ib_core 2>/dev/null || true)
case $ib_core in "" | "(builtin)" | */modules/"$k"/kernel/*) ;; *)
	echo "another RDMA stack's ib_core is installed for it ($ib_core: MLNX_OFED or DOCA-OFED?), and this module is built against the kernel's"
	exit 3
	;;
esac

# A Debian kernel (dpkg knows its headers' version): its tree is taken from
# the cache, or regenerated from linux-source-7.3 of exactly that version.
hv=$(dpkg-query -W -f='${Version}' "linux-headers-$k" 2>/dev/null || true)
if [ -n "$hv" ]; then
	# A tree made for these headers (prepare-kdir.sh marks it with their
	# version; one made before the mark existed is taken as it).
	for c in "$cache/$k"-*/.complete; do
		[ -e "$c" ] || continue
		m=${c%/.complete}/.headers-version
		[ ! -e "$m" ] || [ "$(cat "$m")" = "$hv" ] && exit 0
	done
	sv=$(dpkg-query -W -f='${Version}' linux-source-7.3 2>/dev/null || true)
	[ -n "$(ls -d /usr/src/linux-source-7.3.tar.* /usr/src/linux-source-7.3 2>/dev/null)" ] || sv=
	if [ "$sv" != "$hv" ]; then
		echo "not yet: linux-source-7.3 of its version ($hv) is not installed (installed: ${sv:-none}); it is built once it is (apt install linux-source-7.3=$hv), by this package's trigger or by DKMS at boot"
		exit 2
	fi
fi
exit 0
