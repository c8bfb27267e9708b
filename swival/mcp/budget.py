"""The schema budget: every tool schema is sent with every request, so MCP servers'
schemas must leave the window room for work.

At start-up the schemas are counted with the context engine's counter, built-in tools
included, against the input budget:
- up to 30 %: sent whole;
- above 30 %: sent whole, with a warning giving each server's figures;
- above 50 %: the most expensive servers' schemas are shortened first (schema.shorten),
  one server at a time, until the total fits under 50 %; if shortening all of them is not
  enough, the most expensive servers are held back whole, one at a time, until it fits,
  and the others get back their whole schemas where the room allows.
  Held-back servers stay reachable through two small tools, `mcp_list(server)` and
  `mcp_call(server, tool, arguments)`, which cost a couple of hundred tokens together.

`make_plan` is a pure function of the listings, the counter and the budget.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from swival.mcp.client import RemoteTool
from swival.mcp.schema import (
    TOOL_SUMMARY,
    exposed_name,
    first_sentence,
    function_schema,
    parameters_of,
    shorten,
)
from swival.words import percent, plural

WARN_SHARE = 0.30
LIMIT_SHARE = 0.50

Count = Callable[[Sequence[Mapping[str, Any]]], int]  # tokens of a list of tool schemas
Mode = Literal["full", "short", "held"]


@dataclass(frozen=True)
class Entry:
    """One remote tool under the name the model sees, with both forms of its schema."""

    name: str
    tool: RemoteTool
    full: dict[str, Any]
    short: dict[str, Any]


def entries_for(tools: Sequence[RemoteTool], taken: set[str]) -> list[Entry]:
    """Name the tools of one server (adding the names to `taken`) and build their
    whole and shortened schemas."""
    out = []
    for tool in tools:
        name = exposed_name(tool.server, tool.name, taken)
        taken.add(name)
        params = parameters_of(tool.input_schema)
        full = function_schema(name, tool.description, params)
        short = function_schema(name, first_sentence(tool.description, TOOL_SUMMARY),
                                shorten(params))
        out.append(Entry(name, tool, full, short))
    return out


@dataclass(frozen=True)
class ServerCost:
    """One server's schemas: tokens whole and shortened, and what the plan does."""

    name: str
    tools: int
    full: int
    short: int
    mode: Mode = "full"

    @property
    def sent(self) -> int:
        return {"full": self.full, "short": self.short, "held": 0}[self.mode]


@dataclass(frozen=True)
class Plan:
    """What is sent: `base` tokens of built-in schemas, each server's cost and mode,
    and `gateway` tokens for mcp_call/mcp_list (0 when no server is held back)."""

    budget: int
    base: int
    servers: tuple[ServerCost, ...]
    gateway: int = 0

    @property
    def total(self) -> int:
        return self.base + sum(s.sent for s in self.servers) + self.gateway

    @property
    def whole(self) -> int:
        """Tokens with every schema sent whole."""
        return self.base + sum(s.full for s in self.servers)

    def mode(self, server: str) -> Mode:
        return next((s.mode for s in self.servers if s.name == server), "full")

    @property
    def held(self) -> list[str]:
        return [s.name for s in self.servers if s.mode == "held"]

    def warning(self) -> str | None:
        """The one start-up warning, with the figures per server; None under 30 %."""
        if self.whole <= WARN_SHARE * self.budget:
            return None
        figures = ", ".join(f"{s.name} {plural(s.tools, 'tool')} {s.full}" for s in self.servers)
        text = (f"Tool schemas take {self.whole} tokens, {percent(self.whole, self.budget)} of "
                f"the {self.budget}-token input budget (built-in tools {self.base}; MCP: "
                f"{figures}).")
        shortened = [s for s in self.servers if s.mode == "short"]
        if shortened:
            text += " Over half the budget: shortened the schemas of " + ", ".join(
                f"{s.name} ({s.full} → {s.short})" for s in shortened) + "."
        if self.held:
            text += (f" Held back {', '.join(self.held)}: the model reaches "
                     f"{'it' if len(self.held) == 1 else 'them'} through mcp_list and "
                     f"mcp_call ({self.gateway} tokens).")
        if self.total != self.whole:  # what is sent after shortening or holding back
            text += f" Now {self.total} tokens ({percent(self.total, self.budget)})."
        return text


def make_plan(servers: Mapping[str, Sequence[Entry]], base: int, budget: int,
              count: Count, gateway: Callable[[Sequence[str]], int]) -> Plan:
    """The plan for these servers' entries. `gateway(held)` counts mcp_call/mcp_list
    as they would be sent for the servers `held`."""
    costs = tuple(ServerCost(name, len(entries), count([e.full for e in entries]),
                             count([e.short for e in entries]))
                  for name, entries in servers.items())
    plan = Plan(budget, base, costs)
    limit = LIMIT_SHARE * budget
    by_cost = sorted(costs, key=lambda s: s.full, reverse=True)
    for server in by_cost:
        if plan.total <= limit:
            return plan
        plan = _with(plan, server.name, "short")
    for server in sorted(costs, key=lambda s: s.short, reverse=True):
        if plan.total <= limit:
            break
        plan = _with(plan, server.name, "held")
        plan = replace(plan, gateway=gateway(plan.held))
    for server in sorted(costs, key=lambda s: s.full):  # what holding back made room for
        if plan.mode(server.name) == "short":
            whole = _with(plan, server.name, "full")
            plan = whole if whole.total <= limit else plan
    return plan


def _with(plan: Plan, name: str, mode: Mode) -> Plan:
    servers = tuple(replace(s, mode=mode) if s.name == name else s for s in plan.servers)
    return replace(plan, servers=servers)
