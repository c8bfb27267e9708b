"""The token budget: how much of the window the prompt may use, and calibration.

    window          what the server runs (or 8192 when unknown)
    output_reserve  min(max_output_tokens, max(OUTPUT_FLOOR, 15 % of the window))
    input_budget    window - output_reserve      (8192 -> 6964)
    trigger         compaction_trigger * input_budget   (85 %)
    target          compaction_target * input_budget    (55 %)

The reply's real `max_tokens` is recomputed before every call as whatever the window
has left after the prompt (minus a small safety margin), capped by max_output_tokens
and never more than that room: a short prompt may get a long reply, and the reserve
guarantees room for a useful one at the trigger point. A prompt that leaves less than
OUTPUT_FLOOR (or max_output_tokens, if smaller) is not sent.
"""

from __future__ import annotations

from dataclasses import dataclass

OUTPUT_FLOOR = 256  # the smallest room for a reply we send a prompt with
OUTPUT_SHARE = 0.15  # share of the window held back for the reply when budgeting
SAFETY_SHARE = 0.02  # headroom for counting error when sizing the reply


@dataclass(frozen=True)
class Budget:
    """Fixed numbers derived from the window and the settings."""

    window: int
    max_output_tokens: int
    trigger_share: float
    target_share: float

    @property
    def output_reserve(self) -> int:
        share = max(OUTPUT_FLOOR, int(self.window * OUTPUT_SHARE))
        return min(self.max_output_tokens, share)

    @property
    def input_budget(self) -> int:
        return max(1, self.window - self.output_reserve)

    @property
    def trigger(self) -> int:
        return int(self.input_budget * self.trigger_share)

    @property
    def target(self) -> int:
        return int(self.input_budget * self.target_share)

    def reply_tokens(self, prompt_tokens: int) -> int:
        """The max_tokens to send with a prompt of `prompt_tokens` (calibrated): what the
        window has left after the prompt and a safety margin, capped by
        max_output_tokens; never more than that room (0 when there is none)."""
        room = self.window - prompt_tokens - int(self.window * SAFETY_SHARE)
        return max(0, min(self.max_output_tokens, room))


def exhausted_text(budget: Budget, estimate: int, schema_tokens: int,
                   transcript: str | None, interactive: bool = True) -> str:
    """What the user reads when even the deepest compaction leaves no room for a reply
    (the prompt alone may be under the window: what is missing is the reply's room); a
    one-shot run (not `interactive`) has no /clear to suggest."""
    where = f" The full conversation is saved in {transcript}." if transcript else ""
    instead = ("start over with /clear and a smaller request" if interactive else
               "run again with a smaller request (fewer or smaller @-mentioned files)")
    need = min(OUTPUT_FLOOR, budget.max_output_tokens)
    room = budget.reply_tokens(estimate)
    size = f"about {estimate} tokens ({schema_tokens} of them tool schemas)"
    why = (f"the prompt takes {size}, which leaves {room} for the reply, and a reply needs "
           f"at least {need}" if room < need else
           f"the server still rejects the prompt, {size} by our count")
    return (
        f"The conversation no longer fits the {budget.window}-token context window, even "
        f"after the deepest compaction: {why}.{where} To continue, load the model with a "
        f"larger context window (and pass --max-context-tokens), or {instead}.")
