"""Token counting: tiktoken's cl100k_base, offline, cached per message.

tiktoken normally downloads its encoding file on first use. Local-model users are
often offline, so we point `TIKTOKEN_CACHE_DIR` (only when the user has not set it)
at the copies litellm ships, found without importing litellm (its import costs
seconds). When the encoding file is not on disk we never fetch it: we fall back to
a character estimate, `ceil(chars / 3.0)`. Measured with cl100k: the 36 recorded
agent runs in benchmarks/trajectories (code, diffs, test output) average 3.1
characters per token, plain Python source about 4.5. We take the low end so the
estimate errs towards compacting early, never towards overflowing; the calibration
against the server's reported figures then corrects it within a few calls.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import json
import marshal
import math
import os
import tempfile
import threading
import weakref
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Any

from swival.messages import Message

ENCODING = "cl100k_base"
ENCODING_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
CHARS_PER_TOKEN = 3.0  # fallback ratio; see the module docstring
MESSAGE_OVERHEAD = 4  # role, separators and end-of-message tokens per chat message
CALL_OVERHEAD = 8  # id, type and function wrapper of one tool call
SCHEMA_OVERHEAD = 10  # per tool schema, beyond its JSON text
KEPT_FILE = "cl100k_base.marshal"  # in the user cache directory; see _encoding


def litellm_tokenizer_dir() -> Path | None:
    """The directory of tiktoken files litellm ships, located without importing it."""
    try:
        spec = importlib.util.find_spec("litellm")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for base in spec.submodule_search_locations:
        candidate = Path(base) / "litellm_core_utils" / "tokenizers"
        if candidate.is_dir():
            return candidate
    return None


def _cache_file(cache_dir: str) -> Path:
    # tiktoken names cached blobs by the SHA-1 of their URL.
    return Path(cache_dir) / hashlib.sha1(ENCODING_URL.encode()).hexdigest()


def prepare_offline_cache(env: MutableMapping[str, str] | None = None) -> Path | None:
    """Set TIKTOKEN_CACHE_DIR to litellm's copies when unset; return the encoding
    file if it is on disk (so loading it cannot reach the network), else None."""
    env = os.environ if env is None else env
    if "TIKTOKEN_CACHE_DIR" not in env:
        found = litellm_tokenizer_dir()
        if found is not None:
            env["TIKTOKEN_CACHE_DIR"] = str(found)
    cache_dir = env.get("TIKTOKEN_CACHE_DIR") or env.get("DATA_GYM_CACHE_DIR")
    if cache_dir is None:
        cache_dir = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    if not cache_dir:
        return None  # an empty value turns tiktoken's cache off: it would download
    path = _cache_file(cache_dir)
    return path if path.is_file() else None


def load_encoder(env: MutableMapping[str, str] | None = None) -> Callable[[str], int] | None:
    """A text -> token-count function using tiktoken, or None when the encoding is
    not available offline (the caller then uses the character estimate)."""
    found = prepare_offline_cache(env)
    if found is None:
        return None
    try:
        encoding = _encoding(found)
    except Exception:  # a corrupt cache file or a missing package: estimate instead
        return None

    def count(text: str) -> int:
        return len(encoding.encode(text, disallowed_special=()))

    return count


def kept_path(env: Mapping[str, str]) -> Path:
    """Where the tokenizer's parse is kept: `$XDG_CACHE_HOME/swival/`, by default
    `~/.cache/swival/` (deleting it only costs the next start the parse)."""
    base = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".cache")
    return Path(base) / "swival" / KEPT_FILE


@functools.cache
def _encoding(found: Path) -> Any:
    """cl100k_base as a tiktoken Encoding, loaded once per process. tiktoken parses the
    1.6 MB encoding file in Python (~65 ms of CPU); what it parsed is kept in the user
    cache directory (read in ~15 ms) and used while the file it came from, and tiktoken's
    version, stay the same."""
    import tiktoken

    stat = found.stat()
    key = [tiktoken.__version__, str(found), stat.st_size, stat.st_mtime_ns]
    kept_file = kept_path(os.environ)
    kept = _read_kept(kept_file, key)
    if kept is not None:
        return tiktoken.Encoding(
            ENCODING,
            pat_str=kept["pat_str"],
            mergeable_ranks=kept["ranks"],
            special_tokens=kept["special"],
        )
    # tiktoken reads its cache location from os.environ only: point it at the file we
    # found for the duration of the load (it keeps the encoding once loaded).
    saved = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(found.parent)
    try:
        encoding = tiktoken.get_encoding(ENCODING)  # checks the file's SHA-256
    finally:
        if saved is None:
            os.environ.pop("TIKTOKEN_CACHE_DIR", None)
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = saved
    _keep(kept_file, key, encoding)
    return encoding


def _read_kept(path: Path, key: list[Any]) -> dict[str, Any] | None:
    """The kept parse when it was made from the same file by the same tiktoken, else None
    (missing, stale or damaged: tiktoken parses the file again)."""
    try:
        kept = marshal.loads(path.read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        return None
    if not isinstance(kept, dict) or kept.get("key") != key:
        return None
    parts = (kept.get("pat_str"), kept.get("ranks"), kept.get("special"))
    if not (
        isinstance(parts[0], str) and isinstance(parts[1], dict) and isinstance(parts[2], dict)
    ):
        return None
    return kept


def _keep(path: Path, key: list[Any], encoding: Any) -> None:
    """Write what tiktoken parsed for the next start (atomically); a state directory that
    cannot be written only means the next start parses again."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        data = {
            "key": key,
            "pat_str": encoding._pat_str,
            "ranks": encoding._mergeable_ranks,
            "special": encoding._special_tokens,
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        temp.write_bytes(marshal.dumps(data))
        os.replace(temp, path)
    except (OSError, AttributeError, ValueError):
        with contextlib.suppress(OSError):
            temp.unlink(missing_ok=True)


