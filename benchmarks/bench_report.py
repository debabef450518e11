"""Benchmark: `annotate report` against a minimal script on the same files (whole processes).

    python benchmarks/bench_report.py                  # 100,000 annotations, time ratio
    python benchmarks/bench_report.py --rows 1000000   # memory run: peak RSS of the report
    python benchmarks/bench_report.py --models 2       # with two --model files (judge, scores)
    python benchmarks/bench_report.py --per-pair 3     # three annotators a pair instead of five

Both commands run in the same session (the machine may be shared: CPU time is printed
next to wall time, since it is less sensitive to other load) on the same generated files: an annotations CSV (five
annotators per pair by default, ``--per-pair``, from a pool of 40) and a pairs JSON Lines file. The baseline only reads
both files with pandas and computes the four point alphas (preference nominal, three quality
dimensions ordinal with units (pair, response)) with the `krippendorff` package. Each process
is started by a small wrapper that reports its wall time and peak RSS (RUSAGE_CHILDREN of the
wrapper, which has exactly one child). The project's modules are compiled to bytecode first, as
Python does on a user's first run and pip on a regular install (where PYTHONDONTWRITEBYTECODE
is set, every run would otherwise compile the report's 60 modules again, about 0.2 s that the
baseline, whose packages pip compiled, does not pay).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.vocabulary import DIMENSIONS, PREFERENCES, SIDES, SLOTS

POOL = 40
ROOT = Path(__file__).resolve().parents[1]

BASELINE = textwrap.dedent(
    """
    import sys
    import krippendorff
    import numpy as np
    import pandas as pd

    annotations = pd.read_csv(sys.argv[1])
    pairs = pd.read_json(sys.argv[2], lines=True)
    codes = annotations["preference"].map({"chosen": 0, "rejected": 1, "tie": 2})
    wide = annotations.assign(code=codes).pivot(index="annotator", columns="pair_id", values="code")
    alphas = [krippendorff.alpha(reliability_data=wide.to_numpy(dtype=float), level_of_measurement="nominal")]
    for dimension in ("correctness", "relevance", "helpfulness"):
        sides = [
            annotations.pivot(index="annotator", columns="pair_id", values=f"{dimension}_{side}")
            for side in ("chosen", "rejected")
        ]
        data = np.concatenate([s.to_numpy(dtype=float) for s in sides], axis=1)
        alphas.append(
            krippendorff.alpha(
                reliability_data=data, level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5]
            )
        )
    print(len(pairs), [round(a, 4) for a in alphas])
    """
)

WRAPPER = textwrap.dedent(
    """
    import json, resource, subprocess, sys, time
    start = time.perf_counter()
    done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({"seconds": seconds, "cpu": usage.ru_utime + usage.ru_stime,
                      "peak_mb": usage.ru_maxrss / 1024, "rc": done.returncode,
                      "stdout": done.stdout[-2000:], "stderr": done.stderr[-2000:]}))
    """
)


def generate(directory: Path, *, rows: int, per_pair: int = 5, seed: int = 0) -> tuple[Path, Path]:
    """A realistic label mix: most pairs lean chosen, some rejected or tie; ratings around 4."""
    rng = np.random.default_rng(seed)
    n_pairs = rows // per_pair
    n = n_pairs * per_pair
    pair = np.repeat(np.arange(n_pairs), per_pair)
    start = rng.integers(0, POOL, n_pairs)
    annotator = (start[pair] + np.tile(np.arange(per_pair), n_pairs)) % POOL
    lean = rng.choice(3, size=n_pairs, p=[0.75, 0.15, 0.10])[pair]
    other = (lean + rng.integers(1, 3, n)) % 3
    label = np.where(rng.random(n) < 0.75, lean, other)
    table = pd.DataFrame(
        {
            "pair_id": np.char.add("pair-", pair.astype(str)),
            "annotator": np.char.add("annotator-", annotator.astype(str)),
            "preference": np.array(PREFERENCES)[label],
            "chosen_position": rng.choice(SLOTS, n),
        }
    )
    for side in SIDES:
        for dimension in DIMENSIONS:
            base = rng.choice([2, 3, 4, 5], size=n_pairs, p=[0.1, 0.2, 0.4, 0.3])[pair]
            value = np.clip(base + rng.choice([-1, 0, 0, 0, 1], n), 1, 5).astype(float)
            value[rng.random(n) < 0.05] = np.nan
            table[f"{dimension}_{side}"] = pd.array(value, dtype="Float64").astype("Int64")
    reasons = np.array(["personal_fit", "general_quality", "both", "unsure", ""], dtype=object)
    table["main_reason"] = reasons[rng.choice(5, n, p=[0.5, 0.15, 0.2, 0.05, 0.1])]
    table["comment"] = np.where(rng.random(n) < 0.03, "hard to decide, both fine", "")
    table["seconds"] = rng.gamma(4, 12, n).round(1)
    stamps = pd.Timestamp("2026-01-01", tz="UTC") + pd.to_timedelta(
        rng.integers(0, 86400 * 60, n), "s"
    )
    table["submitted_at"] = stamps.strftime("%Y-%m-%dT%H:%M:%S+00:00")
    annotations = directory / "annotations.csv"
    table.to_csv(annotations, index=False)

    pairs = directory / "pairs.jsonl"
    with pairs.open("w", encoding="utf-8") as handle:
        for i in range(n_pairs):
            record = {
                "id": f"pair-{i}",
                "question": f"How should I plan meals for week {i}?",
                "profile": [
                    {"id": "1", "category": "food", "text": "I cook for two, mostly vegetarian."}
                ],
                "rubric_aspects": [
                    {"aspect": "vegetarian", "evidence": "post 1", "reason": "diet"}
                ],
                "narrative": "I want something quick.",
                "category": "food",
                "chosen": f"A vegetarian plan for week {i} with quick recipes.",
                "rejected": f"A meat-heavy plan for week {i} with long recipes.",
            }
            handle.write(json.dumps(record) + "\n")
    return annotations, pairs


def generate_models(directory: Path, *, n_pairs: int, count: int, seed: int = 1) -> list[str]:
    """``count`` model files as --model NAME=FILE arguments, alternating the layouts a report
    meets most: a pairwise judge (JSON Lines: id, prediction, pos_in_a, parse_failed) and a
    reward model's scores (CSV: pair_id, score_chosen, score_rejected)."""
    rng = np.random.default_rng(seed)
    ids = np.char.add("pair-", np.arange(n_pairs).astype(str))
    specs = []
    for m in range(count):
        if m % 2 == 0:
            pos_in_a = rng.random(n_pairs) < 0.5
            right = rng.random(n_pairs) < np.where(pos_in_a, 0.8, 0.65)  # prefers slot A
            prediction = np.where(right == pos_in_a, "A", "B")
            frame = pd.DataFrame(
                {"id": ids, "prediction": prediction, "pos_in_a": pos_in_a,
                 "parse_failed": rng.random(n_pairs) < 0.01}
            )  # fmt: skip
            path = directory / f"judge-{m}.jsonl"
            frame.to_json(path, orient="records", lines=True)
        else:
            chosen = rng.normal(1.0, 1.0, n_pairs).round(3)
            rejected = rng.normal(0.3, 1.0, n_pairs).round(3)
            path = directory / f"rm-{m}.csv"
            pd.DataFrame(
                {"pair_id": ids, "score_chosen": chosen, "score_rejected": rejected}
            ).to_csv(path, index=False)
        specs += ["--model", f"model-{m}={path}"]
    return specs


