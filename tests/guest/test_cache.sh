#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/guest/test_cache.sh - the guest kits' download cache (guest/apt-suite.sh: cache_debs)
# against stub apt-cache / apt-get commands and a fake package index: no network, a second.
# Checks: a first run downloads, a second downloads nothing; a cached file that fails its SHA256
# is fetched again; a version the suite no longer has is replaced by the one it serves after
# the lists are read again, and that is said; when nothing can be downloaded the error names
# the package and the suite and the status is 77. Prints "N passed, N failed".
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
ok() { if eval "$2"; then echo "ok   $1"; pass=$((pass + 1)); else echo "FAIL $1"; fail=$((fail + 1)); fi; }

# The fake suite: each package's .deb content is "PKG VERSION"; the index names that content's
# SHA256. $T/mirror/PKG_VERSION exists for the versions the "mirror" still serves.
mkdir -p "$T/bin" "$T/mirror"
index() {  # index PKG=VERSION... : write the fake index and the mirror's files
	: >"$T/index"
	for pv in "$@"; do
		p=${pv%%=*} v=${pv#*=}
		printf '%s %s\n' "$p" "$v" >"$T/mirror/${p}_$v"
		printf 'Package: %s\nVersion: %s\nArchitecture: amd64\nSize: 10\nSHA256: %s\n\n' "$p" "$v" \
			"$(printf '%s %s\n' "$p" "$v" | sha256sum | cut -d' ' -f1)" >>"$T/index"
	done
}
cat >"$T/bin/apt-cache" <<'EOF'
#!/bin/bash
# stub: apt-cache show --no-all-versions PKG... from $FAKE/index
shift 2
for p; do awk -v p="$p" 'BEGIN{RS=""; ORS="\n\n"} $0 ~ ("^Package: " p "\n") {print}' "$FAKE/index"; done
EOF
cat >"$T/bin/apt-get" <<'EOF'
#!/bin/bash
# stub: apt-get download [opts] PKG=VERSION... : from $FAKE/mirror, counted in $FAKE/downloads
args=()
for a; do case $a in download|-q|-o|APT::*) ;; *) args+=("$a") ;; esac; done
for pv in "${args[@]}"; do
	p=${pv%%=*} v=${pv#*=}
	[ -e "$FAKE/mirror/${p}_$v" ] || { echo "E: Failed to fetch ${p}_$v 404 Not Found"; exit 100; }
	cp "$FAKE/mirror/${p}_$v" "./${p}_${v}_amd64.deb"
	echo "$pv" >>"$FAKE/downloads"
done
EOF
chmod +x "$T/bin/apt-cache" "$T/bin/apt-get"
export FAKE=$T PATH=$T/bin:$PATH VNETD_CACHE_DIR=$T/cache VNETD_DEBIAN_MIRROR=http://mirror.invalid/debian
# shellcheck source=guest/apt-suite.sh
. "$TOP/guest/apt-suite.sh"
APT_DL_OPTS=()
UPDATES=0
update_to=()    # what "apt-get update" makes the index say
fake_update() { UPDATES=$((UPDATES + 1)); [ ${#update_to[@]} -eq 0 ] || index "${update_to[@]}"; }
run() { : >"$T/downloads"; cache_debs sid fake_update "$T/list" "$@" 2>"$T/err"; rc=$?; cat "$T/err"; }

index ethtool=1:7.2-1 iperf3=3.22-0.1
run ethtool iperf3
ok 'first run: both packages downloaded' '[ $rc = 0 ] && [ "$(wc -l <"$T/downloads")" = 2 ]'
ok 'the list names version, SHA256 and the cached file' \
	'grep -q "^ethtool 1:7.2-1 [0-9a-f]\{64\} $T/cache/debs/ethtool_1%3a7.2-1_amd64.deb$" "$T/list"'
run ethtool iperf3
ok 'second run: nothing downloaded, and it says so' \
	'[ $rc = 0 ] && [ ! -s "$T/downloads" ] && grep -q "nothing downloaded" "$T/err"'

echo corrupt >"$T/cache/debs/iperf3_3.22-0.1_amd64.deb"
run ethtool iperf3
ok 'a cached file failing its SHA256 is fetched again (only that one)' \
	'[ $rc = 0 ] && [ "$(cat "$T/downloads")" = "iperf3=3.22-0.1" ]'

# sid moved on: the lists still name ethtool 1:7.2-1, the mirror has only 1:7.3-1.
rm "$T/mirror/ethtool_1:7.2-1" "$T/cache/debs/ethtool_1%3a7.2-1_amd64.deb"
update_to=(ethtool=1:7.3-1 iperf3=3.22-0.1)
UPDATES=0
run ethtool iperf3
ok 'a version sid no longer has: lists read again once, built from what it serves' \
	'[ $rc = 0 ] && [ $UPDATES = 1 ] && grep -q "^ethtool 1:7.3-1 " "$T/list"'
ok 'and it says so' 'grep -q "sid no longer has ethtool 1:7.2-1; built from the version it serves now, 1:7.3-1" "$T/err"'

# Nothing can be downloaded: the error names the package and the suite, status 77.
rm -f "$T/mirror"/* "$T/cache/debs"/*.deb
update_to=()
run ethtool iperf3
ok 'nothing downloadable: status 77' '[ $rc = 77 ]'
ok 'the error names the package, its version and the suite' \
	'grep -q "cannot download ethtool 1:7.3-1 from sid (http://mirror.invalid/debian)" "$T/err"'

index ethtool=1:7.3-1
run ethtool no-such-package
ok 'a package not in the index: status 77, named' \
	'[ $rc = 77 ] && grep -q "package no-such-package is not in sid" "$T/err"'

echo "$pass passed, $fail failed"
[ $fail = 0 ]
