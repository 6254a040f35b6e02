"""The value every check returns, and the verdict rule.

A check is PASS only if it tried something: an empty evidence table, or a
method that was planned but did not run, is a FAIL, never a vacuous PASS.
``kind`` says what a PASS means: ``"checked numerically"`` (floats within a
tolerance) or ``"certified"`` (proved in ball arithmetic, :mod:`symdyn.certify`).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field

#: What a verdict rests on: floats within a tolerance, or a proof in ball arithmetic.
KINDS = ("checked numerically", "certified")


@dataclass
class Result:
    """Statement, parameters, evidence table, verdict and tolerance of one claim."""

    name: str
    statement: str
    parameters: dict
    tolerance: str
    methods: list[str]
    evidence: list[dict] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    key_figures: str = ""
    methods_run: set = field(default_factory=set)
    kind: str = "checked numerically"

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind: expected one of {KINDS}, got {self.kind!r}")

    def row(self, method: str, ok: bool, **values) -> None:
        """Add one evidence row; a row that is not ok fails the check."""
        if method not in self.methods:
            raise ValueError(f"method {method!r} is not one of {self.methods}")
        self.methods_run.add(method)
        self.evidence.append({"method": method, "ok": bool(ok), **values})
        if not ok:
            self.failures.append(f"{method}: " + ", ".join(
                f"{k}={_short(v)}" for k, v in values.items()))

    @property
    def verdict(self) -> str:
        if not self.evidence or self.failures:
            return "FAIL"
        if set(self.methods) - self.methods_run:
            return "FAIL"
        return "PASS"

    def why(self) -> str:
        if not self.evidence:
            return "no evidence was produced"
        missing = set(self.methods) - self.methods_run
        if missing:
            return f"methods that did not run: {sorted(missing)}"
        if self.failures:
            return f"{len(self.failures)} failing row(s), first: {self.failures[0]}"
        return ""

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("methods_run")
        d["verdict"] = self.verdict
        d["why"] = self.why()
        return json.loads(json.dumps(d, default=_jsonable))


def _short(v):
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _jsonable(v):
    if isinstance(v, (set, tuple)):
        return list(v)
    try:
        f = float(v)
        return f if math.isfinite(f) else str(f)
    except (TypeError, ValueError):
        return str(v)
