# SPDX-License-Identifier: MIT
"""What the bench scripts (bench/*.py, each run by a make target or by hand) share; no bench
script is imported by another. Imported as bench.lib (the repository's top is the one import root,
see tests/kit/__init__.py); the test kit they drive guests and frontends with is tests.kit.

  common        logging, machine load, prerequisites, the pinned Vnetd, provenance, model benches
  gnuplot       running gnuplot
  measure       a guest on a vnetd tap port measured: profiles, iperf3, sockperf, CPU, IRQs
  report        make bench's summaries, targets, tables and chart
  coal          make bench's stall-guard and adaptive rows
  fixed         make bench's fixed-load rows (and bench_fixed.py --diag's measurements)
  fixed_chart   the fixed-load chart
  dp_procs      processes of the datapath benchmark: testpmd, the janitor, errors
  dp_stacks     its stacks (vnetd tap/xdp/switch, DPDK's vhost PMD, OVS) and measure()
  dp_callgrind  valgrind's counters and annotations
  dp_ovs        Open vSwitch with DPDK
  dp_report     its tables and charts
  workers_qpairs  bench/workers.py --queue-pairs
"""
