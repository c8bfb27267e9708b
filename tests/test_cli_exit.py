"""How the process ends after a hosted run. litellm's finalizers import modules while the
interpreter tears down; when a background thread was in the middle of an import as the run
ended, that import waits for good (seen as a hosted one-shot run that never exited, or
aborted, about one run in seven under load). The child below builds that situation on
purpose: a daemon thread holds the import lock, and garbage whose finalizer imports a
module waits for the collector's pass at teardown."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

CHILD = textwrap.dedent("""
    import _imp, atexit, gc, sys, threading, time, types
    from swival.cli import _leave

    sys.path.insert(0, sys.argv[1])

    class Finalizer:
        def __del__(self):
            import slowmod  # noqa: F401 - what litellm's finalizers do at teardown

    def garbage() -> None:  # a cycle: only the collector's pass at teardown frees it
        cycle = Finalizer()
        cycle.me = cycle

    garbage()
    gc.disable()
    sys.modules["litellm"] = types.ModuleType("litellm")  # a hosted run loaded it
    atexit.register(lambda: print("exit handlers ran", flush=True))
    print("answer", end="")  # unflushed output must still come out

    def importing() -> None:  # a background thread in the middle of an import
        _imp.acquire_lock()
        time.sleep(60)

    threading.Thread(target=importing, daemon=True).start()
    time.sleep(0.3)
    _leave(3)
""")



def test_a_hosted_run_ends_even_when_teardown_would_wait_for_an_import(
        tmp_path: Path) -> None:
    (tmp_path / "slowmod.py").write_text("")
    done = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path)], capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 3
    assert done.stdout == "answerexit handlers ran\n"
