"""What the prompt is made of: the history file, Tab completion, key bindings, style."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path

from prompt_toolkit.completion import CompleteEvent, Completer, Completion, PathCompleter
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.styles import Style

from swival.commands import COMMANDS
from swival.redaction import Redactor
from swival.state import HISTORY, STATE_DIR

PROMPT = "› "
LEAVE_HINT = "Press Ctrl-C again to leave (or Ctrl-D)."
LAST_WORD = re.compile(r"(?:\\ |\S)+$")  # the word being typed; `\ ` is an escaped space
STYLE = Style.from_dict({
    "bottom-toolbar": "noreverse bg:#303030 #c0c0c0",
    "bottom-toolbar.warn": "bg:#303030 fg:ansiyellow bold",
    "bottom-toolbar.crit": "bg:#303030 fg:ansired bold",
    "prompt": "bold",
})
TOOLBAR_STYLES = {"ok": "class:bottom-toolbar", "warn": "class:bottom-toolbar.warn",
                  "crit": "class:bottom-toolbar.crit"}


class RedactingHistory(FileHistory):
    """The prompt history file, with the session's secrets put out of sight before a
    line is saved (the line stays whole in this session's memory)."""

    def __init__(self, filename: str, redactor: Redactor) -> None:
        super().__init__(filename)
        self.redactor = redactor

    def store_string(self, string: str) -> None:
        super().store_string(self.redactor.redact(string))


def make_history(root: Path, redactor: Redactor, keep: bool) -> FileHistory | InMemoryHistory:
    """The project's history file (`<root>/.swival/history`), or one in memory when
    `keep` is False or the file cannot be made."""
    if not keep:
        return InMemoryHistory()
    path = root / STATE_DIR / HISTORY
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return RedactingHistory(str(path), redactor)
    except OSError:
        return InMemoryHistory()  # a read-only project still gets a working prompt


class SlashAndPathCompleter(Completer):
    """Tab completes command names after a leading '/', their flags (and /model's model
    names, from `models`; /help's command names) after the name, and otherwise the last
    word as a path relative to the project root, an `@mention` included (spaces in names
    escaped: `my\\ dir/`)."""

    def __init__(self, root: Path, models: Callable[[], list[str]] | None = None) -> None:
        self.paths = PathCompleter(get_paths=lambda: [str(root)], expanduser=True)
        self.models = models

    def get_completions(self, document: Document,
                        complete_event: CompleteEvent) -> Iterable[Completion]:
        text = document.text_before_cursor
        if text.startswith("/") and " " not in text:
            for command in COMMANDS:
                if command.name.startswith(text[1:]):
                    yield Completion("/" + command.name, start_position=-len(text),
                                     display_meta=command.help.split(".")[0])
            return
        if text.startswith("/"):
            name, _, rest = text[1:].partition(" ")
            word = rest.split(" ")[-1]
            names = self.models() if name == "model" and self.models is not None else []
            if name == "help":  # /help NAME
                names = [command.name for command in COMMANDS]
            for command in COMMANDS:
                if command.name == name:
                    for choice in (*command.flags, *names):
                        if choice.startswith(word):
                            yield Completion(choice, start_position=-len(word))
            return
        match = LAST_WORD.search(text)
        word = match.group(0) if match else ""
        mention = word.startswith("@")
        word = (word[1:] if mention else word).replace("\\ ", " ")
        if word or mention:
            for found in self.paths.get_completions(Document(word, len(word)), complete_event):
                # a space in a name is escaped, so the path stays one word of the request
                yield Completion(found.text.replace(" ", "\\ "), found.start_position,
                                 display=found.display)


def key_bindings() -> KeyBindings:
    bindings = KeyBindings()

    @bindings.add("escape", "enter")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    return bindings
