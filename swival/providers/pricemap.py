"""litellm's bundled model map, read as plain data: a hosted model's window without litellm.

litellm ships its map of model windows and prices as a JSON file inside its package; with
`LITELLM_LOCAL_MODEL_COST_MAP=True` (how hosted.py always imports it) that file is the map
litellm itself uses. Importing litellm takes seconds; locating the file with
`importlib.util.find_spec` (which runs none of the package) and parsing it takes ~30 ms, so
connecting to a hosted model draws the REPL's prompt without waiting for litellm.

The lookup follows litellm's for the model strings Swival sends to hosted providers
(`provider/name`): the whole string as a key (`gemini/gemini-2.5-flash`,
`openrouter/...`), else the name after the prefix, if the entry belongs to that provider
(`openai/gpt-4o-mini` -> `gpt-4o-mini`). A model the map lacks has an unknown window, never
a guessed one.
"""

from __future__ import annotations

import difflib
import importlib.util
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from swival.providers.base import WindowInfo

MAP_FILE = "model_prices_and_context_window_backup.json"
PRICE_SOURCE = "litellm's bundled price map"
Entries = Mapping[str, Any]


def map_path() -> Path | None:
    """Where the installed litellm keeps its map, or None when litellm or the file is
    missing. Does not import litellm."""
    try:
        spec = importlib.util.find_spec("litellm")
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        path = Path(folder) / MAP_FILE
        if path.is_file():
            return path
    return None


def load_map(path: Path | None) -> Entries:
    """The map's entries by model key; empty when the file is missing or unreadable."""
    if path is None:
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def model_entry(entries: Entries, model: str) -> Mapping[str, Any] | None:
    """The map's entry for the litellm model string `model`, or None (see module docs)."""
    prefix, _, name = model.partition("/")
    candidates = [(model, None)] + ([(name, prefix)] if name else [])
    for key, provider in candidates:
        for variant in dict.fromkeys((key, key.lower())):
            entry = entries.get(variant)
            if isinstance(entry, Mapping) and _belongs(entry, provider):
                return entry
    return None


def _belongs(entry: Mapping[str, Any], provider: str | None) -> bool:
    """Whether `entry` is `provider`'s (any provider when None). Some providers keep
    their entries under sub-names such as `vertex_ai-language-models`."""
    if provider is None:
        return True
    owner = str(entry.get("litellm_provider", ""))
    return owner == provider or owner.startswith(provider + "-")


def hosted_window(model: str, path: Path | None = None) -> WindowInfo:
    """The input window the map gives for `model`, saying where it came from; unknown when
    the map lacks it. `path` defaults to the installed litellm's map."""
    entry = model_entry(load_map(path or map_path()), model)
    for field in ("max_input_tokens", "max_tokens"):
        tokens = entry.get(field) if entry is not None else None
        if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0:
            return WindowInfo(tokens, f"{PRICE_SOURCE}, {field}")
    return WindowInfo(None, f"{model} is not in {PRICE_SOURCE}; pass --max-context-tokens")


def similar_models(model: str, path: Path | None = None, count: int = 3) -> list[str]:
    """Up to `count` model strings of `model`'s provider in the map whose names look like
    its name, closest first (for a model the provider does not have)."""
    prefix, _, name = model.partition("/")
    known = []
    for key, entry in load_map(path or map_path()).items():
        if isinstance(entry, Mapping) and entry.get("mode", "chat") == "chat" and _belongs(
                entry, prefix):
            known.append(key.split("/", 1)[1] if key.startswith(prefix + "/") else key)
    found = difflib.get_close_matches(name or model, known, n=count, cutoff=0.5)
    return [f"{prefix}/{key}" for key in found]
