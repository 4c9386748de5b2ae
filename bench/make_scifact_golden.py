"""Regenerate the CI golden set, tests/data/scifact_golden/, from SciFact (deterministic).

    .venv/bin/python -m bench.make_scifact_golden [--source ../shared/eval/scifact]

40 judged training claims (a fixed-seed sample), every abstract judged relevant to one
of them, and 200 distractor abstracts: the ones BM25 ranks highest for the chosen claims
without being judged for them, taken round-robin across the claims (each claim's best
unjudged abstract, then each one's second best, ...). The distractors share the claims'
vocabulary, so the golden set measures ranking, not only whether the right abstract was
ingested. Nothing here is random beyond the fixed seed; the output is byte-identical on
every run. CI reads the checked-in copy: it has no ../shared.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import random
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

from bench.common import ROOT

SOURCE = ROOT.parent / "shared" / "eval" / "scifact"
TARGET = ROOT / "tests" / "data" / "scifact_golden"
SEED = 20_200_721  # fixed: changing it changes the golden set and its recorded floors
QUERIES = 40
DISTRACTORS = 200
K1, B = 1.2, 0.75
TOKEN = re.compile(r"\w+")
# Function words only; kept short so the ranking stays plain BM25.
STOPWORDS = frozenset(
    {
        "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "have", "in",
        "is", "it", "its", "of", "on", "or", "than", "that", "the", "their", "this", "to",
        "was", "were", "which", "with",
    }
)  # fmt: skip


def tokens(text: str) -> list[str]:
    return [t for t in TOKEN.findall(text.casefold()) if t not in STOPWORDS]


class BM25:
    """Plain Okapi BM25 over the corpus' titles and abstracts (no stemming)."""

    def __init__(self, documents: dict[str, str]) -> None:
        self.terms = {doc_id: Counter(tokens(text)) for doc_id, text in documents.items()}
        self.lengths = {doc_id: sum(tf.values()) for doc_id, tf in self.terms.items()}
        self.average = sum(self.lengths.values()) / len(self.lengths)
        frequency: Counter[str] = Counter()
        for tf in self.terms.values():
            frequency.update(tf.keys())
        n = len(self.terms)
        self.idf = {t: math.log(1 + (n - df + 0.5) / (df + 0.5)) for t, df in frequency.items()}

    def ranked(self, query: str) -> list[str]:
        """Document ids by descending score, ties by id; documents sharing no term omitted."""
        wanted = set(tokens(query))
        scores: dict[str, float] = {}
        for doc_id, tf in self.terms.items():
            norm = K1 * (1 - B + B * self.lengths[doc_id] / self.average)
            score = math.fsum(
                self.idf[t] * tf[t] * (K1 + 1) / (tf[t] + norm) for t in wanted if t in tf
            )
            if score > 0:
                scores[doc_id] = score
        return sorted(scores, key=lambda doc_id: (-scores[doc_id], doc_id))


def read_jsonl(path: Path) -> list[dict[str, object]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def read_qrels(path: Path) -> dict[str, set[str]]:
    judged: dict[str, set[str]] = defaultdict(set)
    with path.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            if int(row["score"]) > 0:
                judged[row["query-id"]].add(row["corpus-id"])
    return judged


def distractors(
    bm25: BM25, queries: list[dict[str, object]], judged: set[str], count: int
) -> list[str]:
    """The `count` best-ranked unjudged abstracts, round-robin over the queries' rankings."""
    rankings = [[d for d in bm25.ranked(str(q["text"])) if d not in judged] for q in queries]
    chosen: list[str] = []
    for depth in range(max(map(len, rankings))):
        for ranking in rankings:
            if depth < len(ranking) and ranking[depth] not in chosen:
                chosen.append(ranking[depth])
                if len(chosen) == count:
                    return chosen
    return chosen


def write(target: Path, corpus: list[dict[str, object]], queries: list[dict[str, object]],
          qrels: dict[str, set[str]]) -> None:  # fmt: skip
    (target / "qrels").mkdir(parents=True, exist_ok=True)
    with (target / "corpus.jsonl").open("w", encoding="utf-8") as handle:
        for row in corpus:
            handle.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
    with (target / "queries.jsonl").open("w", encoding="utf-8") as handle:
        for row in queries:
            handle.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
    with (target / "qrels" / "test.tsv").open("w", encoding="utf-8", newline="") as handle:
        out = csv.writer(handle, delimiter="\t", lineterminator="\n")
        out.writerow(["query-id", "corpus-id", "score"])
        for row in queries:
            qid = str(row["_id"])
            for doc_id in sorted(qrels[qid], key=int):
                out.writerow([qid, doc_id, 1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--source", type=Path, default=SOURCE)
    parser.add_argument("--target", type=Path, default=TARGET)
    args = parser.parse_args()
    qrels = read_qrels(args.source / "qrels" / "train.tsv")
    all_queries = {str(q["_id"]): q for q in read_jsonl(args.source / "queries.jsonl")}
    judged_ids = sorted((qid for qid in qrels if qid in all_queries), key=int)
    sample = random.Random(SEED).sample(judged_ids, QUERIES)  # noqa: S311 - reproducible, no secret
    picked = sorted(sample, key=int)
    queries = [all_queries[qid] for qid in picked]
    corpus = {str(row["_id"]): row for row in read_jsonl(args.source / "corpus.jsonl")}
    relevant = {doc_id for qid in picked for doc_id in qrels[qid] if doc_id in corpus}
    bm25 = BM25({d: f"{row['title']} {row['text']}" for d, row in corpus.items()})
    extra = distractors(bm25, queries, relevant, DISTRACTORS)
    kept = sorted(relevant | set(extra), key=int)
    write(args.target, [corpus[d] for d in kept], queries, qrels)
    print(
        f"{len(queries)} queries, {len(relevant)} judged abstracts, {len(extra)} distractors "
        f"-> {args.target}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
