"""Build the provider the settings ask for: resolve the URL, find the model and the real window.

`connect(settings)` is the main entry point the rest of Swival needs. Its discovery probes are
plain HTTP with short timeouts. Local servers (LM Studio, llama.cpp, Ollama, any `--base-url`)
get a direct httpx provider and never import litellm; httpx itself is imported on the first
call, or earlier by `warm_up(provider)` from a background thread. Connecting to a hosted model
imports nothing heavy either (its window comes from litellm's price map read as a file);
litellm is imported by `warm_up` or the first call.

Hosted models: with `--provider generic` and no `--base-url`, a litellm model string whose
prefix names a hosted provider (`openrouter/...`, `openai/...`, `anthropic/...`) goes to that
provider, with its usual API-key variable; when that variable is unset (and no `--api-key`
given), connecting fails at once with a ConfigError naming it (keys.py). With the default
provider (lmstudio, not chosen explicitly) the same holds for every hosted prefix except
`openai/`, because LM Studio model keys such as `openai/gpt-oss-20b` use it too.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from swival.config import Settings, selects_hosted
from swival.errors import ConfigError, ProviderError, ProviderUnreachable, UsageError
from swival.providers.base import Provider, ProviderInfo, WindowInfo
from swival.providers.discovery import (
    Discovered,
    ModelChoice,
    Server,
    discover_generic,
    discover_llamacpp,
    discover_lmstudio,
    discover_ollama,
    list_models,
)
from swival.providers.hosted import CallConfig, HostedProvider
from swival.providers.http import ProbeError
from swival.providers.keys import how_to_set, missing_key, provider_of
from swival.providers.ollama import OllamaProvider
from swival.providers.openai_compat import OpenAICompatProvider
from swival.providers.pricemap import hosted_window
from swival.providers.streaming import RetryPolicy, unreachable_message
from swival.providers.tokenize import ExactCounter
from swival.providers.wire import HttpChannel, Limits

DEFAULT_URLS = {
    "lmstudio": "http://127.0.0.1:1234",
    "llamacpp": "http://127.0.0.1:8080",
    "ollama": "http://127.0.0.1:11434",
}
CONFIGURED_WINDOW_SOURCE = "--max-context-tokens/config"

_DISCOVER: dict[str, Callable[[Server, str | None], Discovered]] = {
    "lmstudio": discover_lmstudio,
    "llamacpp": discover_llamacpp,
    "ollama": discover_ollama,
    "generic": discover_generic,
}


def split_base_url(url: str) -> tuple[str, str]:
    """(server root, OpenAI API base) from a root URL or its `/v1` URL; adds http:// if absent.
    A pasted endpoint (`.../v1/chat/completions`) counts as its `/v1` URL."""
    url = url.strip().rstrip("/").removesuffix("/chat/completions")
    if "://" not in url:
        url = "http://" + url
    parts = urlsplit(url)
    if not parts.netloc:
        raise UsageError(f"--base-url {url!r} is not a URL; give e.g. http://127.0.0.1:1234.")
    if url.endswith("/v1"):
        return url[:-3], url
    return url, url + "/v1"


def hosted_model(settings: Settings) -> bool:
    """Whether `settings.model` is a hosted litellm model string to send to its provider."""
    chosen = "provider" in settings.sources or settings.provider != "lmstudio"
    return selects_hosted(settings.provider if chosen else None, settings.base_url,
                          settings.model)


def _window(settings: Settings, found: WindowInfo, kind: str, switched: bool) -> WindowInfo:
    """The window to budget on. At start-up a configured `max_context_tokens` wins over
    the detected window: the user sized it for the model they start with. After /model
    (`switched`) it was sized for another model, so the new model's window, detected
    afresh, is used wherever it is smaller, and its source says so. Ollama is the
    exception: it loads a model with the num_ctx Swival sends, so the configured figure
    stays the window there."""
    configured = settings.max_context_tokens
    if configured is None:
        return found
    if switched and kind != "ollama" and found.tokens is not None and found.tokens < configured:
        return WindowInfo(found.tokens, f"{found.source}; your max_context_tokens "
                                        f"({configured}) is more than this model runs")
    return WindowInfo(configured, CONFIGURED_WINDOW_SOURCE)


def _limits(settings: Settings) -> Limits:
    return Limits(first=settings.request_timeout, idle=settings.idle_timeout)


def _hosted(settings: Settings, policy: RetryPolicy, switched: bool) -> Provider:
    model = str(settings.model)
    variable = missing_key(model, settings.api_key, os.environ)
    if variable is not None:  # litellm would send the request without one and fail late
        raise ConfigError(f"No API key for {provider_of(model)} (model {model}). "
                          + how_to_set(variable))
    if settings.max_context_tokens is not None and not switched:  # the map is not needed
        window = WindowInfo(settings.max_context_tokens, CONFIGURED_WINDOW_SOURCE)
    else:
        window = _window(settings, hosted_window(model), "hosted", switched)
    info = ProviderInfo(provider_of(model), "(hosted)", model, window, "configured")
    call = CallConfig(model, None, settings.api_key, _limits(settings))
    return HostedProvider(info, policy, call)


def _probe_failure(kind: str, exc: ProbeError, shown_url: str) -> ProviderError:
    if exc.tls:
        return ProviderUnreachable(exc.detail)
    if exc.unreachable:
        return ProviderUnreachable(unreachable_message(kind, shown_url))
    return ProviderError(
        f"{exc.url} answered, but not as a {kind} server does ({exc.detail[:200]}). Check "
        "--provider and --base-url."
    )


def _discover(kind: str, server: Server, model: str | None, shown_url: str) -> Discovered:
    try:
        return _DISCOVER[kind](server, model)
    except ProbeError as exc:
        raise _probe_failure(kind, exc, shown_url) from None


def _server(settings: Settings) -> tuple[Server, str]:
    """Where a local server is, and the URL to show for it."""
    kind = settings.provider
    root, api_base = split_base_url(settings.base_url or DEFAULT_URLS[kind])
    return Server(root, api_base, settings.api_key), api_base if kind == "generic" else root


def shown_url(settings: Settings) -> str | None:
    """The server URL the connection and its messages name for `settings` (as
    `ProviderInfo.base_url` does once connected); None for a generic provider without a
    URL. Never raises: a base URL that is not a URL is returned as given."""
    if hosted_model(settings):
        return "(hosted)"
    if settings.base_url is None and settings.provider not in DEFAULT_URLS:
        return None
    try:
        return _server(settings)[1]
    except UsageError:
        return settings.base_url


def connect(settings: Settings, policy: RetryPolicy | None = None, *,
            switched: bool = False) -> Provider:
    """A ready provider for `settings`, with `.info` (model, window and their sources) filled.
    `switched`: connecting for /model, when a configured window was sized for another
    model (see `_window`).

    Raises ProviderUnreachable when nothing answers, ModelNotFound when no model is loaded
    or the named one is missing, UsageError for a generic provider without a URL,
    ConfigError for a hosted model whose provider's API-key variable is unset.
    """
    policy = policy or RetryPolicy(retries=settings.retries,
                                   retry_after_max=settings.retry_after_max)
    if hosted_model(settings):
        return _hosted(settings, policy, switched)
    kind = settings.provider
    if settings.base_url is None and kind not in DEFAULT_URLS:
        raise UsageError(
            "--provider generic needs --base-url (the server's root or its /v1 URL), or a "
            "hosted litellm model string such as --model openrouter/qwen/qwen-2.5-coder-32b-"
            "instruct with OPENROUTER_API_KEY set."
        )
    server, shown = _server(settings)
    found = _discover(kind, server, settings.model, shown)
    window = _window(settings, found.window, kind, switched)
    info = ProviderInfo(kind, shown, found.model, window, found.model_source)
    limits = _limits(settings)
    if kind == "ollama":
        channel = HttpChannel(server.root, limits, settings.api_key)
        return OllamaProvider(info, policy, channel, window.budget_tokens)
    provider = OpenAICompatProvider(info, policy,
                                    HttpChannel(server.api_base, limits, settings.api_key))
    if kind == "llamacpp":  # its template and tokenizer endpoints give exact counts
        provider.exact = ExactCounter(server.root, settings.api_key)
    return provider


@dataclass(frozen=True)
class Connector:
    """The settings a session connected with, kept so /model can list the server's models
    and connect to another of them."""

    settings: Settings

    def connect(self, model: str) -> Provider:
        """A provider for `model` on the same server, its window detected afresh (a
        configured `max_context_tokens` only caps it, except on Ollama, where it is the
        num_ctx sent). Raises like `connect`; an Ollama provider sends the new window as
        its one fixed `num_ctx`."""
        return connect(replace(self.settings, model=model), switched=True)

    def models(self) -> list[ModelChoice] | None:
        """What the server offers; None for a hosted provider, which is not listed."""
        if hosted_model(self.settings):
            return None
        if self.settings.base_url is None and self.settings.provider not in DEFAULT_URLS:
            return None  # a generic provider without a URL never connected
        server, shown = _server(self.settings)
        try:
            return list_models(self.settings.provider, server)
        except ProbeError as exc:
            raise _probe_failure(self.settings.provider, exc, shown) from None


def warm_up(provider: Provider) -> None:
    """Load what the provider's first call needs (httpx and its client, or litellm for a
    hosted model) ahead of time; meant for a background thread.

    Never raises: a failure shows up, with its real error, on the first model call.
    """
    warm = getattr(provider, "warm", None)  # test doubles have nothing to load
    if callable(warm):
        try:
            warm()
        except Exception:  # noqa: BLE001 - see docstring
            return


def spent(provider: Provider) -> float | None:
    """US dollars the session's calls cost by litellm's price map (hosted models), or None
    when unknown (local servers are free; an unpriced hosted model is unknown)."""
    value = getattr(provider, "spent_usd", None)
    return value if isinstance(value, float) else None
