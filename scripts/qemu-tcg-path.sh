#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# qemu-tcg-path.sh DIR: writes DIR/qemu-system-x86_64, a wrapper that drops
# the "-accel kvm" and "-accel hvf" kunit.py passes (it asks for KVM
# first), so that QEMU uses TCG: nested KVM does not boot our kernels on
# these machines. Prints DIR, to put first in PATH. For kunit.py runs
# (series-check.sh).
set -eu
dir=${1:?usage: qemu-tcg-path.sh DIR}
mkdir -p "$dir"
cat >"$dir/qemu-system-x86_64" <<'EOT'
#!/bin/sh
# kunit.py passes "-accel kvm -accel hvf -accel tcg": keep only tcg.
for a in "$@"; do
	shift
	case $accel$a in
	-accel) accel=accel:; continue ;;
	accel:kvm | accel:hvf) accel=; continue ;;
	accel:*) accel=; set -- "$@" -accel "$a"; continue ;;
	esac
	set -- "$@" "$a"
done
exec /usr/bin/qemu-system-x86_64 "$@"
EOT
chmod +x "$dir/qemu-system-x86_64"
echo "$dir"
