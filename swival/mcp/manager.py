"""The session's MCP servers as tools: what the agent waits for before its first request,
what /mcp shows and changes, and what --doctor checks.

The tool list is fixed before the first request (`settle`: servers still starting are
waited for, each up to its startup timeout, then left out) and changes afterwards only
when the user asks (/mcp restart, /mcp refresh) or changes what it was planned for: the
window (/model) or plan mode (/plan, where only the tools a server marks read-only are
offered and budgeted). Tool schemas come first in the prompt, so such a change makes the
server re-process the whole prompt; the engine counts it, and the notice (or the command
that caused it) says so once. The budget warning is given once, when the list is first
fixed; afterwards /mcp's table and summary carry the figures.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from swival.context.engine import ContextEngine
from swival.events import Event, Notice
from swival.mcp.budget import Entry, Plan, entries_for, make_plan
from swival.mcp.hub import Hub
from swival.mcp.schema import exposed_name
from swival.mcp.tools import (
    Access,
    Held,
    McpCall,
    McpList,
    McpTool,
    gateway_schemas,
    not_read_only,
    through_gateway,
)
from swival.tools.base import Tool
from swival.tools.registry import ToolRegistry
from swival.words import percent

MODE_SHOWN = {"full": "whole", "short": "shortened", "held": "via mcp_call"}
NOT_OFFERED = "not offered"


class McpTools:
    """Implements the agent's ToolSource (`settle`) for the servers in `access.hub`."""

    def __init__(self, registry: ToolRegistry, context: ContextEngine, access: Access) -> None:
        self.registry, self.context, self.access = registry, context, access
        self.hub: Hub = access.hub
        self.plan: Plan | None = None
        self._installed: list[str] = []
        self._started = False
        self._settled = False
        self._told: dict[str, str] = {}  # server -> the failure the user was told about

    # ----- the agent's hook ----------------------------------------------------------------

    def start(self) -> None:
        """Start the servers in the background, once (the REPL does it after its prompt
        is drawn, so importing the SDK does not delay the prompt)."""
        if not self._started:
            self._started = True
            self.hub.start()

    def settle(self) -> Iterator[Event]:
        """Before the first request (later calls do nothing): wait for servers still
        starting, then install the tools of those that are up."""
        if self._settled:
            return
        self.start()
        waiting = self.hub.starting()
        if waiting:
            yield Notice(f"Waiting for MCP server{'s' if len(waiting) > 1 else ''} "
                         f"{', '.join(waiting)} to start…")
        self.hub.settle()
        self._settled = True
        for text in self.install():
            yield Notice(text, "warning")

    # ----- installing ----------------------------------------------------------------------

    def install(self, input_budget: int | None = None, *, changes_only: bool = False,
                reprocessing: bool = True) -> list[str]:
        """Plan the schemas of the servers that are up against `input_budget` (default:
        the engine's), over the tools the registry offers in its mode (in plan mode only
        those the server marks read-only), put their tools in the registry and tell the
        engine. With `changes_only`, a plan that sends the same schemas as before changes
        nothing and says nothing. Returns what the user should be told: the budget
        warning only the first time, the re-processing only with `reprocessing` (else the
        caller says it)."""
        before, first = self.registry.schemas(), self.plan is None
        plan, tools, redirects = self._plan(input_budget or self.context.budget.input_budget)
        withheld = self._withheld({t.spec.name for t in tools}) if self.registry.read_only else {}
        withheld.update(redirects)
        self.registry.swap(self._installed, tools, withheld)
        self._installed = [tool.spec.name for tool in tools] + list(withheld)
        self.plan = plan
        notes = self._failures()
        if changes_only and self.registry.schemas() == before:
            return notes
        reprocessed = self.context.set_tool_schemas(self.registry.schemas())
        warning = plan.warning() if first else None  # later: /mcp shows the figures
        if warning:
            notes.append(warning)
        if reprocessed and reprocessing:
            notes.append(f"The tool list changed. Tool schemas come first in the prompt, so "
                         f"the server re-processes the whole prompt (about {reprocessed} "
                         "tokens) on the next request.")
        return notes

    def replan(self, input_budget: int | None = None) -> list[str]:
        """After the window or plan mode changed (/model, /plan): plan the schemas again
        for `input_budget` (default: the engine's), once the tool list is fixed (before
        that, settle plans anyway). What the user should be told; nothing when the
        schemas sent stay the same."""
        if self.plan is None:
            return []
        before = self.registry.schemas()
        notes = self.install(input_budget, changes_only=True, reprocessing=False)
        if self.registry.schemas() == before:
            return notes  # only a server's failure to report, if any
        plan = self.plan
        held = (f"; held back {', '.join(plan.held)} (reached through mcp_list and "
                "mcp_call)" if plan.held else "")
        return [f"MCP tool schemas planned again for the {plan.budget}-token input "
                f"budget{' in plan mode' if self.registry.read_only else ''}: "
                f"{plan.total} tokens ({percent(plan.total, plan.budget)}){held}.",
                *notes]

    def _plan(self, budget: int
              ) -> tuple[Plan, list[Tool], dict[str, tuple[str, str]]]:
        """The plan, the tools it sends, and what a call by name to a held-back server's
        tool gets (the way to reach it), for the servers that are up."""
        plan_mode = self.registry.read_only
        taken = {name for name in self.registry.names if name not in self._installed}
        servers = {}
        for name, conn in self.hub.connections.items():
            offered = [t for t in conn.tools if t.read_only or not plan_mode]
            if conn.state == "ready" and (offered or not plan_mode):
                servers[name] = entries_for(offered, taken)
        count = self.context.counter.schemas
        base = count([s for s in self.registry.schemas()
                      if s["function"]["name"] not in self._installed])
        plan = make_plan(servers, base, budget, count,
                         lambda held: count(gateway_schemas(held)))
        redirects = {entry.name: through_gateway(entry.tool.server, entry.tool.name)
                     for name in plan.held for entry in servers[name]}
        return plan, self._tools(plan, servers), redirects

    def _withheld(self, taken: set[str]) -> dict[str, tuple[str, str]]:
        """In plan mode, the tools of servers that are up which are not offered for want of
        a read-only hint, with what a call to one gets instead of "no tool named ..."."""
        taken |= set(self.registry.names)
        out = {}
        for name, conn in self.hub.connections.items():
            for tool in conn.tools if conn.state == "ready" else ():
                if tool.read_only:
                    continue
                exposed = exposed_name(name, tool.name, taken)
                taken.add(exposed)
                out[exposed] = not_read_only(name, tool.name, "plan")
        return out

    def _tools(self, plan: Plan, servers: dict[str, list[Entry]]) -> list[Tool]:
        tools: list[Tool] = []
        held = {name: servers[name] for name in plan.held}
        for name, entries in servers.items():
            mode = plan.mode(name)
            if mode != "held":
                tools += [McpTool(e, e.short if mode == "short" else e.full, self.access)
                          for e in entries]
        if held:
            gateway = Held(held)
            if self.registry.read_only:  # plan mode: the others were not offered
                gateway = Held(held, "plan", {name: [
                    t.name for t in self.hub.connections[name].tools if not t.read_only]
                    for name in held})
            tools += [McpList(gateway), McpCall(gateway, self.access)]
        return tools

    def _failures(self) -> list[str]:
        """One notice per server that failed or went down, once per failure."""
        notes = []
        for name, conn in self.hub.connections.items():
            if conn.state not in ("failed", "down") or self._told.get(name) == conn.error:
                continue
            self._told[name] = conn.error
            tail = conn.stderr.text() if conn.stderr is not None else ""
            last = tail.splitlines()[-1].rstrip() if tail else ""
            more = f" Its last error output: {last}" if last else ""
            more += "" if not last or last.endswith((".", "!", "?")) else "."
            notes.append(self._redact(
                f"MCP server {name} {'did not start' if conn.state == 'failed' else 'is down'}"
                f": {conn.error}.{more} Continuing without its tools; "
                f"{self.access.retry(name)}."))
        return notes

    def _redact(self, text: str) -> str:
        named = {k: v for spec in self.hub.specs.values() for k, v in spec.secrets().items()}
        return self.access.redactor.with_secrets(named).redact(text)

    # ----- /mcp ----------------------------------------------------------------------------

    def restart(self, names: Sequence[str]) -> list[str]:
        """Stop and start these servers (all when empty), wait for them, reinstall."""
        unknown = [n for n in names if n not in self.hub.specs]
        if unknown:
            return [f"No MCP server named {', '.join(unknown)}. Configured: "
                    f"{', '.join(self.hub.specs) or 'none'}."]
        chosen = list(names) or list(self.hub.specs)
        for name in chosen:
            self._told.pop(name, None)
            self.access.reported.discard(name)
        self.hub.restart(chosen)
        self.hub.settle()
        self._settled = True
        return self.install(changes_only=True)

    def refresh(self) -> list[str]:
        """List the tools of the servers that are up again, and reinstall."""
        self.hub.relist([n for n, c in self.hub.connections.items() if c.state == "ready"])
        self._settled = True
        return self.install(changes_only=True)

    def rows(self) -> list[tuple[str, ...]]:
        """/mcp's table: server, where it runs, state, tools, schema tokens, how sent."""
        costs = {s.name: s for s in self.plan.servers} if self.plan else {}
        rows: list[tuple[str, ...]] = []
        for name, conn in self.hub.connections.items():
            state = conn.state
            if conn.error and conn.state in ("failed", "down"):
                state += f": {conn.error}"
            cost = costs.get(name)
            tokens = "-" if cost is None else (
                f"{cost.full} → {cost.short}" if cost.mode == "short" else str(cost.full))
            mode = MODE_SHOWN[cost.mode] if cost else (self._not_offered(conn.state)
                                                        if self.plan else "-")
            rows.append((name, conn.spec.transport, self._redact(state), str(len(conn.tools)),
                         tokens, mode))
        return rows

    def _not_offered(self, state: str) -> str:
        plan_mode = self.registry.read_only and state == "ready"
        return NOT_OFFERED + (" (plan mode: no read-only tools)" if plan_mode else "")

    def summary(self) -> str:
        plan = self.plan
        if plan is None:
            return ("The tool list is fixed just before the first request, which waits for "
                    "the servers still starting.")
        return (f"Tool schemas: {plan.total} tokens of the {plan.budget}-token input budget "
                f"({percent(plan.total, plan.budget)}), built-in tools "
                f"{plan.base}.")

    def close(self) -> None:
        self.hub.close()
