"""Secrets out of everything Swival writes, and back into files the model writes back.

A `Redactor` holds a session's secret values by name: environment variables such as
OPENROUTER_API_KEY, and the configured key as `api_key` (see
`swival.config.named_secrets`). Every place that writes text a person or the model may
see — tool results, transcripts, spill files, `--json`, stderr, the REPL — passes it
through `redact`, which puts the secret's marker `[redacted:NAME]` where the value
stood. Markers are distinct per secret and name the variable, never the value, so they
stay the same from one session to the next; `restore` puts the values back where the
markers stand when the model writes a file that held them.

Text is often cut before it is shown (a long line, an error body shortened by a
provider). A cut through a secret would show its first half, so the start of a secret
(MIN_PARTIAL characters or more) that runs up to the end of the text or to an ellipsis
becomes `[redacted:NAME/cut]`, a marker nothing is ever restored from.

Values shorter than MIN_SECRET characters are ignored: they are not real keys, and
replacing them would mangle ordinary text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, BinaryIO

MIN_SECRET = 8
MIN_PARTIAL = 12  # the shortest start of a secret masked where a text was cut
CUT_MARKS = ("...", "…")
MARKER_START = "[redacted"
BLOCK = 1 << 20


def marker(name: str) -> str:
    """The text that stands for the secret called `name`."""
    return f"{MARKER_START}:{name}]"


@dataclass(frozen=True)
class Redactor:
    """Secret values by name; immutable. An empty Redactor changes nothing."""

    secrets: tuple[tuple[str, str], ...] = ()  # (name, value), longest value first

    @classmethod
    def of(cls, named: Mapping[str, str]) -> Redactor:
        """Build from name -> value. A value held under several names gets the first
        name in sorted order; values shorter than MIN_SECRET are left out. A value of
        several lines (a private key) becomes one secret per line, `NAME.1`, `NAME.2`...,
        since tools show and search files line by line."""
        by_value: dict[str, str] = {}
        for name in sorted(named):
            lines = named[name].replace("\r\n", "\n").split("\n")
            parts = [(name, lines[0])] if len(lines) == 1 else [
                (f"{name}.{n}", line) for n, line in enumerate(lines, 1)]
            for part, value in parts:
                if len(value) >= MIN_SECRET:
                    by_value.setdefault(value, part)
        pairs = sorted(((n, v) for v, n in by_value.items()), key=lambda p: (-len(p[1]), p[0]))
        return cls(tuple(pairs))

    def with_secrets(self, named: Mapping[str, str]) -> Redactor:
        """This redactor with more secrets (an MCP server's env and header values, say)."""
        return Redactor.of({**dict(self.secrets), **named})

    def __bool__(self) -> bool:
        return bool(self.secrets)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.secrets)

    @cached_property
    def _by_value(self) -> dict[str, str]:
        return {value: name for name, value in self.secrets}

    @cached_property
    def _pattern(self) -> re.Pattern[str]:
        # Longest first, so a secret that contains another is replaced whole.
        return re.compile("|".join(re.escape(value) for _, value in self.secrets))

    @cached_property
    def _bytes(self) -> tuple[re.Pattern[bytes], dict[bytes, bytes], int]:
        values = sorted((v.encode() for _, v in self.secrets), key=len, reverse=True)
        table = {value.encode(): marker(name).encode() for name, value in self.secrets}
        return re.compile(b"|".join(re.escape(v) for v in values)), table, len(values[0])

    def redact(self, text: str, found: set[str] | None = None) -> str:
        """`text` with every secret value replaced by its marker, and the cut start of
        one by its `/cut` marker; the names of the whole secrets replaced are added to
        `found` when given."""
        if not self.secrets:
            return text

        def swap(match: re.Match[str]) -> str:
            name = self._by_value[match.group()]
            if found is not None:
                found.add(name)
            return marker(name)

        return self._cut_starts(self._pattern.sub(swap, text))

    def _cut_starts(self, text: str) -> str:
        """Mask what is left of a secret where a cut went through it (whole ones are
        already gone)."""
        for name, value in self.secrets:
            head, start = value[:MIN_PARTIAL], 0
            while len(value) > MIN_PARTIAL and (at := text.find(head, start)) != -1:
                end = at + MIN_PARTIAL
                while end < len(text) and end - at < len(value) and text[end] == value[end - at]:
                    end += 1
                if end in (len(text), at + len(value)) or text.startswith(CUT_MARKS, end):
                    text = text[:at] + marker(f"{name}/cut") + text[end:]
                start = at + 1
        return text

    def scrub(self, value: Any) -> Any:
        """`value` with every string inside it (lists, tuples, dict values) redacted."""
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, Mapping):
            return {key: self.scrub(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self.scrub(item) for item in value)
        return value

    def literal_markers(self, text: str, names: Iterable[str]) -> set[str]:
        """Those of `names` whose marker already stands in `text` as plain text."""
        return {name for name in names if marker(name) in text}

    def restore(self, text: str, names: Iterable[str]) -> str:
        """`text` with the markers of the secrets called `names` replaced by their values."""
        values = dict(self.secrets)
        for name in names:
            text = text.replace(marker(name), values[name])
        return text

    def copy(self, src: BinaryIO, dst: BinaryIO) -> None:
        """Copy `src` to `dst` from their current positions, redacting as it goes, in
        bounded memory; a value split across two reads is still found."""
        if not self.secrets:
            while block := src.read(BLOCK):
                dst.write(block)
            return
        pattern, table, longest = self._bytes
        carry = b""
        while block := src.read(BLOCK):
            data = carry + block
            # A match starting before `safe` ends inside `data`; later ones may go on in
            # the next block, so that part is carried over.
            safe, done, out = len(data) - longest + 1, 0, []
            for match in pattern.finditer(data):
                if match.start() >= safe:
                    break
                out += [data[done:match.start()], table[match.group()]]
                done = match.end()
            cut = max(done, safe, 0)
            out.append(data[done:cut])
            dst.write(b"".join(out))
            carry = data[cut:]
        dst.write(pattern.sub(lambda m: table[m.group()], carry))
