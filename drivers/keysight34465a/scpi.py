"""Parsing what a Keysight DMM sends back: definite-length blocks, readings, error entries.

Kept apart from the I/O so that malformed replies are tested without an instrument.
"""

from __future__ import annotations

import numpy as np

# Keysight DMMs report an over-range reading as ±9.9E37 and "not a number" as 9.91E37.
OVERLOAD_THRESHOLD = 9.0e37


class ReplyError(ValueError):
    """The instrument's reply did not have the expected shape."""


def parse_block(reply: str) -> str:
    """Payload of an IEEE 488.2 block ``#<n><length><data>`` (``#0<data>`` = indefinite)."""
    if not reply.startswith("#") or len(reply) < 2 or not reply[1].isdigit():
        raise ReplyError(f"expected a '#' block, got {reply[:40]!r}")
    digits = int(reply[1])
    if digits == 0:
        return reply[2:]
    header_end = 2 + digits
    length_text = reply[2:header_end]
    if len(length_text) != digits or not length_text.isdigit():
        raise ReplyError(f"bad block header {reply[:header_end]!r}")
    length = int(length_text)
    payload = reply[header_end:]
    if len(payload) != length:
        raise ReplyError(
            f"block header announces {length} bytes but {len(payload)} arrived (reply truncated?)"
        )
    return payload


def parse_readings(payload: str) -> np.ndarray:
    """Comma-separated ASCII readings as float64 (overloads still as ±9.9E37)."""
    payload = payload.strip()
    if not payload:
        return np.empty(0, dtype=np.float64)
    try:
        return np.array([float(token) for token in payload.split(",")], dtype=np.float64)
    except ValueError:
        bad = next(t for t in payload.split(",") if not _is_float(t))
        raise ReplyError(f"reading {bad!r} is not a number") from None


def mask_overloads(values: np.ndarray) -> tuple[np.ndarray, int]:
    """Overload and NaN markers replaced by NaN, and how many there were.

    An overloaded reading says only "more than the range"; turning it into a number would
    silently bias every mean computed from it.
    """
    bad = ~np.isfinite(values) | (np.abs(values) >= OVERLOAD_THRESHOLD)
    if not bad.any():
        return values, 0
    return np.where(bad, np.nan, values), int(bad.sum())


def parse_error(reply: str) -> tuple[int, str]:
    """``+0,"No error"`` → ``(0, "No error")``."""
    code_text, _, message = reply.strip().partition(",")
    try:
        code = int(code_text)
    except ValueError:
        raise ReplyError(f"expected '<code>,\"<message>\"' from SYST:ERR?, got {reply!r}") from None
    return code, message.strip().strip('"')


def parse_int(reply: str) -> int:
    try:
        return int(float(reply))
    except ValueError:
        raise ReplyError(f"expected a number, got {reply!r}") from None


def format_number(value: float) -> str:
    """A number as SCPI text, short and exact enough (``0.1``, ``1E-06``)."""
    return f"{value:.10G}"


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
