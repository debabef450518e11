"""Pairs shaped like the real Personalized RewardBench release, as
`../shared/tools/make_realistic_pairs.py` writes them: 4 rubric aspects, responses of about 90
words, many past posts. Filler text, for layout and speed (browser tests, benchmarks)."""

from __future__ import annotations

import random

SUBSETS = ["Art_and_Entertainment", "Lifestyle_and_Personal_Development", "Society_and_Culture"]
WORDS = [
    *("river", "lantern", "orchard", "ledger", "violin", "harbor", "pottery", "canvas", "tram"),
    *("bakery", "chess", "lecture", "cabin", "tax", "novel", "choir", "hiking", "rent"),
    *("sketchbook", "festival"),
]


def words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def listed(rng: random.Random, n: int, *, items: int = 10) -> str:
    """About n words shaped as models often answer: a lead-in, a bulleted list of items with a
    bold name each, and a closing line (a bullet per line takes more height than prose)."""
    each = max(3, (n - 12) // items)
    bullets = "\n".join(
        f"- **{' '.join(rng.choice(WORDS) for _ in range(2)).title()}:** {words(rng, each - 2)}"
        for _ in range(items)
    )
    return f"Here are a few ideas:\n\n{bullets}\n\n{words(rng, 8)}"


def realistic_record(
    rng: random.Random,
    i: int,
    *,
    posts: int = 300,
    aspects: int = 4,
    response_words: int = 90,
    shape: str = "prose",
) -> dict:
    """One pair; `shape` "list" writes the responses as `listed` instead of one paragraph."""
    response = listed if shape == "list" else words
    subset = SUBSETS[i % 3]
    pid = f"rl-{i:05d}"
    return {
        "id": pid,
        "question": f"How would you approach my {rng.choice(WORDS)} question number {i}?",
        "profile": [
            {"category": subset, "id": f"{pid}-post-{k}", "text": words(rng, 60)}
            for k in range(posts)
        ],
        "rubric_aspects": [
            {
                "aspect": f"Attends to the {rng.choice(WORDS)} detail ({a + 1})",
                "evidence": words(rng, 14),
                "reason": words(rng, 12),
            }
            for a in range(aspects)
        ],
        "narrative": words(rng, 70),
        "category": subset,
        "chosen": response(rng, response_words),
        "rejected": response(rng, response_words),
    }
