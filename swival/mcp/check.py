"""`swival --doctor` for MCP servers: start each, list its tools, count their schemas
against the input budget, stop it again."""

from __future__ import annotations

from collections.abc import Sequence

from swival.mcp.budget import Count, Entry, entries_for, make_plan
from swival.mcp.hub import Hub
from swival.mcp.spec import ServerSpec
from swival.mcp.tools import gateway_schemas
from swival.redaction import Redactor
from swival.words import plural


def doctor_lines(specs: Sequence[ServerSpec], count: Count, base: int,
                 budget: int) -> list[str]:
    """One line per server (ready with its tools and schema tokens, or why not), then
    what the schema budget would do at start-up. `base`: the built-in tools' tokens."""
    hub = Hub(specs)
    hub.start()
    try:
        hub.settle()
        lines, servers = [], {}
        taken: set[str] = set()
        for name, conn in hub.connections.items():
            redactor = Redactor.of(conn.spec.secrets())
            where = f"{conn.spec.transport}: {conn.spec.target}"
            if conn.state != "ready":
                tail = conn.stderr.text().splitlines()[-1:] if conn.stderr else []
                more = f" (its last error output: {tail[0]})" if tail else ""
                lines.append(redactor.redact(
                    f"  {name:<15}{conn.state}: {conn.error}{more} [{where}]"))
                continue
            entries: list[Entry] = entries_for(conn.tools, taken)
            servers[name] = entries
            lines.append(redactor.redact(
                f"  {name:<15}ready: {plural(len(entries), 'tool')}, "
                f"{count([e.full for e in entries])} schema tokens [{where}]"))
    finally:
        hub.close()
    plan = make_plan(servers, base, budget, count, lambda held: count(gateway_schemas(held)))
    warning = plan.warning()
    lines.append(f"  {warning}" if warning else
                 f"  schema budget: {plan.total} of {budget} input tokens, fine")
    return lines
