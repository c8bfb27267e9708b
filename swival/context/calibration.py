"""Calibration: correcting our token counts with the prompt sizes the server reports,
and noticing from those sizes that a server silently cut a prompt.

What a server's prompt count covers is not the same everywhere:

- OpenAI-compatible servers (llama.cpp, LM Studio, vLLM, Ollama's `/v1`) report the
  whole prompt in `prompt_tokens`; `cached_tokens`, when given, is the part of it read
  from the KV cache.
- Ollama's native `prompt_eval_count` includes the cached tokens when the reply also
  carries `prompt_eval_cached_count` (newer releases); older releases and runners
  count only the tokens they evaluated, so a good cache hit makes the figure small.

A *complete* count (the whole prompt) corrects our count in both directions, as a
moving average: factor <- 0.8 * factor + 0.2 * (reported / ours), clamped to
[0.5, 3.0]; and while the prompt only grows after it, the next prompt is at least that
count plus what was appended, so the factor is raised to that when it is short of it
(`follow`). A count that may leave cached tokens out only proves the prompt was at
least that big: it may raise the factor to its ratio, never lower it. Otherwise the
better the cache works, the more we would under-count, until prompts overflow.

Silent truncation (Ollama cuts the oldest messages to fit `num_ctx` and says
nothing) is judged here and nowhere else (the providers report only what a server
says outright), from a complete count, and only for a prompt that fills at least
half of the window we budget on (small prompts differ from our count for harmless
reasons, such as chat templates that leave out the tool schemas). The figure is
compared with what the
server *should* have counted: our raw count times the ratio the previous complete
counts showed (`baseline`; servers tokenize differently, and the moving-average
factor lags behind). Either sign is enough, on the first reply that shows it:

- the count sits just under a power of two no larger than the window we budget on
  (97-100 % of it) while the expected count is over it (by 2 %; by 8 % before any
  complete count, since a tokenizer commonly counts a few percent under ours and the
  first reply has not shown that yet): the server runs that window. A count at the
  window with an expected count under it is an ordinary full prompt, not a cut;
- the count is far below the expected one: under 85 % of it (under 60 % before any
  complete count has given a baseline).

A rewrite of the history forgets that ratio (`rewritten`): it was the old prompt's.
After 35 tiny turns the server counted 1.4 times ours, after the rewrite about the same
as ours, and the first figure after it looked like a second cut (a 2,048 window learned
on a server running 4,096, and a run stopped with exit 5).

Only a complete count shows a cut: one that may leave out cached tokens is small
after every cache hit, and falls just under some power of two by chance.

The learned window is that power of two (local servers run power-of-two windows by
default), else the count itself, which is what the server kept. A second cut under
a learned power of two thus falls back to the count. When the power of two is the
window we budget on, the window stays and the engine raises its count instead. A
window the server confirmed (it reported running it) is never unlearned: a figure
that would set the window below it is taken as the tokenizer's, not as a cut.
"""

from __future__ import annotations

from dataclasses import dataclass

from swival.errors import ContextOverflowError

ALPHA = 0.2
FACTOR_MIN = 0.5
FACTOR_MAX = 3.0
PLAUSIBLE = (0.25, 4.0)  # ratios outside this are a different prompt, not a tokenizer
PINNED_SHARE = 0.97
PINNED_MARGIN = 1.02  # our count must exceed the power of two by this much
PINNED_MARGIN_FIRST = 1.08  # the same before any complete count showed the ratio
FILLED_SHARE = 0.5  # truncation is judged only for prompts this full
FAR_BELOW = 0.85
FAR_BELOW_FIRST = 0.6  # before any complete count has shown the tokenizer's ratio
BASELINE_ALPHA = 0.5  # the expected ratio follows recent counts quickly
SMALLEST_WINDOW = 512


@dataclass(frozen=True)
class Reading:
    """One server figure for a prompt we counted as `raw` tokens (before calibration).
    `complete`: the figure includes tokens read from the server's cache."""

    reported: int
    raw: int
    complete: bool


