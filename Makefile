# SPDX-License-Identifier: MIT
# Makefile - front door: build, test, fuzz, demo and benchmark (meson + ninja underneath).
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_RUNS  ?= 20000
FUZZ_SECONDS ?= 600
PYTHON     ?= python3
PREFIX     ?= /usr/local
DESTDIR    ?=
export VNETD_BUILD := $(abspath $(BUILD))
# The one Python import root: tests and benchmarks import the test kit as tests.kit and the bench
# library as bench.lib (tests/kit/__init__.py); by hand: PYTHONPATH=. python3 tests/e2e/...
export PYTHONPATH := $(CURDIR)$(addprefix :,$(filter-out $(CURDIR),$(subst :, ,$(PYTHONPATH))))

.PHONY: all deps build check docs-check unit asan fuzz-smoke fuzz e2e demo doctor soak bench \
	bench-fairness bench-datapath bench-scale bench-workers bench-coal-causes bench-offload install \
	bench-migration bench-fdb-flood bench-rate clean deb deb-check check-migration-qemu72 tsan \
	fuzz-proto check-ovn bench-ovn bench-efficiency

all: build

# The Debian packages of tools/deps.txt (build, tests, demo, benchmarks): installs the missing
# ones (needs root), a no-op when all are there.
deps:
	tools/deps.sh

$(BUILD)/build.ninja:
	meson setup $(BUILD)

build: $(BUILD)/build.ninja
	ninja -C $(BUILD)

unit: build
	meson test -C $(BUILD) --print-errorlogs

$(ASAN_BUILD)/build.ninja:
	meson setup $(ASAN_BUILD) -Db_sanitize=address,undefined -Db_lundef=false -Dguest_race=true

asan: $(ASAN_BUILD)/build.ninja
	ninja -C $(ASAN_BUILD)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		meson test -C $(ASAN_BUILD) --print-errorlogs
	# The hostile-frontend test against vnetd built with ASan+LSan+UBSan (no seccomp there).
	VNETD_BUILD=$(abspath $(ASAN_BUILD)) VNETD_EXTRA_ARGS=--no-sandbox \
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		$(PYTHON) tests/e2e/hostile/test_hostile_frontend.py
	# The same for packed rings (a packed driver in Python against three packed switch ports).
	VNETD_BUILD=$(abspath $(ASAN_BUILD)) VNETD_EXTRA_ARGS=--no-sandbox \
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		$(PYTHON) tests/e2e/hostile/test_hostile_packed.py
	# Hostile virtio-net offload headers (three switch ports, Python drivers) likewise.
	VNETD_BUILD=$(abspath $(ASAN_BUILD)) VNETD_EXTRA_ARGS=--no-sandbox \
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		$(PYTHON) tests/e2e/hostile/test_hostile_offloads.py
	# The migration protocol paths (dirty log, device-state streams, SIGBUS on the log) likewise.
	VNETD_BUILD=$(abspath $(ASAN_BUILD)) VNETD_EXTRA_ARGS=--no-sandbox \
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		$(PYTHON) tests/e2e/features/test_device_state.py
	# RSS settings through DEVICE_STATE and --state-dir, hostile ones too, likewise.
	VNETD_BUILD=$(abspath $(ASAN_BUILD)) VNETD_EXTRA_ARGS=--no-sandbox \
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		$(PYTHON) tests/e2e/features/test_rss_persist.py

$(FUZZ_BUILD)/build.ninja:
	CC=clang meson setup $(FUZZ_BUILD) -Dfuzz=true

fuzz-smoke: $(FUZZ_BUILD)/build.ninja
	ninja -C $(FUZZ_BUILD)
	tools/run-fuzzers.sh $(FUZZ_BUILD) runs $(FUZZ_RUNS)

fuzz: $(FUZZ_BUILD)/build.ninja
	ninja -C $(FUZZ_BUILD)
	tools/run-fuzzers.sh $(FUZZ_BUILD) seconds $(FUZZ_SECONDS)

