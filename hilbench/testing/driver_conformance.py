"""The driver conformance suite: what any driver must do to be hosted by an agent, checked in
this process through the very path an agent and a campaign take (:class:`~hilbench.agent.
dispatch.Dispatcher`, then the orchestrator's handles with their reply contracts).

``check_driver(driver)`` runs the checks every driver must pass, then each declared workload's
own cases (``WorkloadPlugin.conformance``, in the workload's package), and returns the failures
(empty: it conforms). A new driver's tests call it with its own driver::

    from hilbench.testing.driver_conformance import check_driver
    assert check_driver(MyDriver()) == []

Options go to the workloads' cases, each taking its own: e.g. the ASC cases need a model the
device takes (``asc_model``) and a 1 s sample (``asc_sample``), without which only the
capabilities and the refusals are checked; the QUBO cases take ``qubo_nodes`` and
``qubo_timeout_s``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hilbench.contracts.base import ContractError
from hilbench.contracts.registry import resolve, workloads
from hilbench.contracts.remote import RemoteDevice
from hilbench.orchestrator.local import LocalLink
from hilbench.wire.link import AgentError


@dataclass(frozen=True)
class Failure:
    check: str
    reason: str

    def __str__(self) -> str:
        return f"{self.check}: {self.reason}"


class Suite:
    """Runs checks, keeping each failure with the check's name (a driver's exception is a
    finding, not a crash of the suite)."""

    def __init__(self) -> None:
        self.failures: list[Failure] = []

    def check(self, name: str, step: Callable[[], Any]) -> Any:
        try:
            return step()
        except AssertionError as exc:
            self.failures.append(Failure(name, str(exc) or "assertion failed"))
        except Exception as exc:  # a driver's failure is the finding, whatever it is
            self.failures.append(Failure(name, f"{type(exc).__name__}: {exc}"))
        return None


def refused(device: Any, code: str, call: Callable[[], Any]) -> None:
    """``call`` is refused with error ``code``."""
    try:
        call()
    except AgentError as exc:
        assert exc.code == code, f"refused with {exc.code} ({exc}), not {code}"
        return
    raise AssertionError(f"accepted; the contract asks for {code}")


def check_driver(driver: Any, **options: Any) -> list[Failure]:
    """Every check of every workload ``driver`` declares; the failures (empty: conforms).
    ``options`` go to the workloads' cases (each takes the keys it knows)."""
    cases = {name: resolve(w.conformance) for name, w in workloads().items()
             if w.conformance is not None}
    known = {p.name for case in cases.values()
             for p in inspect.signature(case).parameters.values() if p.kind is p.KEYWORD_ONLY}
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(f"no installed workload's conformance cases take {unknown} "
                        f"(they take {sorted(known)})")
    suite = Suite()
    link = LocalLink(driver)
    caps = suite.check("capabilities decode against the contract", lambda: link.capabilities)
    if caps is None:
        return suite.failures
    device = RemoteDevice(link)
    suite.check("unknown workloads are refused", lambda: refused(
        device, "bad_arguments", lambda: link.request("run", {"workload": "nothing"})))
    suite.check("an empty configure is accepted", lambda: link.request("configure", {}))
    declared = {name: caps.workload(name) for name in workloads()}
    for name, case in cases.items():
        if declared[name] is not None:
            case(suite, device, declared[name], **options)
    if not any(v is not None for v in declared.values()):
        suite.failures.append(Failure("workloads", "the driver declares none of the installed "
                                      f"workloads ({', '.join(workloads())})"))
    return suite.failures


def refused_key(device: Any, cmd: str, body: dict[str, Any], key: str) -> None:
    """The request is refused with ``bad_arguments`` naming ``key``."""
    try:
        device.link.request(cmd, body)
    except AgentError as exc:
        assert exc.code == "bad_arguments", f"refused with {exc.code}, not bad_arguments"
        assert exc.detail.get("key") == key, f"the refusal names {exc.detail.get('key')!r}"
        return
    raise AssertionError("accepted")


__all__ = ["ContractError", "Failure", "Suite", "check_driver", "refused", "refused_key"]
