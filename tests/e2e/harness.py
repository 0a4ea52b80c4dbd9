# SPDX-License-Identifier: MIT
"""Transition alias of tests.kit.harness for tools/demo.py, tools/doctor.py and tools/fuzz_seed_vhost.py,
which still put tests/e2e on sys.path and `import harness`; needs the repository's top on PYTHONPATH
(the Makefile sets it). Delete once tools/ imports tests.kit.harness. Nothing in tests/ or bench/
imports this."""

import sys

from tests.kit import harness

sys.modules[__name__] = harness
