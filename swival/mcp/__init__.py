"""MCP servers' tools for the model, within a schema budget.

    spec.py      ServerSpec: one configured server, from the settings
    loop.py      the background event loop the async SDK runs on
    client.py    Connection: one server's session (stdio or streamable HTTP)
    hub.py       Hub: every server, started in parallel; a synchronous facade
    content.py   a tool result as compact text for the model
    schema.py    exposed names (mcp__server__tool) and shortened schemas
    budget.py    the start-up plan: which schemas are sent whole, shortened or held back
    tools.py     the tools the model sees: one per remote tool, plus mcp_call/mcp_list
    manager.py   McpTools: the session's view of all this (settle, /mcp, --doctor)

Nothing here imports the SDK at module level: it is imported on the event-loop thread
the first time a server starts, so a run without servers never pays for it.
"""
