from pathlib import Path
from typing import Any
from tests.e2e import run_swival
from tests.fakeserver import text, tool
from tests.mcpconfig import table
from tests.test_mcp_e2e import write_global, answering, project  # noqa


def test_scratch(fake_server: Any, project: Path) -> None:
    write_global(project, table("basic", "basic", trust="true"))
    (project / "notes.txt").write_text("owner: ada\n")
    server = fake_server(kind="llamacpp", window=8192).script(
        tool("mcp__basic__add", a="1", b=2),
        tool("task", description="find owner", prompt="Read notes.txt, report the owner."),
        tool("read_file", file_path="notes.txt"), tool("mcp__basic__echo", text="x"), text("owner: ada"),
        text("Ada."))
    r = run_swival(server, project, "-p", "go", "--output-format", "stream-json")
    print("RC", r.returncode, r.stderr)
    print(r.stdout)
