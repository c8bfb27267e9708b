"""The tokenizer's kept parse (swival/context/tokens.py): a later start reads what tiktoken
parsed instead of parsing the encoding file again, and counts exactly the same; a stale,
damaged or unwritable copy only costs the parse. Each start is a fresh process."""

from __future__ import annotations

import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest
import tiktoken

from swival.context.tokens import kept_path, prepare_offline_cache

SAMPLE = Path(__file__).read_text(encoding="utf-8") + "\n<|endoftext|> naïve café 東京 🙂\n"


def _start(cache: Path) -> int:
    """A fresh process loading the tokenizer with this cache directory: its count of
    SAMPLE."""
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys\nfrom swival.context.tokens import load_encoder\n"
            "print(load_encoder()(sys.stdin.read()))",
        ],
        input=SAMPLE,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "XDG_CACHE_HOME": str(cache)},
    )
    assert out.returncode == 0, out.stderr
    return int(out.stdout)


def _reference() -> int:
    """tiktoken's own count of SAMPLE, from the same offline file."""
    found = prepare_offline_cache({"PATH": os.environ.get("PATH", "")})
    assert found is not None, "litellm's copy of cl100k_base is installed with Swival"
    os.environ["TIKTOKEN_CACHE_DIR"] = str(found.parent)
    try:
        return len(tiktoken.get_encoding("cl100k_base").encode(SAMPLE, disallowed_special=()))
    finally:
        del os.environ["TIKTOKEN_CACHE_DIR"]


def test_the_kept_parse_counts_as_tiktoken_does(tmp_path: Path) -> None:
    kept = kept_path({"XDG_CACHE_HOME": str(tmp_path)})
    assert _start(tmp_path) == _reference()  # parses the file and keeps the result
    written = kept.stat().st_mtime_ns
    assert _start(tmp_path) == _reference()  # reads the kept copy
    assert kept.stat().st_mtime_ns == written  # used, not written again


@pytest.mark.parametrize("damage", ["garbage", "stale", "wrong shape"])
def test_a_bad_copy_is_parsed_again_and_replaced(tmp_path: Path, damage: str) -> None:
    kept = kept_path({"XDG_CACHE_HOME": str(tmp_path)})
    _start(tmp_path)
    data = marshal.loads(kept.read_bytes())
    bogus = {b"a": 0, b"b": 1}  # a copy of another file would count very differently
    if damage == "garbage":
        kept.write_bytes(b"\x00not marshal")
    elif damage == "stale":
        data["key"][0] = "0.0.1"  # made by another tiktoken
        data["ranks"] = bogus
        kept.write_bytes(marshal.dumps(data))
    else:
        data["ranks"] = list(bogus)
        kept.write_bytes(marshal.dumps(data))
    assert _start(tmp_path) == _reference()
    assert marshal.loads(kept.read_bytes())["key"][0] == tiktoken.__version__


def test_an_unwritable_cache_directory_still_counts(tmp_path: Path) -> None:
    blocked = tmp_path / "cache"
    blocked.write_text("a file where the directory should be", encoding="utf-8")
    assert _start(blocked) == _reference()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache"]
