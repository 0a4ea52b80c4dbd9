# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# guest/apt-suite.sh - sourced by fetch.sh and qemu.sh: the download cache outside the checkout
# (cache_debs), and suite_apt DIR SUITE, a private apt configuration for a newer Debian suite.
#
# Cache: ${VNETD_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/vnetd}/debs/PKG_VERSION_ARCH.deb, each
# checked against the SHA256 of the package index before it is used; the private suites' package
# lists live there too (apt/SUITE), so a fresh clone reads nothing from the network when the
# cache holds what the index names. The mirror is the one of the system's bookworm sources
# (`apt-cache policy` prints it for both source formats); VNETD_DEBIAN_MIRROR overrides it.

vnetd_cache_dir() {
	echo "${VNETD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/vnetd}"
}

debian_mirror() {
	if [ -n "${VNETD_DEBIAN_MIRROR:-}" ]; then echo "$VNETD_DEBIAN_MIRROR"; return; fi
	APT_CONFIG=/dev/null apt-cache policy 2>/dev/null | awk '$3 ~ /^bookworm\/main$/ {print $2; exit}'
}

suite_apt() {
	local a=$1 suite=$2 mirror
	mkdir -p "$a/lists/partial" "$a/cache/archives/partial" "$a/sources.list.d"
	mirror=$(debian_mirror)
	[ -n "$mirror" ] || mirror=http://deb.debian.org/debian
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite main" \
		>"$a/sources.list"
	cat >"$a/apt.conf" <<-EOF
	Dir::Etc::sourcelist "$a/sources.list";
	Dir::Etc::sourceparts "$a/sources.list.d";
	Dir::State::Lists "$a/lists";
	Dir::Cache "$a/cache";
	Dir::State::status "/dev/null";
	EOF
	export APT_CONFIG=$a/apt.conf
}

# suite_lists_present: the current apt configuration has package lists at all.
suite_lists_present() {
	apt-cache show --no-all-versions busybox-static >/dev/null 2>&1
}

# pkg_index PKG... : "PKG VERSION ARCH SHA256 SIZE" of each package's candidate in the current
# package lists (one apt-cache call; names not in the lists are left out).
pkg_index() {
	apt-cache show --no-all-versions "$@" 2>/dev/null | awk '
		function out() { if (p && v && s) print p, v, a, s, z; p = v = a = s = z = "" }
		/^Package:/ {out(); p=$2} /^Version:/ {v=$2} /^Architecture:/ {a=$2}
		/^SHA256:/ {s=$2} /^Size:/ {z=$2} END {out()}'
}

# cache_path PKG VERSION ARCH: the cache's file name of that .deb.
cache_path() {
	echo "$(vnetd_cache_dir)/debs/${1}_${2//:/%3a}_$3.deb"
}

# cache_missing INDEX_FILE: the "PKG VERSION ARCH SHA256 SIZE" lines whose .deb is not in the
# cache with the index's SHA256.
cache_missing() {
	local p v a s z f
	while read -r p v a s z; do
		f=$(cache_path "$p" "$v" "$a")
		[ -f "$f" ] && [ "$(sha256sum <"$f" | cut -d' ' -f1)" = "$s" ] || echo "$p $v $a $s $z"
	done <"$1"
}

# cache_fetch MISSING_FILE LABEL: download those packages (one apt-get call, into a temporary
# directory first so an interrupted download never poisons the cache), check each against its
# SHA256, move it into the cache. Returns non-zero, with the log in $tmp/log, on failure.
cache_fetch() {
	local list=$1 label=$2 tmp p v a s z f rc=0
	tmp=$(mktemp -d "$(vnetd_cache_dir)/debs/.dl.XXXXXX")
	if ! (cd "$tmp" && awk '{print $1 "=" $2}' "$list" | xargs -r apt-get download -q \
			"${APT_DL_OPTS[@]}") >"$tmp/log" 2>&1; then
		tail -n 5 "$tmp/log" >&2
		rm -rf "$tmp"
		return 1
	fi
	while read -r p v a s z; do
		f=$(ls "$tmp/${p}_"*.deb 2>/dev/null | head -n1)
		if [ -z "$f" ] || [ "$(sha256sum <"$f" | cut -d' ' -f1)" != "$s" ]; then
			echo "cache: $p $v from $label does not match the index's SHA256 $s" >&2
			rc=1
			continue
		fi
		mv "$f" "$(cache_path "$p" "$v" "$a")"
	done <"$list"
	rm -rf "$tmp"
	return $rc
}

# cache_debs LABEL UPDATE_FN OUT_LIST PKG... : put each package's candidate .deb in the cache
# (downloading only what is missing or fails its index SHA256) and write "PKG VERSION SHA256
# PATH" lines to OUT_LIST. UPDATE_FN re-reads the package lists (called at most once: when a
# package is not in them, or its candidate can no longer be downloaded, as when sid moved on).
# LABEL names the suite in messages. Returns 0, or 77 with a message naming the package(s) and
# the suite.
cache_debs() {
	local label=$1 update_fn=$2 out=$3 p v a s z n got bytes old
	shift 3
	mkdir -p "$(vnetd_cache_dir)/debs"
	pkg_index "$@" >"$out.idx"
	if [ "$(wc -l <"$out.idx")" != $# ]; then
		"$update_fn"
		pkg_index "$@" >"$out.idx"
	fi
	for p in "$@"; do
		if ! grep -q "^$p " "$out.idx"; then
			echo "cache: package $p is not in $label's package index" >&2
			return 77
		fi
	done
	cache_missing "$out.idx" >"$out.need"
	n=$(wc -l <"$out.need")
	got=$n; bytes=$(awk '{b += $5} END {print b + 0}' "$out.need")
	if [ "$n" != 0 ] && ! cache_fetch "$out.need" "$label"; then
		# The lists may name versions the mirror no longer has: read them again, once.
		cp "$out.idx" "$out.old"
		"$update_fn"
		pkg_index "$@" >"$out.idx"
		cache_missing "$out.idx" >"$out.need"
		got=$(wc -l <"$out.need"); bytes=$(awk '{b += $5} END {print b + 0}' "$out.need")
		if ! cache_fetch "$out.need" "$label"; then
			while read -r p v a s z; do
				echo "$p $v $a $s $z" >"$out.one"
				cache_fetch "$out.one" "$label" >/dev/null 2>&1 ||
					echo "cache: cannot download $p $v from $label ($(debian_mirror))" >&2
			done <"$out.need"
			return 77
		fi
		while read -r p v a s z; do
			old=$(awk -v p="$p" '$1==p {print $2}' "$out.old")
			[ -z "$old" ] || [ "$old" = "$v" ] ||
				echo "cache: $label no longer has $p $old; built from the version it serves now, $v" >&2
		done <"$out.idx"
	fi
	while read -r p v a s z; do
		echo "$p $v $s $(cache_path "$p" "$v" "$a")"
	done <"$out.idx" >"$out"
	rm -f "$out.idx" "$out.need" "$out.old" "$out.one"
	if [ "$got" = 0 ]; then
		echo "cache: $label: all $# packages from the cache $(vnetd_cache_dir)/debs (SHA256 checked), nothing downloaded" >&2
	else
		echo "cache: $label: downloaded $got of $# packages ($((bytes / 1048576)) MB) into $(vnetd_cache_dir)/debs" >&2
	fi
}
