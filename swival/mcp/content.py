"""A tool result from an MCP server as compact text for the model.

Text blocks are kept as they are; structured content is compact JSON (left out when a
text block already holds the same value, as most SDK servers send both); images, audio
and binary resources are described, never inlined (a small model cannot read base64 and
it would cost thousands of tokens); embedded text resources keep their text under a
line naming them; resource links are named.

Works on the SDK's result objects by their fields alone, so nothing here imports the SDK.
"""

from __future__ import annotations

import json
from typing import Any

from swival.words import plural


def compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _size(data: str | None) -> str:
    """The decoded size of base64 `data`, for a person."""
    raw = len(data or "") * 3 // 4
    return f"{raw / 1024:.1f} KB" if raw >= 1024 else plural(raw, "byte")


def _resource(resource: Any) -> str:
    uri = str(getattr(resource, "uri", ""))
    mime = getattr(resource, "mime_type", None) or "unknown type"
    text = getattr(resource, "text", None)
    if text is not None:
        return f"[resource {uri} ({mime})]\n{text}"
    return (f"[resource {uri}: {mime}, {_size(getattr(resource, 'blob', ''))} of binary "
            "data, not shown]")


def _text(text: str) -> str:
    """Text as sent, except JSON objects and arrays, which are made compact."""
    stripped = text.strip()
    if stripped[:1] in ("{", "[") and stripped[-1:] in ("}", "]"):
        try:
            return compact_json(json.loads(stripped))
        except ValueError:
            pass
    return text


def render_block(block: Any) -> str:
    """One content block as text."""
    kind = getattr(block, "type", "")
    if kind == "text":
        return _text(str(block.text))
    if kind in ("image", "audio"):
        return (f"[{kind}: {block.mime_type}, {_size(block.data)}; not shown to the model, "
                "which reads text only]")
    if kind == "resource":
        return _resource(block.resource)
    if kind == "resource_link":
        mime = f", {block.mime_type}" if getattr(block, "mime_type", None) else ""
        return f"[resource link: {block.name} <{block.uri}>{mime}]"
    return f"[{kind or 'unknown'} content, not shown]"


def _parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _shown_already(structured: Any, texts: list[str]) -> bool:
    """Whether a text block already carries the structured value (SDK servers send both;
    a bare value comes wrapped as {"result": value})."""
    values = [_parsed(t) for t in texts] + texts
    if structured in values:
        return True
    if isinstance(structured, dict) and list(structured) == ["result"]:
        inner = structured["result"]
        return inner in values or str(inner) in texts
    return False


def render(result: Any) -> str:
    """The whole result as one text (empty content says so)."""
    blocks = getattr(result, "content", None) or ()
    parts = [render_block(block) for block in blocks]
    structured = getattr(result, "structured_content", None)
    texts = [str(b.text) for b in blocks if getattr(b, "type", "") == "text"]
    if structured is not None and not _shown_already(structured, texts):
        parts.append(compact_json(structured))
    text = "\n".join(part for part in parts if part)
    return text or "[the tool returned no content]"
