"""Per-model token prices, USD per million tokens, for the ledger's cost column and the budget.

Source: Anthropic's published model pricing table (platform.claude.com/docs/en/about-claude/pricing),
read 2026-12. Cache writes are the 5-minute TTL rate (1.25x input), which is what
``cache_control: {"type": "ephemeral"}`` buys. A model missing here is priced at the most expensive
entry and its ledger rows say ``price: fallback`` so a budget errs on the side of stopping early.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Price:
    input: float
    output: float
    cache_write: float
    cache_read: float


PRICES: dict[str, Price] = {
    "claude-fable-5": Price(10.0, 50.0, 12.5, 1.0),
    "claude-mythos-5": Price(10.0, 50.0, 12.5, 1.0),
    "claude-fable-5-1": Price(10.0, 50.0, 12.5, 0.25),
    "claude-mythos-5-1": Price(10.0, 50.0, 12.5, 0.25),
    "claude-opus-5": Price(5.0, 25.0, 6.25, 0.5),
    "claude-opus-4-8": Price(5.0, 25.0, 6.25, 0.5),
    "claude-opus-4-7": Price(5.0, 25.0, 6.25, 0.5),
    "claude-opus-4-6": Price(5.0, 25.0, 6.25, 0.5),
    "claude-opus-4-5": Price(5.0, 25.0, 6.25, 0.5),
    "claude-sonnet-5-5": Price(2.0, 10.0, 2.5, 0.2),
    "claude-sonnet-5": Price(2.0, 10.0, 2.5, 0.2),
    "claude-sonnet-4-6": Price(3.0, 15.0, 3.75, 0.3),
    "claude-sonnet-4-5": Price(3.0, 15.0, 3.75, 0.3),
    "claude-haiku-4-5": Price(1.0, 5.0, 1.25, 0.1),
}
FALLBACK = max(PRICES.values(), key=lambda p: p.output)


def price_for(model: str) -> tuple[Price, bool]:
    """The price of ``model`` (a dated snapshot id matches its alias) and whether it was known."""
    if model in PRICES:
        return PRICES[model], True
    for name in sorted(PRICES, key=len, reverse=True):
        if model.startswith(name + "-") and model[len(name) + 1 :].isdigit():
            return PRICES[name], True
    return FALLBACK, False


def cost_usd(model: str, input_tokens: int, output_tokens: int, cache_write: int, cache_read: int) -> float:
    price, _ = price_for(model)
    total = (
        input_tokens * price.input
        + output_tokens * price.output
        + cache_write * price.cache_write
        + cache_read * price.cache_read
    )
    return total / 1_000_000
