"""Whether a bound worker can start at all: the agent CLI or tool its adapter launches is
found, and a tool that demands its own consent switch has it. Checked in preflight, so a worker
that cannot start stops a run before any trial instead of failing every one of them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lorelab.workers._tools import AGENT_TOOLS
from lorelab.workers.agents import SHIPPED_ADAPTERS
from lorelab.workers.identity import WorkerIdentity


def worker_name(argv: Sequence[str]) -> str:
    """A short name for ``argv`` in messages: the shipped adapter's name, else the argv."""
    modules = {module: name for name, module in SHIPPED_ADAPTERS.items()}
    items = list(argv)
    for index, arg in enumerate(items[1:], start=1):
        if arg == "-m" and index + 1 < len(items) and items[index + 1] in modules:
            return modules[items[index + 1]]
    return " ".join(items)


def cannot_start(identity: WorkerIdentity, env: Mapping[str, str]) -> str | None:
    """Why the bound worker cannot start in ``env`` (with the fix), or None when it can.

    Only what is known without running the worker is checked: the tool a shipped adapter
    launches (not found at bind time means every call fails with ``tool-missing``) and the
    consent variable of a tool that refuses to run without one.
    """
    tool = identity.tool
    if tool is None:
        return None
    if not tool.bound:
        if tool.source == "default":
            return (
                f"cannot find {tool.declared} on PATH; install {tool.tool}, or set "
                f"{tool.variable}=/path/to/{tool.tool}"
            )
        named = (
            f"{tool.variable}={tool.declared}"
            if tool.source == "variable"
            else f"{tool.option} {tool.declared}"
        )
        return f"{named} names no executable file; point it at the {tool.tool} executable"
    spec = AGENT_TOOLS.get(tool.adapter)
    if spec is not None and spec.consent is not None and spec.consent not in env:
        return (
            f"{tool.tool} executes the code under test and runs only with {spec.consent} set; "
            f"set {spec.consent}=1 to let it run"
        )
    return None
