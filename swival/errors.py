"""The exception tree for infrastructure failures (tool failures are data, not exceptions).

    SwivalError                       exit 1
    ├── ConfigError                   exit 2  bad config file, unknown key, wrong type
    ├── UsageError                    exit 2  bad command-line use
    ├── ProviderError                 exit 1  the model server misbehaved
    │   ├── ProviderUnreachable       exit 3  nothing answers at the URL
    │   ├── ModelNotFound             exit 3  no model loaded / the named model is missing
    │   ├── TransientProviderError    exit 1  429 / 5xx / dropped connection, after retries
    │   ├── EmptyResponseError        exit 1  the model returned nothing, twice
    │   └── ContextOverflowError      exit 5  the request did not fit the server's window
    └── ContextExhausted              exit 5  nothing more can be compacted

Every error carries a message meant for the user: what happened and what to do.
"""

from __future__ import annotations


class SwivalError(Exception):
    exit_code = 1


class ConfigError(SwivalError):
    exit_code = 2


class UsageError(SwivalError):
    exit_code = 2


class ProviderError(SwivalError):
    exit_code = 1


class ProviderUnreachable(ProviderError):
    exit_code = 3


class ModelNotFound(ProviderError):
    exit_code = 3


class TransientProviderError(ProviderError):
    """429, 5xx or a dropped connection that persisted through the retries."""


class EmptyResponseError(ProviderError):
    """The model produced neither text nor tool calls."""


class ContextOverflowError(ProviderError):
    """The server could not take the whole prompt (rejected it, or cut it silently).

    `prompt_tokens` and `window` are the server's own figures when it gave them;
    the context engine uses them to recalibrate before compacting deeper.
    """

    exit_code = 5

    def __init__(
        self,
        message: str,
        *,
        kind: str = "rejected",
        prompt_tokens: int | None = None,
        window: int | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.prompt_tokens = prompt_tokens
        self.window = window


class ContextExhausted(SwivalError):
    exit_code = 5


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so every cleanup path (killing command process
    groups, answering pending tool calls, flushing the transcript) runs the same way."""

    exit_code = 143

