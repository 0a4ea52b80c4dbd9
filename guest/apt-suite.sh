# shellcheck shell=bash
# guest/apt-suite.sh - sourced by fetch.sh and qemu.sh: suite_apt DIR SUITE exports APT_CONFIG
# naming a private apt configuration in DIR for Debian SUITE (the system's sources untouched).
# The mirror is the one of the system's bookworm sources (`apt-cache policy` prints it for both
# source formats); VNETD_DEBIAN_MIRROR overrides it.

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
