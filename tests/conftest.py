"""Suite-wide test settings.

Hypothesis runs derandomized by default, so the suite (and CI) is reproducible: the same examples
every run. To search further for counterexamples, run with ``--hypothesis-profile=explore``
(fresh random examples each run).
"""

from __future__ import annotations

from hypothesis import settings

settings.register_profile("default", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile("default")