# Only fuzz_vhost_proto (whole frontends, their guests and a racing second vCPU against vhost-user,
# devices and switch) for FUZZ_SECONDS, from its seeds, the corpus kept in
# $(FUZZ_BUILD)/fuzz-corpus/vhost_proto (a later run goes on from it); crashes in fuzz-artifacts.
fuzz-proto: $(FUZZ_BUILD)/build.ninja
	ninja -C $(FUZZ_BUILD) tests/fuzz/fuzz_vhost_proto
	mkdir -p $(FUZZ_BUILD)/fuzz-corpus/vhost_proto $(FUZZ_BUILD)/fuzz-artifacts
	$(FUZZ_BUILD)/tests/fuzz/fuzz_vhost_proto -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
		-artifact_prefix=$(FUZZ_BUILD)/fuzz-artifacts/fuzz_vhost_proto- \
		$(FUZZ_BUILD)/fuzz-corpus/vhost_proto tests/fuzz/corpus/vhost_proto

e2e: build
	$(PYTHON) tests/e2e/run_all.py

# Every results file and relative link the docs name exists, and results/README.md indexes every
# results file; src/'s includes follow docs/design.md's layer table, without a cycle; every src file
# has its SPDX and purpose lines and every non-static function a kernel-doc block (a second).
docs-check:
	$(PYTHON) tools/check_docs.py
	$(PYTHON) tools/check_layers.py
	$(PYTHON) tools/check_docs_c.py

check: docs-check deps
	$(MAKE) unit asan fuzz-smoke e2e

demo: deps
	$(MAKE) build
	$(PYTHON) tools/demo.py

# What this host can do, a line per item with what to do on a "no": which UML kernels boot on
# this CPU, QEMU/TCG, KVM (measured), namespaces, taps, hugepages, Prometheus, DPDK, OVS.
doctor: build
	$(PYTHON) tools/doctor.py

# Coalescing profiles set by the guests' own ethtool -C: UML 6.1 and QEMU 11 full-device (sid's
# QEMU, fetched by guest/qemu.sh), the stall-guard and adaptive rows (UML 6.1 and 7.2 with 1 GB:
# stall guard on/off, vnetd adaptive, the 7.2 driver's DIM; "targets"), then the QEMU 7.2 peer.
# BENCH_ARGS e.g. "--guest uml-7.2", "--no-coal", or "--coal-only" (merged into results/latest.*).
bench: build
	$(PYTHON) bench/coalescing.py --guest uml,qemu-full $(BENCH_ARGS)
	$(PYTHON) bench/fairness.py

# Idle ports: vnetd CPU per second and RSS per port at 1, 64, 256, 1024 connected ports.
bench-scale: build
	$(PYTHON) bench/scale.py $(SCALE_ARGS)
	$(PYTHON) bench/scale.py --counts 1,1024 --extra "--workers 2" --name scale-workers2 $(SCALE_ARGS)

# Two busy tap ports: aggregate TX frames/s with --workers 1 vs 2 (about a minute); then two
# switch port pairs (a->b, c->d): frames/s received, --workers 1 vs 2 with each pair on one
# worker and each pair across the two (about two minutes; results/workers-switch-latest.*).
# Then one switch port's 2 queue pairs on 2 workers vs on 1 (queue-workers=), driven by DPDK
# testpmd virtio-user queues=2 (results/workers-qpairs-latest.json).
bench-workers: build
	$(PYTHON) bench/workers.py $(WORKERS_ARGS)
	$(PYTHON) bench/workers.py --switch $(WORKERS_ARGS)
	$(PYTHON) bench/workers.py --queue-pairs $(WORKERS_ARGS)

# A switch pair's throughput while another port sends from random source MACs (FDB_FLOOD_ARGS,
# e.g. --before DIR to run an older build alongside); results/fdb-flood-latest.{json,png}.
bench-fdb-flood: build
	$(PYTHON) bench/fdb_flood.py $(FDB_FLOOD_ARGS)

# Per-port rate limits on a switch pair: rate achieved vs set at 100 Mbit/s and 1 Gbit/s for
# guest TX and RX, and the limiter's callgrind instructions per packet (about 2 minutes;
# results/rate-latest.{json,png}). Options: RATE_ARGS="--seconds N".
bench-rate: build
	$(PYTHON) bench/rate.py $(RATE_ARGS)

