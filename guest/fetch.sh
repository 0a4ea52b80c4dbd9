#!/bin/bash
# SPDX-License-Identifier: MIT
# guest/fetch.sh BUILD_DIR [--suite bookworm|trixie|sid] — fetch guest pieces from Debian packages
# (never installed) and build {linux.uml,uml-initrd.cpio.gz,vmlinuz,qemu-initrd.cpio.gz} in
# BUILD_DIR/guest (bookworm, the default) or BUILD_DIR/guest/SUITE (newer suites).
# Exit 0 ok, 77 when packages cannot be downloaded, other non-zero on errors.
# Downloads go to a cache outside the checkout (guest/apt-suite.sh: cache_debs), each .deb checked
# against the package index's SHA256; MANIFEST records every package version and hash.
# Newer suites come through a private apt configuration kept in that cache (APT_CONFIG; the
# system's sources are never changed), from the mirror the system's bookworm sources use
# (VNETD_DEBIAN_MIRROR overrides it). Their linux.uml needs a newer glibc than the host's: it gets
# the suite's libc as ELF interpreter and rpath (patchelf), as UML re-executes /proc/self/exe.
# Env: VNETD_GUEST_KERNEL_PKG overrides the QEMU kernel package (default: what
# linux-image-amd64 depends on, "-unsigned" variant when it exists).
set -euo pipefail
SUITE=bookworm
case $# in
1) ;;
3) [ "$2" = --suite ] || { echo "usage: $0 BUILD_DIR [--suite bookworm|trixie|sid]" >&2; exit 2; }
	SUITE=$3 ;;
*) echo "usage: $0 BUILD_DIR [--suite bookworm|trixie|sid]" >&2; exit 2 ;;
esac
case $SUITE in bookworm|trixie|sid) ;; *) echo "fetch.sh: unknown suite $SUITE" >&2; exit 2 ;; esac

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SELF=$HERE/fetch.sh
INIT=$HERE/init
KITDIR=$1/guest
[ "$SUITE" = bookworm ] || KITDIR=$1/guest/$SUITE
mkdir -p "$KITDIR"
OUT=$(cd "$KITDIR" && pwd)
PK=$OUT/pkgs      # one extracted tree per package (cache)
ARCH=x86_64-linux-gnu

step() { echo "fetch.sh: $*"; }
die() { echo "fetch.sh: ERROR: $*" >&2; exit 1; }

exec 9>"$OUT/.lock"
flock 9   # serialise concurrent builds into the same BUILD_DIR

# shellcheck source=guest/apt-suite.sh
. "$HERE/apt-suite.sh"
APT_DL_OPTS=()
[ "$(id -u)" = 0 ] && APT_DL_OPTS+=(-o APT::Sandbox::User=root)  # avoid the _apt sandbox warning
# Newer suites: a private apt configuration whose lists are kept in the cache (not the clone).
[ "$SUITE" = bookworm ] || suite_apt "$(vnetd_cache_dir)/apt/$SUITE" "$SUITE"
apt_update() {
	step "apt-get update ($SUITE package lists)"
	apt-get update -q "${APT_DL_OPTS[@]}" >"$OUT/apt-update.log" 2>&1 ||
		step "apt-get update failed (see $OUT/apt-update.log)"
}
suite_lists_present || apt_update

# --- packages -----------------------------------------------------------------------------
# libssl3 became libssl3t64 (64-bit time_t) after bookworm.
SSL=libssl3
[ "$SUITE" = bookworm ] || SSL=libssl3t64
USERPKGS=(busybox-static ethtool libmnl0 iperf3 libiperf0 libsctp1 "$SSL" sockperf libstdc++6
	libgcc-s1 libc6)
PKGS=(user-mode-linux "${USERPKGS[@]}")