class Calibration:
    """The factor our counts are multiplied by, learned from the server's counts."""

    def __init__(self) -> None:
        self.factor = 1.0
        self.baseline: float | None = None  # reported / raw of recent complete counts

    def forget(self) -> None:
        """Another model (its own tokenizer and template): start from our count again."""
        self.factor, self.baseline = 1.0, None

    def apply(self, raw_tokens: int) -> int:
        return int(raw_tokens * self.factor + 0.5)

    def observe(self, reading: Reading) -> None:
        """Fold in one figure: both ways when complete, as a floor only otherwise.
        Figures outside the plausible ratio (another prompt, a cut one) are ignored."""
        if reading.reported <= 0 or reading.raw <= 0:
            return
        ratio = reading.reported / reading.raw
        if not PLAUSIBLE[0] <= ratio <= PLAUSIBLE[1]:
            return
        if reading.complete:
            blended = (1 - ALPHA) * self.factor + ALPHA * ratio
            self.factor = _clamp(blended)
            self.baseline = ratio if self.baseline is None else (
                (1 - BASELINE_ALPHA) * self.baseline + BASELINE_ALPHA * ratio)
        elif ratio > self.factor:
            self.factor = _clamp(ratio)

    def exact(self, counted: int, raw_tokens: int) -> None:
        """The server counted this very prompt with its own template and tokenizer
        (llama.cpp): that ratio is the factor, now, and the baseline for judging cuts."""
        if counted <= 0 or raw_tokens <= 0:
            return
        ratio = counted / raw_tokens
        if PLAUSIBLE[0] <= ratio <= PLAUSIBLE[1]:
            self.factor = _clamp(ratio)
            self.baseline = ratio

    def rewritten(self) -> None:
        """The history was rewritten: the prompt's mix changed (a pinned block of prose
        for many small messages, one-line records for whole files), so the ratio recent
        figures showed no longer says what the server will count. Until a figure for the
        new prompt comes, a cut is judged as before any figure (wider margins); the
        factor stays, and the next figure corrects it."""
        self.baseline = None

    def follow(self, reported: int, raw_then: int, raw_now: int) -> None:
        """The server counted `reported` for a prompt we counted as `raw_then`, and the
        prompt has only grown since, to `raw_now`: it is at least that figure plus what
        was appended. When that is more than our estimate, raise the factor to it (never
        lower it). The ratio drifts as the prompt's mix changes (many small messages,
        each with its template's overhead), faster than the average follows."""
        if reported <= 0 or raw_then <= 0 or raw_now < raw_then:
            return
        least = reported + (raw_now - raw_then) * self.factor
        if least > raw_now * self.factor:
            self.factor = _clamp(least / raw_now)

    def jump(self, reported: int, raw_tokens: int) -> None:
        """After an overflow the server's figure is the truth: adopt it at once (never
        lowering the factor), rather than averaging it in slowly."""
        if reported <= 0 or raw_tokens <= 0:
            return
        self.factor = min(FACTOR_MAX, max(self.factor, reported / raw_tokens))

    def judge(self, reading: Reading, window: int, estimate: int, confirmed: int = 0
              ) -> ContextOverflowError | None:
        """Fold in `reading`, or, when it shows the server cut the prompt, leave the
        calibration alone and return a `truncated` overflow with the real window
        (never one under `confirmed`, the window the server said it runs)."""
        learned = self.truncated_window(reading, window)
        if learned is not None and learned < confirmed:
            learned = None
        if learned is None:
            self.observe(reading)
            return None
        return ContextOverflowError(
            f"The server counted {reading.reported} prompt tokens for a prompt of about "
            f"{estimate}: it cut the prompt to fit a window of about {learned} tokens.",
            kind="truncated", prompt_tokens=reading.reported, window=learned)

    def truncated_window(self, reading: Reading, window: int) -> int | None:
        """The window the server really runs when `reading` shows it cut the prompt
        (see the module docstring), else None."""
        if (not reading.complete or reading.reported <= 0
                or self.apply(reading.raw) < FILLED_SHARE * window):
            return None
        expected = reading.raw * (self.baseline or 1.0)
        power = _power_of_two_above(reading.reported)
        margin = PINNED_MARGIN if self.baseline is not None else PINNED_MARGIN_FIRST
        pinned = (power <= window and reading.reported >= PINNED_SHARE * power
                  and expected > margin * power)
        share = FAR_BELOW if self.baseline is not None else FAR_BELOW_FIRST
        far_below = reading.reported < share * expected
        if not (pinned or far_below):
            return None
        if power <= window and expected > power:
            return power
        return max(SMALLEST_WINDOW, min(window - 1, reading.reported))


def _power_of_two_above(tokens: int) -> int:
    power = SMALLEST_WINDOW
    while power < tokens:
        power *= 2
    return power


def _clamp(factor: float) -> float:
    return min(FACTOR_MAX, max(FACTOR_MIN, factor))