# Guest-to-guest bulk TCP (two UML 7.2 guests, iperf3) through vnetd's switch with offloads, with
# offloads=off, and through two vnetd taps on a Linux bridge in a namespace: Gbit/s and vnetd's and
# the guests' CPU per Gbit, reps interleaved (about 3 minutes; results/offload-latest.{json,png}).
# Options: OFFLOAD_ARGS="--reps N --seconds S", "--perf" (where the time goes, perf cpu-clock).
bench-offload: build
	$(PYTHON) bench/offload.py $(OFFLOAD_ARGS)

# vnetd against polling peers at every load: the paced driver (bench/paced/, on CPU 1) offers 1-90 %
# of vnetd's maximum rate frame by frame and closed loops of 1-128 frames in flight per port to
# vnetd (defaults, --poll-us N), OVS-DPDK 3.1 with and without pmd-maxsleep (installs Debian's
# openvswitch-switch-dpdk if missing) and DPDK's vhost PMD, each on CPU 0: backend CPU, loss,
# latency, wake-ups per packet, reps interleaved (about 40 minutes; results/efficiency-latest.*).
# EFFICIENCY_ARGS="--quick" for a smoke run (about 4 minutes), "--configs vnetd,vnetd-poll50,dpdk".
bench-efficiency: build
	$(PYTHON) bench/efficiency.py $(EFFICIENCY_ARGS)

# One flooding guest vs the others: control-socket RTT and throughput (about 1.5 minutes).
bench-fairness: build
	$(PYTHON) bench/fairness.py

# Where a static AGGRESSIVE profile loses bulk TCP: RX and TX holds apart, guests of 256 MB and
# 1 GB (about 5 minutes; results/coal-causes-latest.*). Options: COAL_CAUSES_ARGS="--reps N".
bench-coal-causes: build
	$(PYTHON) bench/coal_causes.py $(COAL_CAUSES_ARGS)

# vnetd vs DPDK's vhost PMD, virtio-user (testpmd) as the source; another vnetd: BUILD=/path/to/build.
# Options: DATAPATH_ARGS="--quick" (or --sizes, --backends, --no-peer, --callgrind-only, ...).
# Then RSS off / on / with hash report, instructions per received packet (callgrind, seconds).
bench-datapath: build
	$(PYTHON) bench/datapath.py $(DATAPATH_ARGS)
	$(PYTHON) bench/rss_cost.py

# Live migration of a 512 MB TCG guest on sid's QEMU 11: downtime and total time, vnetd vs QEMU's
# tap with the same shared-memfd RAM (~5 min), and the dirty log's cost per packet (callgrind,
# seconds). MIGRATION_ARGS adds options ("--reps N", "--port-extra ,migrate-state=off");
# MIGRATION_QEMU="--qemu system" for Debian 12's QEMU 7.2 (which loses pages under TCG).
MIGRATION_QEMU ?= --qemu sid --tap-memfd
bench-migration: build
	$(PYTHON) bench/migration.py $(MIGRATION_QEMU) $(MIGRATION_ARGS)
	$(PYTHON) bench/dirty_log_cost.py

# test_migration's cases 1 and 2 on Debian 12's QEMU 7.2 (make check runs them on sid's QEMU 11):
# 7.2 loses guest pages in TCG migrations by itself, so its destination guest crashes or stalls
# now and then (docs/migration.md); guest RAM differences are printed, not asserted.
check-migration-qemu72: build
	$(PYTHON) tests/e2e/features/test_migration.py --qemu72

# vnetd guests as OVN ports (docs/ovn.md): central and two chassis (OVS userspace datapath) in
# namespaces, DHCP, ACL, port security, coalescing, a QEMU guest's live migration with
# activation-strategy=rarp (about 1.5 minutes; not in make check). Needs tools/deps.txt's OVN.
check-ovn: build
	$(PYTHON) tests/e2e/ovn/test_ovn.py

# A UML guest pair across two hosts through OVN (Geneve) beside the same pair through a Linux
# bridge + VXLAN, interleaved reps (results/ovn-latest.json). OVN_ARGS e.g. "--reps 5".
bench-ovn: build
	$(PYTHON) bench/ovn.py $(OVN_ARGS)

