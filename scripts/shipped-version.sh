#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# shipped-version.sh [check|record]: the package's version follows what it
# ships. A .deb of a new content under an old version installs as a no-op
# over the old one (apt sees nothing to upgrade), and DKMS keeps the module
# it built from the old source: an admin would run code other than what
# the version names. So the files that make the module and the package's
# behaviour (debian/rpcrdma-rs-dkms.install's, dkms.conf, and the
# packaging: control, rules, the maintainer scripts and the DKMS hook) are
# hashed, and debian/shipped-files.sha256 records "VERSION HASH" for the
# version in dkms.conf and debian/changelog:
#   check   (make check's host tests) fails when the files changed and the
#           version did not, or when the version changed and was not
#           recorded; prints what to do
#   record  after a version bump (debian/changelog and dkms.conf):
#           writes the line for the new version
# Documentation (README.md, Documentation/, README.Debian) is left out:
# fixing a word needs no new package.

. "$(dirname "$0")/lib.sh"

MODE=${1:-check}
REC=$TOP/debian/shipped-files.sha256
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$TOP/dkms.conf")
# A native version (0.6.1) or a Debian revision's upstream part (0.6.1-1).
debver=$(sed -n '1s/^[^ ]* (\([^)-]*\)\(-[^)]*\)\{0,1\}).*/\1/p' "$TOP/debian/changelog")
[ -n "$ver" ] && [ "$ver" = "$debver" ] ||
	die "dkms.conf's PACKAGE_VERSION ($ver) is not debian/changelog's upstream version ($debver)"

# The shipped paths: the first word of each line of the .install file
# (directories whole), and the packaging that decides what the package does.
shipped() {
	{
		awk 'NF { print $1 }' "$TOP/debian/rpcrdma-rs-dkms.install"
		printf '%s\n' dkms.conf debian/control debian/rules debian/rpcrdma-rs-dkms.postrm \
			debian/rpcrdma-rs-dkms.postinst debian/rpcrdma-rs-dkms.triggers \
			debian/rpcrdma-rs-dkms.dkms debian/rpcrdma-rs-dkms.install debian/rpcrdma-rs-dkms.links \
			debian/source/format
	} | while read -r p; do
		[ -e "$TOP/$p" ] || die "shipped path $p does not exist"
		# What the package build copies (debian-check.sh: git's files,
		# less the ignored ones), or every file without git.
		if git -C "$TOP" rev-parse --git-dir >/dev/null 2>&1; then
			git -C "$TOP" ls-files -co --exclude-standard -- "$p"
		else
			(cd "$TOP" && find "$p" -type f)
		fi
	done | LC_ALL=C sort -u
}
hash=$(cd "$TOP" && shipped | tr '\n' '\0' | xargs -0 sha256sum | sha256sum | cut -c1-16)

case $MODE in
record)
	echo "$ver $hash" >"$REC"
	say "recorded $ver $hash in ${REC#"$TOP"/} ($(shipped | wc -l) files)"
	;;
check)
	read -r rver rhash <"$REC" 2>/dev/null || die "no ${REC#"$TOP"/}: run scripts/shipped-version.sh record"
	if [ "$rver" = "$ver" ] && [ "$rhash" = "$hash" ]; then
		echo "PASS: package version $ver matches the $(shipped | wc -l) shipped files (hash $hash)"
	elif [ "$rver" = "$ver" ]; then
		echo "FAIL: the shipped files changed since version $ver was recorded, and the version did not: add a debian/changelog entry and set dkms.conf's PACKAGE_VERSION to the new version, then scripts/shipped-version.sh record"
		exit 1
	else
		echo "FAIL: version $ver (dkms.conf, debian/changelog) is not the one recorded ($rver): scripts/shipped-version.sh record"
		exit 1
	fi
	;;
*) die "usage: shipped-version.sh [check|record]" ;;
esac
