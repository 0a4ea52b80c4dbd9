# SPDX-License-Identifier: MIT
"""The test kit that tests/e2e and bench/ share: import it as tests.kit (the repository's top is
the one import root: the Makefile and tests/e2e/run_all.py put it on PYTHONPATH; by hand,
`PYTHONPATH=. python3 tests/e2e/...` or `python3 -m tests.e2e....` from the top).

  harness            vnetd and vnetctl from the build (VNETD_BUILD), network namespaces, taps,
                     checks and skips, host servers, the guests below re-exported
  guest              UML and QEMU guests: boot, run commands, console
  kits               guest kits: kernels and root filesystems (guest/fetch.sh, guest/qemu.sh), which
                     UML kernels boot on this CPU
  vhost_user_client  a vhost-user frontend and a split-ring virtio-net driver in Python
  vu_packed          the same driver's packed rings
  hostile_env        the hostile-frontend environment: a vnetd with switch ports, cases, results
  hostile_packed_env the same for packed rings
  fairness           fake frontends whose rings a C spinner keeps full (ringspin.c)
  migration          QEMU migration: QMP, incoming guests, RAM comparison
  rss                the RSS probe in the guest (rxhash_probe.c) and its flow checks
  vlan_host          the host end of the VLAN trunk test (run in a namespace)
"""