# ThreadSanitizer on the multi-worker paths (not in make check: about a minute): vnetd built with
# clang's TSan in TSAN_BUILD (gcc 12 refuses the rings' atomic fences under -fsanitize=thread),
# run with --workers 2 --no-sandbox by tests/e2e/features/tsan_workers.py's Python frontends (no QEMU):
# split and packed ports on both workers all logging dirty pages (log resize, LOG_ALL off and
# on, a SIGBUS on worker 1); two queues=2 ports with queue-workers=0+1 (sender's pair, then
# VQ_PAIRS_SET 2, a frontend killed mid-traffic); floods and cross-worker unicasts from five
# ports while a sixth comes and goes; vnetctl stats, ports, coalesce and /metrics meanwhile.
# Fails on a TSan report (halt_on_error=1; no suppressions), a frame lost, reordered or
# corrupted, or a dirty page not logged. TSAN_ARGS e.g. "--scenarios 2 --frames 50000".
TSAN_BUILD ?= build-tsan
$(TSAN_BUILD)/build.ninja:
	CC=clang meson setup $(TSAN_BUILD) -Db_sanitize=thread -Db_lundef=false

tsan: $(TSAN_BUILD)/build.ninja
	ninja -C $(TSAN_BUILD) vnetd vnetctl
	VNETD_BUILD=$(abspath $(TSAN_BUILD)) \
		TSAN_OPTIONS=halt_on_error=1:history_size=7:second_deadlock_stack=1 \
		$(PYTHON) tests/e2e/features/tsan_workers.py $(TSAN_ARGS)

# 10 minutes (SOAK_SECONDS) against the ASan+UBSan build with --workers 2: two UML guests transfer
# byte-exact on tap ports while every hostile-frontend case loops on two switch ports of the same
# vnetd; bytes lost, RSS and fds at start and end, control RTT p99 (results/soak-latest.*).
soak: $(ASAN_BUILD)/build.ninja build
	ninja -C $(ASAN_BUILD)
	# A small quarantine (default 256 MB of freed memory held back): RSS then shows what vnetd keeps.
	VNETD_BUILD=$(abspath $(ASAN_BUILD)) VNETD_EXTRA_ARGS="--no-sandbox --workers 2" \
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:quarantine_size_mb=8 \
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 $(PYTHON) bench/soak.py $(SOAK_ARGS)

# Binaries, man pages (scdoc), the systemd unit and the docs under $(DESTDIR)$(PREFIX).
install: build
	meson configure $(BUILD) -Dprefix=$(PREFIX)
	DESTDIR="$(DESTDIR)" meson install -C $(BUILD)

# The Debian packages vnetd and vnetd-dbgsym (debian/, dpkg-buildpackage -us -uc -b), built in a
# temporary copy of the tree (tracked and untracked files, not the ignored ones) so this one stays
# clean; the .deb, .buildinfo and .changes land in DEB_OUT.
DEB_OUT ?= $(abspath $(BUILD))/deb
deb:
	@tmp=$$(mktemp -d /tmp/vnetd-deb.XXXXXX) && src=$$tmp/vnetd && mkdir $$src && \
	git ls-files -z -c -o --exclude-standard | tar --null -T - --ignore-failed-read -cf - | \
		tar -xf - -C $$src && \
	(cd $$src && dpkg-buildpackage -us -uc -b) && \
	mkdir -p $(DEB_OUT) && rm -f $(DEB_OUT)/vnetd*.deb && \
	cp $$tmp/*.deb $$tmp/*.buildinfo $$tmp/*.changes $(DEB_OUT)/; \
	rc=$$?; rm -rf $$tmp; ls $(DEB_OUT); exit $$rc

# tests/e2e/tree/test_deb.py alone (also in make check): make deb, lintian, dpkg -i, vnetd --version,
# the unit's ExecStart by hand, dpkg --purge leaving nothing behind. Needs root.
deb-check:
	$(PYTHON) tests/e2e/tree/test_deb.py

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