# QEMU kernel package(s), from the lists. sid splits linux-image-X into linux-binary-X
# (vmlinuz), linux-modules-X and linux-base-X (modules.builtin).
kernel_pkg() {
	local k b
	if [ -n "${VNETD_GUEST_KERNEL_PKG:-}" ]; then echo "$VNETD_GUEST_KERNEL_PKG"; return; fi
	k=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '$1=="Depends:" && $2 ~ /^linux-image-[0-9]/ {print $2; exit}')
	[ -n "$k" ] || return 1
	b=$(apt-cache depends "$k" 2>/dev/null | awk '$1=="Depends:" && $2 ~ /^linux-binary-/ {print $2; exit}')
	if [ -n "$b" ]; then
		echo "$b linux-modules-${b#linux-binary-} linux-base-${b#linux-binary-}"; return
	fi
	if apt-cache show "$k-unsigned" >/dev/null 2>&1; then k=$k-unsigned; fi
	echo "$k"
}
KPKGS=$(kernel_pkg) || { apt_update; KPKGS=$(kernel_pkg) ||
	{ echo "fetch.sh: cannot resolve linux-image-amd64 in the $SUITE package lists"; exit 77; }; }
read -r -a KPKGS <<<"$KPKGS"

rc=0
cache_debs "$SUITE" apt_update "$OUT/debs.list" "${PKGS[@]}" "${KPKGS[@]}" || rc=$?
if [ $rc != 0 ]; then echo "fetch.sh: the $SUITE guest kit cannot be built: packages cannot be downloaded"; exit $rc; fi
debfile() { awk -v p="$1" '$1==p {print $4; exit}' "$OUT/debs.list"; }  # cached .deb of $1

# Outputs built from exactly these packages by this script and init mean nothing to do.
STAMP=$(cat "$SELF" "$HERE/apt-suite.sh" "$INIT" "$OUT/debs.list" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$OUT/.stamp" 2>/dev/null)" = "$STAMP" ] &&
		[ -e "$OUT/linux.uml" ] && [ -e "$OUT/uml-initrd.cpio.gz" ] && [ -e "$OUT/vmlinuz" ] &&
		[ -e "$OUT/qemu-initrd.cpio.gz" ]; then
	step "guest kit up to date in $OUT"
	exit 0
fi
rm -f "$OUT/.stamp"

