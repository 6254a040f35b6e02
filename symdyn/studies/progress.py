"""The progress bar, kept importable here: it lives in :mod:`symdyn.base.progress`
(layer 0) so that certify (layer 3) uses it too.

Layer 3, studies.
"""

from __future__ import annotations

from ..base.progress import LOG_EVERY, _clock, progress_bar

__all__ = ["LOG_EVERY", "_clock", "progress_bar"]
