#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# deps.sh - install the Debian packages of tools/deps.txt that are missing (a no-op when none is).
# Usage: tools/deps.sh [--check]   (--check: only report, exit 1 if something is missing)
set -euo pipefail
list="$(dirname "$0")/deps.txt"
mapfile -t want < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$list" | grep -v '^$')
missing=()
for pkg in "${want[@]}"; do
	status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null || true)
	[ "${status:0:2}" = ii ] || missing+=("$pkg")
done
# The fuzz and ASan builds call `clang`; Debian 12's clang-14 installs only clang-14.
need_clang_link=0
command -v clang >/dev/null 2>&1 || need_clang_link=1
if [ ${#missing[@]} -eq 0 ] && [ $need_clang_link -eq 0 ]; then
	echo "deps: all ${#want[@]} packages of tools/deps.txt are installed"
	exit 0
fi
if [ "${1:-}" = --check ]; then
	echo "deps: missing: ${missing[*]}$([ $need_clang_link -eq 1 ] && echo ' (and a clang -> clang-14 link)')"
	exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "deps: missing packages: ${missing[*]:-none}" >&2
	[ $need_clang_link -eq 1 ] && echo "deps: and no 'clang' command (ln -s /usr/bin/clang-14 /usr/local/bin/clang)" >&2
	echo "deps: installing them needs root: run 'sudo make deps', or as root:" >&2
	echo "    apt-get install -y --no-install-recommends ${missing[*]}" >&2
	exit 1
fi
if [ ${#missing[@]} -gt 0 ]; then
	echo "deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if ! command -v clang >/dev/null 2>&1; then
	ln -sf /usr/bin/clang-14 /usr/local/bin/clang
	echo "deps: linked /usr/local/bin/clang -> clang-14"
fi
