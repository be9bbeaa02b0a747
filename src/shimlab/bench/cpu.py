"""Which CPU a figure was measured on: the model name and, for the
microarchitectures this lab has met, their name (Zen 3, 4, 5), read from
/proc/cpuinfo's family and model.  Findings are kept per CPU, never merged."""
from __future__ import annotations

from . import counters
from .results import _cpuinfo

# AMD family 25 (0x19) holds Zen 3 (models 00-0F, 20-2F, 40-5F) and Zen 4 (10-1F,
# 60-7F, A0-AF); family 26 (0x1A) is Zen 5
_ZEN3_MODELS = set(range(0x00, 0x10)) | set(range(0x20, 0x30)) | set(range(0x40, 0x60))


def microarchitecture(vendor: str, family: int | None, model: int | None) -> str | None:
    if vendor != "AuthenticAMD" or family is None or model is None:
        return None
    if family == 25:
        return "Zen 3" if model in _ZEN3_MODELS else "Zen 4"
    if family == 26:
        return "Zen 5"
    if family == 23:
        return "Zen 2" if model >= 0x30 else "Zen/Zen+"
    return None


def identify() -> dict:
    """{"name": one line for a report, "model", "family", "model_number", "uarch"}."""
    info = _cpuinfo()

    def num(key):
        try:
            return int(info.get(key, ""))
        except ValueError:
            return None
    family, model = num("cpu family"), num("model")
    uarch = microarchitecture(info.get("vendor_id", ""), family, model)
    name = info.get("model name", "unknown CPU").strip()
    detail = ", ".join(x for x in (uarch, family is not None and f"family {family}",
                                   model is not None and f"model {model}") if x)
    return {"name": f"{name} ({detail})" if detail else name, "model": name, "family": family,
            "model_number": model, "uarch": uarch}


def counters_note() -> str:
    ok, why = counters.event_counters()
    return why if ok else f"cycles, instructions and branch-misses {why}"
