"""Suite-wide test settings.

Hypothesis runs derandomized by default, so the suite (and CI) is reproducible: the same examples
every run. To search further for counterexamples, run with ``--hypothesis-profile=explore``
(fresh random examples each run).

The suite runs on the CPU, on a machine with a GPU too (a run's ``device`` "auto" would take it,
and a GPU's kernels are not bit-reproducible): torch is shown no CUDA device unless
``MADIAO_MAO_TEST_GPU=1`` asks for the tests that need one (``tests/common/test_device.py``).
"""

from __future__ import annotations

import os

from hypothesis import settings

if not os.environ.get("MADIAO_MAO_TEST_GPU"):
    # Read by CUDA when torch first asks for a device, which no import here has done yet.
    os.environ["CUDA_VISIBLE_DEVICES"] = ""

settings.register_profile("default", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile("default")
