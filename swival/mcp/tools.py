"""The tools the model sees for MCP servers: one per remote tool (`mcp__SERVER__TOOL`),
and, for servers the schema budget held back, `mcp_list` and `mcp_call`.

Every call needs approval, like a command: it runs code elsewhere. It runs unasked only
under --yolo or for a server the user's own config marks `trust = true`; otherwise the
person is asked (once / always this tool / always this server / no), and with nobody to
ask it is refused. Results are text (content.py), inline up to 20,000 characters; a
longer one is saved under the spill directory and the model gets its head and the path.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from swival.mcp.budget import Entry
from swival.mcp.client import CallTimeout, ServerDown, describe
from swival.mcp.content import compact_json, render
from swival.mcp.hub import Hub
from swival.mcp.schema import TOOL_SUMMARY, first_sentence, parameters_of
from swival.messages import ToolResult
from swival.redaction import Redactor
from swival.tools.approval import Approvals, Refusal, person_words
from swival.tools.base import ToolContext, ToolSpec
from swival.tools.registry import check_arguments, decoded
from swival.tools.spilled import head_or_spill, line_count
from swival.words import clip, plural

INLINE_CHARS = 20_000
ARGUMENTS_SHOWN = 300  # characters of the arguments shown when asking
HOW_TO_ALLOW = ("the user can run with --yolo, or mark the server `trust = true` in their "
                "global config")


@dataclass
class Access:
    """How MCP tools reach their servers: the hub, who approves calls, and whether this
    run allows them all (--yolo). `redactor` hides the session's secrets (the servers'
    env and header values among them) in what the servers say about failing. `reported`
    holds servers whose failure the model was already told about in full."""

    hub: Hub
    approvals: Approvals
    yolo: bool = False
    redactor: Redactor = field(default_factory=Redactor)
    reported: set[str] = field(default_factory=set)
    interactive: bool = True  # the REPL, where /mcp restart exists

    def retry(self, server: str) -> str:
        """What the person can do about a server that failed or went down."""
        if self.interactive:
            return f"/mcp restart {server} tries again"
        return "`swival --doctor` checks it; the next run starts it again"

    def call(self, server: str, tool: str, arguments: dict[str, Any],
             ctx: ToolContext) -> ToolResult:
        """Approve, call, render and shape one call. Never raises for a server's
        failure (that is a tool error); a Ctrl-C cancels the call and propagates."""
        meta: dict[str, Any] = {"kind": "mcp", "server": server, "tool": tool}
        refusal = self._refusal(server, tool, arguments)
        if refusal is not None:
            return ToolResult(f"call refused: {refusal}", is_error=True,
                              meta={**meta, "refused": True,
                                    "summary": person_words(refusal)})
        try:
            result = self.hub.call(server, tool, arguments)
        except ServerDown as error:
            shown = f" ({self.retry(server)})" if self.interactive else ""
            return ToolResult(self._down(server, str(error)), is_error=True, meta={
                **meta, "summary": f"MCP server {server} is down{shown}"})
        except CallTimeout:
            timeout = self.hub.specs[server].call_timeout
            return ToolResult(
                f"error: MCP server {server} did not answer {tool} within {timeout:g} s; the "
                "call was cancelled. Try smaller arguments, or continue without it.",
                is_error=True, meta={**meta, "summary": (
                    f"no answer from {server} within {timeout:g} s, cancelled (its `timeout` "
                    f"under [mcp_servers.{server}] sets the limit)")})
        except Exception as error:  # the server refused the call (unknown tool, bad input)
            return ToolResult(self._redact(server, f"error: {server} refused the call: "
                                           f"{describe(error)}"), is_error=True, meta=meta)
        text = render(result)
        if getattr(result, "is_error", False):
            # Servers written with the Python SDK wrap every error in these words; the
            # line below already says which tool failed.
            text = text.removeprefix(f"Error executing tool {tool}: ")
            return ToolResult(self._redact(server, f"error: {tool} failed: {text}"),
                              is_error=True, meta=meta)
        shown, saved = head_or_spill(text, INLINE_CHARS, ctx, f"mcp-{server}", "result")
        lines = line_count(text)  # the whole result's, not the head's (when it was saved)
        summary = clip(shown, 40) if lines == 1 else plural(lines, "line")
        if saved:  # the head and the note after it: how much of the whole that is
            head = shown[:shown.rindex("\n[")]
            summary = f"first {len(head)} of {plural(len(text), 'character')}"
        return ToolResult(shown, meta={**meta, **saved, "summary": summary})

    def _refusal(self, server: str, tool: str, arguments: Mapping[str, Any]) -> str | None:
        if self.yolo or self.hub.specs[server].trusted:
            return None
        shown = compact_json(arguments)
        if len(shown) > ARGUMENTS_SHOWN:
            shown = shown[:ARGUMENTS_SHOWN] + "…"
        shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in shown)
        answer = self.approvals.ask("mcp", f"Call MCP tool {tool} of server {server} with "
                                    f"{shown}", f"{server}/{tool}", f"server {server}")
        if answer is None:
            return Refusal(f"MCP tools need the user's approval and nobody is there to give "
                           f"it; to allow {server}'s tools, {HOW_TO_ALLOW}. Continue without "
                           "it.", "not called: MCP tools need approval and this run cannot ask")
        if answer == "deny":
            return Refusal("the user declined this call. Ask them, or continue without it.",
                           "not called: you declined")
        return None

    def _down(self, server: str, why: str) -> str:
        """The first time in full (with the server's last stderr lines), then briefly."""
        until = (f"until the user restarts it with /mcp restart {server}" if self.interactive
                 else "for the rest of this run; continue without them")
        if server in self.reported:
            return f"error: MCP server {server} is down; its tools cannot be used {until}."
        self.reported.add(server)
        stderr = self.hub.connections[server].stderr
        tail = stderr.text() if stderr is not None else ""
        more = f"\nIts last error output:\n{tail}" if tail else ""
        return self._redact(server, f"error: MCP server {server} stopped: {why}. Its tools "
                            f"cannot be used {until}.{more}")

    def _redact(self, server: str, text: str) -> str:
        return self.redactor.with_secrets(self.hub.specs[server].secrets()).redact(text)


class McpTool:
    """One remote tool, under its exposed name, with the schema the budget chose."""

    def __init__(self, entry: Entry, schema: Mapping[str, Any], access: Access) -> None:
        function = schema["function"]
        self.spec = ToolSpec(function["name"], function["description"],
                             function["parameters"])
        self.read_only = entry.tool.read_only
        self._entry, self._access = entry, access

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        tool = self._entry.tool
        return self._access.call(tool.server, tool.name, dict(args), ctx)


def _server_param(servers: Sequence[str]) -> dict[str, Any]:
    return {"type": "string", "enum": list(servers)}


def list_spec(servers: Sequence[str]) -> ToolSpec:
    return ToolSpec("mcp_list", (
        "List the tools of an MCP server whose tools are not in your tool list, or get one "
        "tool's arguments. Then call it with mcp_call."),
        {"type": "object", "properties": {"server": _server_param(servers),
                                          "tool": {"type": "string"}},
         "required": ["server"]})


def call_spec(servers: Sequence[str]) -> ToolSpec:
    return ToolSpec("mcp_call", (
        "Call a tool of an MCP server whose tools are not in your tool list. Get its tool "
        "names and arguments with mcp_list first."),
        {"type": "object", "properties": {"server": _server_param(servers),
                                          "tool": {"type": "string"},
                                          "arguments": {"type": "object"}},
         "required": ["server", "tool"]})


def gateway_schemas(servers: Sequence[str]) -> list[dict[str, Any]]:
    """The schemas of mcp_list and mcp_call for these held-back servers."""
    return [list_spec(servers).schema(), call_spec(servers).schema()]


# Where only the tools a server marks read-only are offered: (where, what to do instead).
LIMITS = {
    "plan": ("in plan mode", "Describe the call you would make instead; the user can leave "
             "plan mode (/plan in the REPL; a new run without --read-only)."),
    "subagent": ("to a read-only subagent", "Say in your answer which call is needed and why; "
                 "the agent that started you can make it."),
}


def not_read_only(server: str, tool: str, limit: str) -> tuple[str, str]:
    """What a call to a tool left out for its missing read-only hint gets, where only
    hinted tools are offered (`limit`: a key of LIMITS): words for the model, the person."""
    where, instead = LIMITS[limit]
    return (f"error: {tool} of {server} is not available {where}: the server does not mark "
            f"it read-only (readOnlyHint), so it may change something. {instead}",
            f"not available {where}: the server does not mark it read-only")


def through_gateway(server: str, tool: str) -> tuple[str, str]:
    """What a call by its own name to a tool of a held-back server gets (it is not in the
    tool list, but the model may have seen the name): words for the model, the person."""
    return (f"error: {server}'s tools are not in your tool list; reach this one through "
            f'mcp_call with server="{server}", tool="{tool}" and its arguments (mcp_list '
            f"server={server} tool={tool} shows them).",
            f"not run: {server}'s tools are reached through mcp_call")


@dataclass(frozen=True)
class Held:
    """The held-back servers' tools that mcp_list and mcp_call offer, per server, and,
    where only read-only-hinted tools are offered (`limit`: a key of LIMITS), the names
    of those left out."""

    entries: Mapping[str, Sequence[Entry]]
    limit: str = ""
    hidden: Mapping[str, Sequence[str]] = field(default_factory=dict)

    def note(self) -> str:
        if not self.limit:
            return ""
        where = LIMITS[self.limit][0]
        return (f" {where[0].upper()}{where[1:]} only the tools the server marks read-only "
                "(readOnlyHint) are offered.")

    def read_only(self, limit: str) -> Held | None:
        """Only the read-only-hinted tools, for `limit`; None when there are none."""
        entries = {name: kept for name, es in self.entries.items()
                   if (kept := [e for e in es if e.tool.read_only])}
        hidden = {name: [*self.hidden.get(name, ()),
                         *(e.tool.name for e in self.entries[name] if not e.tool.read_only)]
                  for name in entries}
        return Held(entries, limit, hidden) if entries else None

    def find(self, server: str, name: str) -> Entry | ToolResult:
        """The entry for tool `name` of `server`, or the error to give: a tool left out
        for its missing read-only hint, or one that is not there."""
        entries = self.entries[server]
        for entry in entries:
            if entry.tool.name == name:
                return entry
        if name in self.hidden.get(server, ()):
            text, summary = not_read_only(server, name, self.limit)
            return ToolResult(text, is_error=True, meta={"refused": True, "summary": summary})
        names = ", ".join(e.tool.name for e in entries[:40])
        more = f" and {len(entries) - 40} more" if len(entries) > 40 else ""
        return ToolResult(f"error: no tool {name!r} there. Its tools: {names}{more}."
                          f"{self.note()}", is_error=True,
                          meta={"summary": f"{server} has no tool {name}"})


class McpList:
    """`mcp_list(server, tool?)`: the tools of a held-back server, or one tool's schema.
    Where only read-only-hinted tools are offered (plan mode, a read-only subagent) it is
    given only those, and says so."""

    read_only = True

    def __init__(self, held: Held) -> None:
        self._held = held
        self.spec = list_spec(list(held.entries))

    def read_only_part(self) -> McpList | None:
        """This tool for a read-only subagent (see Held.read_only)."""
        held = self._held.read_only("subagent")
        return McpList(held) if held is not None else None

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        entries = self._held.entries[args["server"]]
        name = args.get("tool")
        if not name:
            lines = [f"{e.tool.name}: {first_sentence(e.tool.description, TOOL_SUMMARY)}"
                     for e in entries]
            return ToolResult(f"{plural(len(entries), 'tool')} of {args['server']} (call one "
                              "with mcp_call; ask for one tool's arguments with mcp_list "
                              f"tool=NAME):{self._held.note()}\n" + "\n".join(lines),
                              meta={"summary": plural(len(lines), "tool")})
        entry = self._held.find(args["server"], name)
        if isinstance(entry, ToolResult):
            return entry
        schema = entry.tool.input_schema
        return ToolResult(f"{entry.tool.name}: {entry.tool.description}\narguments: "
                          f"{json.dumps(schema, ensure_ascii=False)}",
                          meta={"summary": entry.tool.name})


class McpCall:
    """`mcp_call(server, tool, arguments)`: call a tool of a held-back server. It counts
    as read-only when every tool it reaches is marked so; in plan mode, and for a
    read-only subagent, it is given only those, so there it runs nothing else."""

    def __init__(self, held: Held, access: Access) -> None:
        self._held, self._access = held, access
        self.read_only = all(e.tool.read_only for es in held.entries.values() for e in es)
        self.spec = call_spec(list(held.entries))

    def read_only_part(self) -> McpCall | None:
        """This tool for a read-only subagent (see Held.read_only)."""
        held = self._held.read_only("subagent")
        return McpCall(held, self._access) if held is not None else None

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        entry = self._held.find(args["server"], args["tool"])
        if isinstance(entry, ToolResult):
            return entry
        schema = parameters_of(entry.tool.input_schema)
        arguments = dict(decoded(schema, args.get("arguments") or {}))
        problem = check_arguments(schema, arguments)
        if problem:
            return ToolResult(f"error: {entry.tool.name}: {problem}. See its arguments with "
                              f"mcp_list server={args['server']} tool={entry.tool.name}.",
                              is_error=True)
        return self._access.call(entry.tool.server, entry.tool.name, arguments, ctx)