def estimate_tokens(text: str) -> int:
    """The fallback count: ceil(chars / 3.0)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


class TokenCounter:
    """Counts tokens of texts, messages and tool schemas.

    Message counts are cached per Message object (messages are immutable and hash by
    identity), so a 32K history costs one dictionary lookup per message per call.
    """

    def __init__(
        self, *, use_tiktoken: bool = True, env: MutableMapping[str, str] | None = None
    ) -> None:
        self._use_tiktoken = use_tiktoken
        self._env = env
        self._counter: Callable[[str], int] | None = None
        self._lock = threading.Lock()
        self._cache: weakref.WeakKeyDictionary[Message, int] = weakref.WeakKeyDictionary()

    def _count(self, text: str) -> int:
        # The encoding takes ~0.2 s to load: do it on first use, not at start-up, so the
        # REPL's prompt appears at once (its warm-up thread makes the first count).
        if self._counter is None:
            with self._lock:
                if self._counter is None:
                    encoder = load_encoder(self._env) if self._use_tiktoken else None
                    self._counter = encoder or estimate_tokens
        return self._counter(text)

    @property
    def exact(self) -> bool:
        """Whether tiktoken is in use (False: the character estimate)."""
        self._count("x")
        return self._counter is not estimate_tokens

    def text(self, text: str) -> int:
        return self._count(text) if text else 0

    def message(self, message: Message) -> int:
        cached = self._cache.get(message)
        if cached is not None:
            return cached
        total = MESSAGE_OVERHEAD + self.text(message.content)
        for call in message.tool_calls:
            total += CALL_OVERHEAD + self.text(call.name) + self.text(call.arguments_json())
        if message.name:
            total += self.text(message.name)
        self._cache[message] = total
        return total

    def messages(self, messages: Sequence[Message]) -> int:
        return sum(self.message(m) for m in messages) + 3  # the reply's priming tokens

    def schemas(self, schemas: Sequence[Mapping[str, Any]]) -> int:
        return sum(
            SCHEMA_OVERHEAD + self.text(json.dumps(s, ensure_ascii=False, sort_keys=True))
            for s in schemas
        )
