"""Which environment variable holds a hosted provider's API key, as litellm reads it.

A small table of the providers people use most; litellm accepts a few other names for some
of them (the later names in each row). A hosted model whose provider is in the table and
has none of its variables set, and no `--api-key`, fails at start-up with the variable to
set, before any request (factory.py); a key the provider refuses is reported with the same
variable (hosted.py). Providers not in the table are left to litellm: their key may live in
a credential chain (Azure, Bedrock, Vertex AI) or under a name this table does not know.
"""

from __future__ import annotations

from collections.abc import Mapping

KEY_VARIABLES: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "mistral": ("MISTRAL_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY", "OR_API_KEY"),
    "groq": ("GROQ_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "together_ai": ("TOGETHERAI_API_KEY", "TOGETHER_API_KEY", "TOGETHER_AI_API_KEY"),
}


def provider_of(model: str) -> str:
    """The provider prefix of a litellm model string (`openrouter/qwen/...` -> openrouter)."""
    return model.split("/", 1)[0]


def key_variable(model: str) -> str | None:
    """The variable to set for `model`'s provider, or None when the table does not know it."""
    names = KEY_VARIABLES.get(provider_of(model))
    return names[0] if names else None


def missing_key(model: str, api_key: str | None, environ: Mapping[str, str]) -> str | None:
    """The variable to set when `model`'s provider is in the table and neither `api_key`
    nor any of its variables holds a key; None when a key is there (or may be, elsewhere)."""
    names = KEY_VARIABLES.get(provider_of(model))
    if api_key or not names or any(environ.get(name, "").strip() for name in names):
        return None
    return names[0]


def how_to_set(variable: str | None) -> str:
    """The instruction a person gets: the variable to set, or --api-key alone."""
    if variable is None:
        return ("Set the provider's API-key variable (litellm names it <PROVIDER>_API_KEY) "
                "or pass --api-key.")
    return f"Set {variable} (export {variable}=...) or pass --api-key."