# --- extraction -----------------------------------------------------------------------------
# extract PKG [TAR-WILDCARDS...]: whole package, or only the members matching the wildcards.
extract() {
	local p=$1 d; shift
	d=$(debfile "$p")
	[ -n "$d" ] || die "no .deb for $p"
	if [ "$(cat "$PK/$p/.stamp" 2>/dev/null)" = "$d $STAMP" ]; then return; fi
	step "extract $(basename "$d")"
	rm -rf "${PK:?}/$p" && mkdir -p "$PK/$p"
	if [ $# -eq 0 ]; then
		dpkg-deb -x "$d" "$PK/$p"
	else
		# Patterns a package lacks are no error here (split kernel packages); what is
		# needed is checked after extraction.
		dpkg-deb --fsys-tarfile "$d" | { tar -x -C "$PK/$p" --wildcards "$@" 2>/dev/null || true; }
	fi
	echo "$d $STAMP" >"$PK/$p/.stamp"
}
for p in "${USERPKGS[@]}"; do
	extract "$p"
done
# Kernel modules in load order; tar wildcards */NAME.ko* also match .ko.xz/.ko.zst.
NETMODS=(failover net_failover virtio_net)
QEMUMODS=(virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci "${NETMODS[@]}")
UPATS=() QPATS=()
for m in "${NETMODS[@]}"; do UPATS+=("*/$m.ko*"); done
for m in "${QEMUMODS[@]}"; do QPATS+=("*/$m.ko*"); done
extract user-mode-linux ./usr/bin/linux.uml '*/modules.builtin' "${UPATS[@]}"
for p in "${KPKGS[@]}"; do
	extract "$p" './boot/vmlinuz-*' './boot/config-*' '*/vmlinuz' '*/modules.builtin' "${QPATS[@]}"
done

# first PATH...: the first of the paths that exists (bookworm paths, then usr-merged ones).
first() {
	local f
	for f; do [ -e "$f" ] && { echo "$f"; return; }; done
	return 1
}
BB=$(first "$PK"/busybox-static/{,usr/}bin/busybox) || die "busybox missing in busybox-static"
LDSO=$(first "$PK"/libc6/{,usr/}lib/$ARCH/ld-linux-x86-64.so.2) || die "ld.so missing in libc6"
ETHTOOL=$(first "$PK"/ethtool/{,usr/}sbin/ethtool) || die "ethtool missing in ethtool"
UMLMODS=$(echo "$PK"/user-mode-linux/usr/lib/uml/modules/*)
KP=("${KPKGS[@]/#/$PK/}")
# (usr/)lib/modules/VERSION of the extracted kernel package(s); vmlinuz in /boot or (sid) there.
QMODS=$(find "${KP[@]}" -type d -path '*/lib/modules/*/kernel' | head -n1)
QMODS=${QMODS%/kernel}
VMLINUZ=$(find "${KP[@]}" -type f \( -path '*/boot/vmlinuz-*' -o -path '*/lib/modules/*/vmlinuz' \) | head -n1)
[ -n "$VMLINUZ" ] || die "no vmlinuz in ${KPKGS[*]}"
if [ ! -d "$UMLMODS" ] || [ ! -d "$QMODS" ]; then die "module directories not found"; fi
# Split kernel packages: modules.builtin comes from another package than the modules.
if [ ! -e "$QMODS/modules.builtin" ]; then
	B=$(find "${KP[@]}" -type f -path '*/lib/modules/*/modules.builtin' | head -n1)
	[ -n "$B" ] || die "no modules.builtin in ${KPKGS[*]}"
	cp "$B" "$QMODS/modules.builtin"
fi

# --- staging --------------------------------------------------------------------------------
BINS=("$ETHTOOL" "$PK/iperf3/usr/bin/iperf3" "$PK/sockperf/usr/bin/sockperf")
LIBPATH=$(find "$PK" -type d -path "*/lib/$ARCH" -not -path '*/gdb/*' | tr '\n' ':')

# Shared-library closure of BINS resolved against the extracted packages only (ld.so --list).
step "resolve shared libraries of ${BINS[*]##*/}"
LIBS=$(for b in "${BINS[@]}"; do
	"$LDSO" --library-path "$LIBPATH" --list "$b" | tee /dev/stderr | awk '$2=="=>" {print $1, $3}'
done 2>"$OUT/ldd.log" | sort -u) || true
if grep -q 'not found' "$OUT/ldd.log" || [ -z "$LIBS" ]; then cat "$OUT/ldd.log"; die "unresolved libraries"; fi

# stage DIR MODDIR MODS... : common rootfs plus the listed kernel modules (in load order).
stage() {
	local dir=$1 moddir=$2 m f b name path
	shift 2
	rm -rf "$dir"
	mkdir -p "$dir"/{bin,sbin,usr/bin,usr/sbin,usr/local/bin,lib/$ARCH,lib64,lib/modules/kit} \
		"$dir"/{proc,sys,dev,tmp,run,root,etc,mnt,var/tmp}
	install -m755 "$BB" "$dir/bin/busybox"
	ln -s busybox "$dir/bin/sh"
	install -m755 "$INIT" "$dir/init"
	for b in "${BINS[@]}"; do install -m755 "$b" "$dir/usr/local/bin/"; done
	while read -r name path; do
		case $name in
		*/ld-linux-x86-64.so.2) install -m755 "$LDSO" "$dir/lib64/ld-linux-x86-64.so.2"
			ln -sf /lib64/ld-linux-x86-64.so.2 "$dir/lib/$ARCH/ld-linux-x86-64.so.2" ;;
		*) install -m644 "$(readlink -f "$path")" "$dir/lib/$ARCH/$name" ;;
		esac
	done <<<"$LIBS"
	printf 'root:x:0:0:root:/root:/bin/sh\n' >"$dir/etc/passwd"
	printf 'root:x:0:\n' >"$dir/etc/group"
	printf '127.0.0.1 localhost\n::1 localhost\n' >"$dir/etc/hosts"
	: >"$dir/lib/modules/kit/load-order"
	for m in "$@"; do
		f=$(find "$moddir" -name "$m.ko*" | head -n1)
		if [ -z "$f" ]; then
			grep -q "/$m.ko" "$moddir/modules.builtin" || die "module $m neither in $moddir nor built in"
			continue   # built into the kernel
		fi
		case $f in
		*.ko) cp "$f" "$dir/lib/modules/kit/$m.ko" ;;
		*.ko.xz) xz -dc "$f" >"$dir/lib/modules/kit/$m.ko" ;;
		*.ko.zst) zstd -qdc "$f" >"$dir/lib/modules/kit/$m.ko" ;;
		*.ko.gz) gzip -dc "$f" >"$dir/lib/modules/kit/$m.ko" ;;
		*) die "unknown module format $f" ;;
		esac
		echo "$m" >>"$dir/lib/modules/kit/load-order"
		echo "${f#"$PK"/}" >>"$OUT/modules.txt"
	done
}
# mkcpio DIR OUTPUT: newc cpio (owner root), gzip, atomic rename.
mkcpio() {
	(cd "$1" && find . | LC_ALL=C sort | "$BB" cpio -o -H newc -R 0:0 --renumber-inodes --ignore-devno 2>/dev/null) |
		gzip -6n >"$2.tmp"
	mv "$2.tmp" "$2"
}

