"""madiao-mao: the distribution's namespace for its generic layers.

The repository keeps ``agents/``, ``training/`` and ``benchmarks/`` at its top level, but installs
them as ``madiao_mao.agents``, ``madiao_mao.training`` and ``madiao_mao.benchmarks`` (pyproject's
``package-dir``), so the wheel claims no generic top-level import name that a research project's own
``agents/`` or ``training/`` folder would shadow. The games stay ``madiao_env`` and ``mao_env``.
"""

from pathlib import Path

from cardgame_core.version import __version__

# In a source checkout used without installing (PYTHONPATH=checkout), the three folders sit beside
# this one rather than inside it: let the package find them there. Installed, they are inside it and
# this adds nothing that is searched first.
_CHECKOUT = Path(__file__).resolve().parent.parent
if (_CHECKOUT / "pyproject.toml").is_file() and (_CHECKOUT / "training" / "__init__.py").is_file():
    __path__.append(str(_CHECKOUT))

__all__ = ["__version__"]
