# SPDX-License-Identifier: MIT
"""Transition alias of tests.kit.guest for tools/demo.py, tools/doctor.py and tools/fuzz_seed_vhost.py,
which still put tests/e2e on sys.path and `import guest`; needs the repository's top on PYTHONPATH
(the Makefile sets it). Delete once tools/ imports tests.kit.guest. Nothing in tests/ or bench/
imports this."""

import sys

from tests.kit import guest

sys.modules[__name__] = guest
