"""Find the model a server runs and the context window it really uses.

Each `discover_*` function asks one kind of server with short plain-HTTP probes and returns a
`Discovered`. Window sources, in the order issue 3 §3 fixes (the configured
`--max-context-tokens` is applied by the factory on top of these):

- LM Studio: the loaded instance's context length from the native v1 API
  (`/api/v1/models` → `loaded_instances[].config.context_length`), falling back to v0
  (`/api/v0/models` → `loaded_context_length`).
- llama.cpp: `/props` → `default_generation_settings.n_ctx` (or a top-level `n_ctx`).
- Ollama: `/api/ps` `context_length` of the running model, else `num_ctx` from `/api/show`
  parameters, else Ollama's default; the trained maximum (`model_info.*.context_length`) is only
  ever an upper bound.
- generic: unknown (an OpenAI-compatible server does not say), shown as unknown.

A server that answers but lacks an endpoint degrades to an unknown window; a server that does
not answer at all raises ProbeError (the factory turns it into ProviderUnreachable).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from swival.errors import ModelNotFound
from swival.providers.base import WindowInfo
from swival.providers.http import ProbeError, fetch_json

OLLAMA_DEFAULT_CONTEXT = 4096  # Ollama's default num_ctx below 24 GiB of VRAM (its docs)
OLLAMA_SHOWN = 12  # installed models /model asks /api/show about (one request each)


@dataclass(frozen=True)
class Discovered:
    model: str
    model_source: str
    window: WindowInfo


@dataclass(frozen=True)
class Server:
    """Where to probe: the server root (no /v1), the OpenAI-style API base, and the key."""

    root: str
    api_base: str
    api_key: str | None = None

    def get(self, path: str) -> Any:
        return fetch_json(self.root + path, api_key=self.api_key)

    def post(self, path: str, body: dict[str, Any]) -> Any:
        return fetch_json(self.root + path, body=body, api_key=self.api_key)


def _unknown(why: str) -> WindowInfo:
    return WindowInfo(None, why)


def _openai_models(server: Server) -> list[str]:
    data = fetch_json(server.api_base + "/models", api_key=server.api_key)
    rows = data.get("data", []) if isinstance(data, Mapping) else []
    return [str(row["id"]) for row in rows if isinstance(row, Mapping) and row.get("id")]


def discover_generic(server: Server, model: str | None) -> Discovered:
    """Any OpenAI-compatible server: the first model of `/v1/models`; window unknown."""
    window = _unknown("the server does not report its window; pass --max-context-tokens")
    if model is not None:
        try:
            _openai_models(server)  # proves the server is there; the list itself is optional
        except ProbeError as exc:
            if exc.unreachable:
                raise
        return Discovered(model, "configured", window)
    models = _openai_models(server)
    if not models:
        raise ModelNotFound(
            f"The server at {server.api_base} lists no models at /models. Load a model on the "
            "server, or name one with --model."
        )
    return Discovered(models[0], f"first of {server.api_base}/models", window)


def _lmstudio_v1(server: Server, model: str | None) -> Discovered | None:
    data = server.get("/api/v1/models")
    for entry in data.get("models", []):
        for inst in entry.get("loaded_instances") or ():
            ident = inst.get("id") or entry.get("key")
            if model is not None and model not in (ident, entry.get("key")):
                continue
            ctx = (inst.get("config") or {}).get("context_length")
            window = (
                WindowInfo(int(ctx), "LM Studio loaded context length (/api/v1/models)", True)
                if isinstance(ctx, int) else _unknown("LM Studio did not report the context")
            )
            return Discovered(model or ident, "configured" if model else "loaded in LM Studio",
                              window)
    return None


def _lmstudio_v0(server: Server, model: str | None) -> Discovered | None:
    data = server.get("/api/v0/models")
    for entry in data.get("data", []):
        if entry.get("state") != "loaded" or entry.get("type") == "embeddings":
            continue
        if model is not None and entry.get("id") != model:
            continue
        ctx = entry.get("loaded_context_length")
        window = (
            WindowInfo(int(ctx), "LM Studio loaded context length (/api/v0/models)", True)
            if isinstance(ctx, int) else _unknown("LM Studio did not report the context")
        )
        return Discovered(model or entry["id"], "configured" if model else "loaded in LM Studio",
                          window)
    return None


def discover_lmstudio(server: Server, model: str | None) -> Discovered:
    """LM Studio: the loaded model and its loaded context length (v1 API, then v0)."""
    for probe in (_lmstudio_v1, _lmstudio_v0):
        try:
            found = probe(server, model)
        except ProbeError as exc:
            if exc.unreachable:
                raise
            continue
        except (AttributeError, TypeError, KeyError):
            continue  # an unexpected shape: try the next API
        if found is not None:
            return found
        if model is None:
            raise ModelNotFound(
                f"LM Studio at {server.root} has no model loaded. Load one in LM Studio (or "
                "`lms load <model> --context-length 16384`), or name one with --model."
            )
        break
    found_generic = discover_generic(server, model)
    return Discovered(found_generic.model, found_generic.model_source,
                      _unknown("LM Studio did not report the loaded context length"))


def discover_llamacpp(server: Server, model: str | None) -> Discovered:
    """llama.cpp: the served model (`/v1/models`) and `n_ctx` from `/props`."""
    window = _unknown("llama.cpp /props gave no n_ctx; pass --max-context-tokens")
    try:
        props = server.get("/props")
        settings = props.get("default_generation_settings") or {}
        n_ctx = settings.get("n_ctx") or props.get("n_ctx")
        if isinstance(n_ctx, int) and n_ctx > 0:
            window = WindowInfo(n_ctx, "llama.cpp /props n_ctx", confirmed=True)
    except ProbeError as exc:
        if exc.unreachable:
            raise
    except AttributeError:
        pass  # /props answered with something that is not an object
    found = discover_generic(server, model)
    source = found.model_source if model else "served by llama.cpp"
    return Discovered(found.model, source, window)


def _ollama_name(name: str) -> str:
    return name if ":" in name else name + ":latest"


def _ollama_installed(server: Server) -> list[str]:
    try:
        tags = server.get("/api/tags")
    except ProbeError as exc:
        if exc.unreachable:
            raise
        return []
    return [str(m.get("name") or m.get("model")) for m in tags.get("models", [])]


def _ollama_missing(server: Server, model: str | None) -> ModelNotFound:
    installed = _ollama_installed(server)
    if not installed:
        return ModelNotFound(
            f"Ollama at {server.root} has no models installed. Pull one first, e.g. "
            "`ollama pull qwen2.5-coder:7b`, then run again with --model qwen2.5-coder:7b."
        )
    listing = ", ".join(installed)
    if model is None:
        return ModelNotFound(
            f"Ollama at {server.root} has no model running. Installed: {listing}. Choose one "
            f"with --model (e.g. --model {installed[0]}), or set `model = \"{installed[0]}\"` "
            "in swival.toml."
        )
    return ModelNotFound(
        f"Ollama at {server.root} has no model named {model!r}. Installed: {listing}. "
        f"Pull it with `ollama pull {model}` or choose an installed one with --model."
    )


def _ollama_show(server: Server, model: str) -> Mapping[str, Any]:
    try:
        shown = server.post("/api/show", {"model": model})
    except ProbeError as exc:
        if exc.status == 404:
            raise _ollama_missing(server, model) from None
        raise
    return shown if isinstance(shown, Mapping) else {}


def _ollama_limits(shown: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """(num_ctx from the model's parameters, trained maximum from model_info)."""
    num_ctx = None
    for line in str(shown.get("parameters") or "").splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "num_ctx" and parts[1].isdigit():
            num_ctx = int(parts[1])
    trained = None
    for key, value in (shown.get("model_info") or {}).items():
        if key.endswith(".context_length") and isinstance(value, int):
            trained = value
    return num_ctx, trained


def discover_ollama(server: Server, model: str | None) -> Discovered:
    """Ollama: the running model (or the named one) and the num_ctx to send on every call."""
    running = server.get("/api/ps").get("models", [])
    chosen = None
    for entry in running:
        name = str(entry.get("name") or entry.get("model"))
        if model is None or _ollama_name(model) == _ollama_name(name):
            chosen = (name, entry)
            break
    if chosen is None and model is None:
        raise _ollama_missing(server, None)
    name = chosen[0] if chosen else str(model)
    window = _ollama_window(_ollama_show(server, name),
                            chosen[1].get("context_length") if chosen else None)
    return Discovered(name, "configured" if model else "running in Ollama", window)


def _ollama_window(shown: Mapping[str, Any], running: Any) -> WindowInfo:
    """The window of a model Ollama runs with context length `running` (None: not running,
    so it will load with the num_ctx in its parameters, else Ollama's default), never above
    the trained maximum; `shown` is its /api/show reply."""
    num_ctx, trained = _ollama_limits(shown)
    if isinstance(running, int) and running > 0:
        tokens, source = running, "Ollama /api/ps context_length of the running model"
    elif num_ctx is not None:
        tokens, source = num_ctx, "num_ctx in the model's Ollama parameters (/api/show)"
    else:
        tokens, source = OLLAMA_DEFAULT_CONTEXT, (
            f"Ollama's default ({OLLAMA_DEFAULT_CONTEXT}); set OLLAMA_CONTEXT_LENGTH or "
            "--max-context-tokens for more")
    if trained is not None and tokens > trained:
        tokens, source = trained, f"the model's trained maximum ({trained}), capping {source}"
    return WindowInfo(tokens, source)


def ollama_trained_max(server: Server, model: str) -> int | None:
    """The model's trained context maximum, for capping a configured window."""
    try:
        return _ollama_limits(_ollama_show(server, model))[1]
    except (ProbeError, ModelNotFound):
        return None


# ----- listing what a server offers (/model) -------------------------------------------


@dataclass(frozen=True)
class ModelChoice:
    """One model a server offers. `state`: "loaded" (LM Studio), "running" (Ollama),
    "served" (llama.cpp), "downloaded" (LM Studio, not loaded), "installed" (Ollama, not
    running) or "listed" (any other server). `window` is the context it runs with, where
    the server says; `limit` the most it can be loaded with, where known."""

    name: str
    state: str
    window: int | None = None
    limit: int | None = None


def _number(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 \
        else None


def _lmstudio_choices(server: Server) -> list[ModelChoice]:
    """LM Studio's models (v1 API, else v0): each loaded instance, then the rest."""
    try:
        data = server.get("/api/v1/models")
        entries = [e for e in data.get("models", []) if "embed" not in str(e.get("type"))]
        out = [ModelChoice(str(inst.get("id") or e.get("key")), "loaded",
                           _number((inst.get("config") or {}).get("context_length")),
                           _number(e.get("max_context_length")))
               for e in entries for inst in e.get("loaded_instances") or ()]
        return out + [ModelChoice(str(e.get("key")), "downloaded", None,
                                  _number(e.get("max_context_length")))
                      for e in entries if not e.get("loaded_instances")]
    except ProbeError as exc:
        if exc.unreachable:
            raise
    data = server.get("/api/v0/models")
    return [ModelChoice(str(e.get("id")), "loaded" if e.get("state") == "loaded" else
                        "downloaded", _number(e.get("loaded_context_length")),
                        _number(e.get("max_context_length")))
            for e in data.get("data", []) if "embed" not in str(e.get("type"))]


def _ollama_choices(server: Server) -> list[ModelChoice]:
    """Ollama's installed models, the running ones marked with their context length; the
    first OLLAMA_SHOWN others with the window they would be loaded with and their trained
    maximum (one /api/show each), the rest with neither (read when switching)."""
    running = {_ollama_name(str(m.get("name") or m.get("model"))): m
               for m in server.get("/api/ps").get("models", [])}
    out, shown = [], 0
    for name in _ollama_installed(server):
        entry = running.get(_ollama_name(name))
        if entry is not None:
            out.append(ModelChoice(name, "running", _number(entry.get("context_length"))))
        elif shown < OLLAMA_SHOWN:
            shown += 1
            out.append(_ollama_installed_choice(server, name))
        else:
            out.append(ModelChoice(name, "installed"))
    return out


def _ollama_installed_choice(server: Server, name: str) -> ModelChoice:
    try:
        details = _ollama_show(server, name)
    except (ProbeError, ModelNotFound):
        return ModelChoice(name, "installed")  # listed, yet not shown: read when switching
    return ModelChoice(name, "installed", _ollama_window(details, None).tokens,
                       _ollama_limits(details)[1])


def list_models(kind: str, server: Server) -> list[ModelChoice]:
    """The models `server` (a `kind` server) offers, for /model. Raises ProbeError when it
    does not answer, or answers in a shape this kind of server does not use."""
    try:
        if kind == "lmstudio":
            return _lmstudio_choices(server)
        if kind == "ollama":
            return _ollama_choices(server)
        if kind == "llamacpp":
            found = discover_llamacpp(server, None)
            return [ModelChoice(found.model, "served", found.window.tokens)]
        return [ModelChoice(name, "listed") for name in _openai_models(server)]
    except (AttributeError, TypeError, KeyError) as exc:
        raise ProbeError(server.root, 200, f"an unexpected reply ({exc})") from None