: >"$OUT/modules.txt"
step "build uml-initrd.cpio.gz (modules: ${NETMODS[*]})"
stage "$OUT/stage-uml" "$UMLMODS" "${NETMODS[@]}"
mkcpio "$OUT/stage-uml" "$OUT/uml-initrd.cpio.gz"
if [ "$SUITE" = bookworm ]; then
	install -m755 "$PK/user-mode-linux/usr/bin/linux.uml" "$OUT/linux.uml"
else
	# The suite's glibc as the UML binary's interpreter and library path (ld.so LINUX.UML
	# does not work: UML re-executes /proc/self/exe, which would then be ld.so).
	command -v patchelf >/dev/null || die "patchelf is needed for $SUITE's linux.uml (apt-get install patchelf)"
	rm -rf "$OUT/uml-libc" && mkdir -p "$OUT/uml-libc"
	cp -a "$(dirname "$LDSO")"/. "$OUT/uml-libc/"
	install -m755 "$PK/user-mode-linux/usr/bin/linux.uml" "$OUT/linux.uml.tmp"
	patchelf --set-interpreter "$OUT/uml-libc/ld-linux-x86-64.so.2" --set-rpath "$OUT/uml-libc" \
		"$OUT/linux.uml.tmp"
	mv "$OUT/linux.uml.tmp" "$OUT/linux.uml"
fi

step "build qemu-initrd.cpio.gz (modules: ${QEMUMODS[*]})"
stage "$OUT/stage-qemu" "$QMODS" "${QEMUMODS[@]}"
mkcpio "$OUT/stage-qemu" "$OUT/qemu-initrd.cpio.gz"
install -m644 "$VMLINUZ" "$OUT/vmlinuz"

# Record exactly what went in: the suite, then "PACKAGE VERSION SHA256" of every .deb.
{
	echo "# vnetd guest kit: Debian $SUITE, $(awk '$1=="user-mode-linux" {print "UML " $2}' "$OUT/debs.list")"
	awk '{print $1, $2, $3}' "$OUT/debs.list"
} >"$OUT/MANIFEST"
echo "$STAMP" >"$OUT/.stamp"
step "done: $OUT ($(du -h "$OUT/uml-initrd.cpio.gz" | cut -f1) uml initrd, $(du -h "$OUT/qemu-initrd.cpio.gz" | cut -f1) qemu initrd)"
