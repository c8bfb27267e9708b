"""The window of a model switched to while it was unknown (LM Studio loads a model on
its first request, and only then reports its window): read again once a request has
reached the model."""

from __future__ import annotations

from typing import TYPE_CHECKING

from swival.errors import ProviderError
from swival.events import Notice
from swival.providers.base import Provider

if TYPE_CHECKING:
    from swival.providers.factory import Connector


class WindowCheck:
    """Where a switch of model stands: "" (nothing to check), "switched" (to a model
    whose window is unknown), then "sent" once a request reached it; `reread` then
    connects again for the window, once."""

    def __init__(self, connector: Connector | None) -> None:
        self.connector = connector  # None: the server cannot be reached again
        self._stage = ""

    def switched(self, provider: Provider) -> None:
        """/model now talks to `provider`."""
        known = provider.info.window.known or self.connector is None
        self._stage = "" if known else "switched"

    def sent(self) -> None:
        """A request reached the model in use."""
        self._stage = "sent" if self._stage else ""

    def reread(self, provider: Provider) -> tuple[Provider | None, Notice | None]:
        """Once a request reached a model switched to with its window unknown: the model
        connected again with its window detected (to budget on) and what to say once the
        budget follows it; or no provider and a warning naming the window assumed and how
        to set it. (None, None) when there is nothing to check."""
        if self._stage != "sent" or self.connector is None:
            return None, None
        self._stage, model = "", provider.info.model
        try:
            fresh: Provider | None = self.connector.connect(model)
        except ProviderError:
            fresh = None
        if fresh is None or not fresh.info.window.known or fresh.info.model != model:
            return None, Notice(
                f"{model}'s window is still unknown after its first request: budgeting on "
                f"{provider.info.window.budget_tokens} tokens. If it runs with another, set "
                "max_context_tokens (--max-context-tokens) to it.",
                "warning",
            )
        return fresh, Notice(
            f"{model} is loaded: window {fresh.info.window.describe()}; the budget follows it now."
        )
