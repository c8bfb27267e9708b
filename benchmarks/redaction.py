"""What redaction costs: every tool result, transcript line and spill file passes through
the session's Redactor (swival/redaction.py).

Measures, on this machine, with a typical set of secrets (five keys and tokens, one
of them a 40-line private key):
1. `redact` on a 50 KB tool result (the read cap) without and with secrets in it;
2. `copy` (command output streamed into a spill file) in MB/s, against a plain copy.

    python benchmarks/redaction.py
"""

from __future__ import annotations

import io
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from swival.redaction import Redactor  # noqa: E402

SECRETS = {
    "OPENAI_API_KEY": "sk-proj-" + "a1b2c3d4" * 6,
    "OPENROUTER_API_KEY": "sk-or-v1-" + "0f1e2d3c" * 8,
    "GITHUB_TOKEN": "ghp_" + "Zy9Xw8Vu7T" * 4,
    "DB_PASSWORD": "correct-horse-battery",
    "DEPLOY_SECRET_KEY": "\n".join(f"MIIEvQIBADANBgkqhkiG9w0BAQEFAASC{n:032x}" for n in range(40)),
}
RESULT_BYTES = 50 * 1024
STREAM_BYTES = 50 * 1024 * 1024


def median_ms(work: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return 1000 * statistics.median(times)


def sample(with_secrets: bool) -> str:
    line = "    value = compute(alpha, beta)  # ordinary source text\n"
    text = line * (RESULT_BYTES // len(line))
    if with_secrets:
        text += "".join(f"{name}={value.splitlines()[0]}\n" for name, value in SECRETS.items())
    return text


def main() -> None:
    redactor = Redactor.of(SECRETS)
    print(f"{len(redactor.secrets)} secret values (the private key counts one per line)")
    for with_secrets in (False, True):
        text = sample(with_secrets)
        ms = median_ms(lambda text=text: redactor.redact(text), 50)
        what = "holding all five" if with_secrets else "holding none"
        print(f"redact 50 KB {what}: {ms:.2f} ms (median of 50)")
    data = (sample(True) * (STREAM_BYTES // RESULT_BYTES))[:STREAM_BYTES].encode()
    plain = median_ms(lambda: shutil.copyfileobj(io.BytesIO(data), io.BytesIO()), 3)
    redacted = median_ms(lambda: redactor.copy(io.BytesIO(data), io.BytesIO()), 3)
    size = len(data) / 1e6
    print(f"copy {size:.0f} MB: plain {size / plain * 1000:.0f} MB/s, "
          f"redacting {size / redacted * 1000:.0f} MB/s (median of 3)")


if __name__ == "__main__":
    main()