def measure(command: list[str]) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, *command], capture_output=True, text=True, check=True
    )
    result = json.loads(done.stdout)
    if result["rc"] != 0:
        raise SystemExit(f"{command[2:4]} failed:\n{result['stderr']}")
    return result


def median(values: list[float]) -> float:
    values = sorted(values)
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000, help="annotations (default 100,000)")
    parser.add_argument("--bootstrap", type=int, default=1000, help="resamples (default 1000)")
    parser.add_argument(
        "--repeat", type=int, default=1, help="alternate runs of both, report medians (default 1)"
    )
    parser.add_argument("--no-baseline", action="store_true", help="time only the report")
    parser.add_argument(
        "--models",
        type=int,
        default=0,
        help="also compare this many generated model files (--model; default 0)",
    )
    parser.add_argument(
        "--per-pair",
        type=int,
        default=5,
        help="annotators per pair, drawn from the pool of 40 (default 5)",
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        annotations, pairs = generate(directory, rows=args.rows, per_pair=args.per_pair)
        n_pairs = args.rows // args.per_pair
        print(
            f"{n_pairs * args.per_pair:,} annotations, {n_pairs:,} pairs, "
            f"{args.per_pair} annotators a pair from a pool of {POOL}"
        )
        script = directory / "baseline.py"
        script.write_text(BASELINE)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "compileall",
                "-q",
                str(ROOT / "analysis"),
                str(ROOT / "annotate"),
            ],
            check=True,
        )
        report_command = [
            sys.executable, "-m", "annotate.cli", "report", "--annotations", str(annotations),
            "--pairs", str(pairs), "--out", str(directory / "out"),
            "--bootstrap", str(args.bootstrap),
        ]  # fmt: skip
        if args.models:
            report_command += generate_models(directory, n_pairs=n_pairs, count=args.models)
            print(f"with {args.models} models (--model)")
        baseline_command = [sys.executable, str(script), str(annotations), str(pairs)]
        reports, baselines = [], []
        for i in range(args.repeat):
            # baseline and report in turns, each starting every other round: the machine's
            # speed drifts, and a slow spell then falls on both
            if not args.no_baseline and i % 2:
                baselines.append(measure(baseline_command))
            reports.append(measure(report_command))
            if not args.no_baseline and not i % 2:
                baselines.append(measure(baseline_command))
        show("annotate report", reports, f"{args.bootstrap:,} resamples")
        if args.no_baseline:
            return
        show("baseline", baselines, "read + 4 point alphas with krippendorff")
        wall = median([r["seconds"] for r in reports]) / median([b["seconds"] for b in baselines])
        cpu = median([r["cpu"] for r in reports]) / median([b["cpu"] for b in baselines])
        print(f"ratio report / baseline: {wall:.2f}x wall, {cpu:.2f}x CPU (goal <= 5x)")
        if args.repeat > 1:
            # each report against the baseline run next to it, then the median: a drift in
            # the machine's speed over the rounds cancels within each round
            paired = sorted(r["cpu"] / b["cpu"] for r, b in zip(reports, baselines, strict=True))
            print(
                f"ratio per round (CPU): median {median(paired):.2f}x, "
                f"from {paired[0]:.2f}x to {paired[-1]:.2f}x"
            )


def show(name: str, runs: list[dict], what: str) -> None:
    label = "median of " + str(len(runs)) + " runs, " if len(runs) > 1 else ""
    print(
        f"{name} ({label}{what}): {median([r['seconds'] for r in runs]):.2f} s wall, "
        f"{median([r['cpu'] for r in runs]):.2f} s CPU, "
        f"peak RSS {max(r['peak_mb'] for r in runs):.0f} MB"
    )


if __name__ == "__main__":
    main()
