"""Code shared by the Madiao and Mao environments: JIT configuration, bit kernels, AEC scaffolding."""

from cardgame_core.version import __version__

__all__ = ["__version__"]
