"""SCPI syntax as a Keysight Truevolt meter reads it: long and short header forms, optional
nodes, numbers with MIN/MAX/DEF, booleans, and the numbered errors a bad command earns. The
simulated meter's command set (:mod:`hilbench.sim.meter`) is built on it."""

from __future__ import annotations


class ScpiError(Exception):
    """A command the instrument refuses: its SCPI error code and message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"{code},{message}")
        self.code = code
        self.message = message


# Every accepted SCPI node, long and short form, mapped to its short form.
NODES = {
    long_form: short
    for long_form, short in [
        ("SENSE", "SENS"), ("CURRENT", "CURR"), ("VOLTAGE", "VOLT"), ("DC", "DC"),
        ("RANGE", "RANG"), ("AUTO", "AUTO"), ("UPPER", "UPP"), ("NPLCYCLES", "NPLC"),
        ("ZERO", "ZERO"), ("SAMPLE", "SAMP"), ("TIMER", "TIM"), ("COUNT", "COUN"),
        ("SOURCE", "SOUR"), ("TRIGGER", "TRIG"), ("DELAY", "DEL"), ("SYSTEM", "SYST"),
        ("ERROR", "ERR"), ("NEXT", "NEXT"), ("LFREQUENCY", "LFR"), ("STATUS", "STAT"),
        ("STATE", "STAT"), ("QUESTIONABLE", "QUES"), ("EVENT", "EVEN"), ("CONDITION", "COND"),
        ("DATA", "DATA"), ("POINTS", "POIN"), ("REMOVE", "REM"), ("INITIATE", "INIT"),
        ("IMMEDIATE", "IMM"), ("ABORT", "ABOR"), ("FETCH", "FETC"), ("CONFIGURE", "CONF"),
        ("FUNCTION", "FUNC"), ("SIMULATE", "SIM"), ("TRUTH", "TRUTH"), ("R", "R"),
        ("HOLD", "HOLD"), ("LIVE", "LIVE"), ("LATE", "LATE"), ("SLOPE", "SLOP"),
        ("MARKER", "MARK"), ("SYNCHRONISE", "SYNC"),
    ]
}  # fmt: skip
NODES.update({short: short for short in list(NODES.values())})


def normalise_header(header: str) -> str:
    """Canonical short form of a SCPI header, optional nodes removed (``SENS``, ``DC``, …)."""
    header = header.strip()
    if header.startswith("*"):
        return header.upper()
    is_query = header.endswith("?")
    nodes = header.rstrip("?").lstrip(":").upper().split(":")
    try:
        out = [NODES[n] for n in nodes]
    except KeyError:
        raise ScpiError(-113, "Undefined header") from None
    if out[0] == "SENS":
        out = out[1:]
    if len(out) >= 2 and out[0] in ("CURR", "VOLT") and out[1] == "DC":
        del out[1]
    if len(out) >= 3 and out[0] == "CONF" and out[2] == "DC":
        del out[2]
    if len(out) > 1 and out[-1] in ("IMM", "UPP", "NEXT"):
        out.pop()
    if out == ["STAT", "QUES", "EVEN"]:
        out = ["STAT", "QUES"]
    return ":".join(out) + ("?" if is_query else "")


def format_reading(value: float) -> str:
    return f"{value:+.8E}"


def one_arg(args: list[str]) -> str:
    if not args:
        raise ScpiError(-109, "Missing parameter")
    return args[0]


def parse_bool(value: str) -> bool:
    value = value.upper()
    if value in ("ON", "1"):
        return True
    if value in ("OFF", "0"):
        return False
    raise ScpiError(-224, "Illegal parameter value")


def parse_number(value: str, low: float, high: float, default: float | None = None) -> float:
    word = value.upper()
    if word.startswith("MIN"):
        return low
    if word.startswith("MAX"):
        return high
    if word.startswith("DEF") and default is not None:
        return default
    try:
        number = float(value)
    except ValueError:
        raise ScpiError(-104, "Data type error") from None
    if not low <= number <= high:
        raise ScpiError(-222, "Data out of range")
    return number
