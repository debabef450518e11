"""Agreement in an adaptive study (docs/adaptive.md): computed on the agreement
sample, Krippendorff's alpha and its interval are those of a fixed-overlap study, so the
interval covers the true alpha as often as it says; computed over all pairs of the same
studies, alpha is biased, because how many answers a pair got depends on its answers.

200 simulated studies of 2,000 pairs (3 in 4 clear: chosen with p = 0.9; 1 in 4 contested:
p = 0.55; no ties), adaptive 2-5 with a 20 % agreement sample of K = 3, through the labelling
step's own stopping rule (analysis.design.plan.adaptive_stop, which calls analysis.design.stopping)."""

from __future__ import annotations

import numpy as np

from analysis.agreement.coefficients import alpha
from analysis.design.plan import Adaptive, Effects, adaptive_stop, simulate_study

MIX = ((0.75, 0.9), (0.25, 0.55))
STUDIES = 200
PAIRS = 2000
DESIGN = Adaptive(minimum=2, maximum=5, agreement_sample=0.2, agreement_overlap=3)


def true_alpha() -> float:
    """Nominal alpha of this pair population with unboundedly many annotators a pair: one
    minus the expected within-pair disagreement 2p(1-p) over the disagreement expected from
    the overall rate, 2 pbar (1 - pbar)."""
    shares = np.array([s for s, _ in MIX])
    rates = np.array([r for _, r in MIX])
    within = (shares * rates * (1 - rates)).sum()
    mean = (shares * rates).sum()
    return 1 - within / (mean * (1 - mean))


def _counts(study, kept: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    chosen = (study["preference"].to_numpy(dtype=object) == "chosen").astype(int)
    pair = study["pair_id"].to_numpy(dtype=object).astype(int)
    yes = np.bincount(pair[kept], weights=chosen[kept], minlength=PAIRS)
    n = np.bincount(pair[kept], minlength=PAIRS)
    return np.column_stack([yes, n - yes])[pairs].astype(np.int64)


def simulate(studies: int = STUDIES, seed: int = 23) -> dict:
    rng = np.random.default_rng(seed)
    truth = true_alpha()
    covered, sample_values, all_values, per_pair = 0, [], [], []
    for index in range(studies):
        study = simulate_study(
            rng,
            n_pairs=PAIRS,
            per_pair=DESIGN.most,
            annotators=DESIGN.most,
            effects=Effects(pair_mix=MIX),
            scale=(1, 5),
            dimensions=(),
        )
        sample = rng.random(PAIRS) < DESIGN.agreement_sample
        stop = adaptive_stop(study, DESIGN, ties=False, sample=sample)
        rank = np.tile(np.arange(DESIGN.most), PAIRS)
        kept = rank < np.repeat(stop, DESIGN.most)
        on_sample = alpha(
            _counts(study, kept, np.flatnonzero(sample)),
            level="nominal",
            domain=["chosen", "rejected"],
            bootstrap=1000,
            seed=index,
        )
        assert on_sample.ci95 is not None and on_sample.value is not None
        lo, hi = on_sample.ci95
        covered += lo <= truth <= hi
        sample_values.append(on_sample.value)
        everything = _counts(study, kept, np.arange(PAIRS))
        on_all = alpha(everything, level="nominal", domain=["chosen", "rejected"]).value
        assert on_all is not None
        all_values.append(on_all)
        per_pair.append(kept.sum() / PAIRS)
    return {
        "truth": truth,
        "coverage": covered / studies,
        "mean_sample": float(np.mean(sample_values)),
        "mean_all": float(np.mean(all_values)),
        "sd_all": float(np.std(all_values, ddof=1)),
        "annotations_per_pair": float(np.mean(per_pair)),
    }


def test_sample_interval_covers_the_true_alpha_and_all_pairs_alpha_is_biased():
    result = simulate()
    print(result)
    assert result["coverage"] >= 0.93, result
    # the sample's estimate is centred on the truth (its mean's standard error is ~0.005)
    assert abs(result["mean_sample"] - result["truth"]) < 0.02, result
    # over all pairs: off by far more than its study-to-study spread allows
    bias = result["mean_all"] - result["truth"]
    assert abs(bias) > 0.05, result
    assert abs(bias) > 5 * result["sd_all"] / np.sqrt(STUDIES), result


if __name__ == "__main__":  # the figures of docs/adaptive.md
    print(simulate())
