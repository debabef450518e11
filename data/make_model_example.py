"""Write the README's worked example of models against humans (deterministic, no arguments):

- sample_annotations.csv: simulated answers of three annotators to the 15 sample pairs
  (most pick chosen; two pairs are flipped, one has no consensus, one has a quality gap);
- sample_judge.jsonl: a pairwise LLM judge in the benchmark's output layout (id, prediction,
  pos_in_a, parse_failed) that leans towards slot A and fails to answer once;
- sample_reward_model.csv: a reward model's scores (pair_id, score_chosen, score_rejected),
  one tie.

    python data/make_model_example.py
    annotate report --annotations data/sample_annotations.csv --pairs data/sample_pairs.jsonl \\
        --model judge=data/sample_judge.jsonl --model rm=data/sample_reward_model.csv --out report/
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
ANNOTATORS = ("ann-1", "ann-2", "ann-3")
DIMENSIONS = ("correctness", "relevance", "helpfulness")


def pair_ids() -> list[str]:
    with (HERE / "sample_pairs.jsonl").open(encoding="utf-8") as handle:
        return [json.loads(line)["id"] for line in handle if line.strip()]


# Per pair, the three annotators' preferences (c chosen, r rejected, t tie); everything else
# is three times "c". Flips: life-03 and soc-02; no consensus: art-04; quality gap: soc-05.
HUMANS = {
    "demo-art-02": "crc",
    "demo-art-04": "crt",
    "demo-life-03": "rrc",
    "demo-life-05": "cct",
    "demo-soc-02": "rrr",
    "demo-soc-04": "ccr",
}
GAP = {"demo-soc-05"}  # chosen rated 5, rejected 2 on helpfulness


def annotations(ids: list[str]) -> list[dict]:
    rows = []
    word = {"c": "chosen", "r": "rejected", "t": "tie"}
    for i, pair in enumerate(ids):
        for j, annotator in enumerate(ANNOTATORS):
            row = {
                "pair_id": pair,
                "annotator": annotator,
                "preference": word[HUMANS.get(pair, "ccc")[j]],
                "chosen_position": "A" if (i + j) % 2 == 0 else "B",
            }
            for k, dimension in enumerate(DIMENSIONS):
                # Pair-level ratings of 4 or 5; the third annotator rates chosen one point
                # lower on every third pair.
                harsh = 1 if j == 2 and i % 3 == 0 else 0
                row[f"{dimension}_chosen"] = 4 + (i + k) % 2 - harsh
                row[f"{dimension}_rejected"] = 4 + (i + k + 1) % 2
            if pair in GAP:
                row["helpfulness_chosen"], row["helpfulness_rejected"] = 5, 3
            row["main_reason"] = "general_quality" if pair in GAP else "personal_fit"
            row["seconds"] = 40 + 7 * ((i * 3 + j) % 5)
            rows.append(row)
    return rows


def judge(ids: list[str]) -> list[dict]:
    """Chosen shown as A on even positions. The judge answers A whenever chosen is A (right),
    and when chosen is B it is right only on a third of the pairs; one answer is unparsable."""
    rows = []
    for i, pair in enumerate(ids):
        pos_in_a = i % 2 == 0
        right = pos_in_a or i % 3 == 0
        prediction = ("A" if pos_in_a else "B") if right else ("B" if pos_in_a else "A")
        failed = pair == "demo-life-02"
        rows.append(
            {
                "id": pair,
                "prediction": None if failed else prediction,
                "pos_in_a": pos_in_a,
                "parse_failed": failed,
            }
        )
    return rows


def reward_model(ids: list[str]) -> list[dict]:
    """Right on most pairs, sides with the humans on both flips, one tie (art-03)."""
    rows = []
    for i, pair in enumerate(ids):
        chosen = round(1.5 + 0.1 * i, 2)
        rejected = round(chosen - 0.8, 2)
        if pair in ("demo-life-03", "demo-soc-02", "demo-art-05"):
            rejected = round(chosen + 0.6, 2)
        if pair == "demo-art-03":
            rejected = chosen
        rows.append({"pair_id": pair, "score_chosen": chosen, "score_rejected": rejected})
    return rows


def write_csv(path: Path, rows: list[dict]) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def main() -> None:
    ids = pair_ids()
    write_csv(HERE / "sample_annotations.csv", annotations(ids))
    with (HERE / "sample_judge.jsonl").open("w", encoding="utf-8") as handle:
        for row in judge(ids):
            handle.write(json.dumps(row) + "\n")
    write_csv(HERE / "sample_reward_model.csv", reward_model(ids))


if __name__ == "__main__":
    main()
