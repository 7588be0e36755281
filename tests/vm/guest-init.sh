#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# PID 1 of the test VM, started by the rootfs stub /sbin/rpcrdma-init after
# it mounted the repo at /work. Makes the read-only 9p root usable (tmpfs
# where daemons write), runs tests/vm/guest/$rs_script.sh with the
# arguments from /results/args, stores its exit status in /results/status
# and powers off. The host side is scripts/vm-run.sh.

export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8

o=trans=virtio,version=9p2000.L,msize=262144
mount -t 9p -o $o,ro mods /lib/modules
mount -t 9p -o $o results /results
# vm-run.sh waits for this to know the kernel booted.
: >/results/booted
for d in /var/lib/nfs /var/log /var/tmp /var/cache /root /srv /mnt /media; do
	mount -t tmpfs -o mode=0755 tmpfs $d
done
mkdir -p /var/lib/nfs/sm /var/lib/nfs/sm.bak /var/lib/nfs/v4recovery /var/lib/nfs/nfsdcld \
	/run/rpc_pipefs /run/lock
: >/tmp/exports
mount --bind /tmp/exports /etc/exports
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t devpts devpts /dev/pts 2>/dev/null
hostname rpcrdma-vm
ip link set lo up

power_off() {
	# A hard NFS mount whose server is gone blocks sync for ever (a client
	# script that died mid-run leaves one): wait for it 30 s at most. The
	# results are on 9p, written through, and need no sync.
	sync &
	n=0
	while kill -0 $! 2>/dev/null && [ $n -lt 30 ]; do sleep 1; n=$((n + 1)); done
	python3 -c 'import ctypes; ctypes.CDLL(None).reboot(0x01234567)'
	# Should the syscall fail, ending PID 1 stops the VM as well.
	exit 0
}

script=/work/tests/vm/guest/${rs_script:-none}.sh
if [ ! -x "$script" ]; then
	echo "guest-init: no guest script $script" | tee /results/guest.log
	echo 2 >/results/status
	power_off
fi

echo "guest-init: running $script $(cat /results/args 2>/dev/null | tr '\n' ' ')"
# The arguments come one per line from the host.
set --
while IFS= read -r a; do set -- "$@" "$a"; done </results/args
# Output goes to the console as it comes and to guest.log.
{ "$script" "$@"; echo $? >/tmp/rc; } 2>&1 | tee /results/guest.log
rc=$(cat /tmp/rc 2>/dev/null || echo 3)
# The guest scripts run under set -eu (lib.sh): a failed command or an unset
# variable ends them with no FAIL line and no results. Say so, with the last
# words of the script, so that the host reports it rather than just missing
# results.
if [ "$rc" != 0 ] && ! grep -q '^FAIL: ' /results/guest.log 2>/dev/null; then
	echo "FAIL: $(basename "$script") ended with status $rc without reporting a failure (set -eu?); its last output: $(grep -v '^$' /results/guest.log 2>/dev/null | tail -n 1)" |
		tee -a /results/guest.log
fi
dmesg >/results/dmesg.log
echo "$rc" >/results/status
echo "guest-init: $script exited $rc"
power_off
