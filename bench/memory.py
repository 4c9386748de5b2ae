"""How much of the evidence for questions about long conversations a context pack carries.

    env -u DATABASE_URL -u DATABASE_OWNER_URL -u REDIS_URL \\
        .venv/bin/python -m bench.memory [--conversations N] [--questions N] [--reuse]
                                         [--data path/to/locomo.json] [--images]

LoCoMo conversations (`/work/shared/eval/locomo_dev/locomo_dev5.json`: five long chats
between two people over many sessions, with questions whose evidence is a set of turns)
are ingested through the real pipeline, one workspace per conversation in the bench
database (`vera_bench_memory`): each conversation is one JSON transcript (its sessions
with their dates as LoCoMo writes them, each turn's speaker and text, and the image it
shared, with `--images`, as an attachment with LoCoMo's caption, as LoCoMo shows its
conversations to the models it tests) in a tier-2
conversation source (so its turns publish), indexed by draining the outbox with MiniLM
vectors and, since the workspace holds a conversation source, e5's beside them (its
companion, VERA_EMBEDDER__CONVERSATION_COMPANION; empty it to measure MiniLM alone).
`--reuse` keeps the workspaces an earlier run built (by name) and ingests only the
missing ones.

Each question (those with evidence; categories 1 multi-hop, 2 temporal, 3 open-domain,
4 single-hop, 5 adversarial) is then asked as the workspace's system principal:

- VERA pack @B: `context_pack` exactly as the REST context endpoint builds it (the
  bound search, not recorded, the pure assembler), not kept, within B = 500, 1000, 2000
  tokens;
- VERA search R@5 / R@10 / R@40: the live search (`live_search`, not recorded) and the
  index texts of the top 5 / 10 / 40 hits' claims (40: the hits a pack of 1,000 tokens
  reads);
- baselines over single turns ("Speaker: text", with `--images` "Speaker: text [image:
  caption]"): Okapi BM25 (k1 0.9, b 0.4), dense
  MiniLM cosine (the project's own passage/query embedders) and RRF (k 60) of both, each
  filling the budget greedily in rank order (a turn that does not fit is skipped, the
  next tried), tokens counted with the tokenizer packs are counted with.

Evidence recall of a question = the share of its evidence turns that are inside what
the system returned. For the baselines a turn is inside when it was selected; for VERA
when its text (its words and what it shared) is inside the pack text (or the hits'
texts): both normalised (casefold, punctuation stripped, whitespace collapsed), a turn
is inside when it is a substring, or
when at least 80% of its word 5-grams (every one of its words, for a turn of fewer than
five words) occur in that text. Averaged per question, then per category and overall;
also the mean tokens each system used per budget (a pack's own `tokens`, header
included). Then pack@1000 per conversation and category, and over all of them with a 95%
interval (1.96 standard errors over questions): a goal on conversations nobody has seen
is met with confidence only when the interval clears it. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.common import ROOT, analyze, bench_workspace, drain_outbox, markdown_source, setup_django

DATA = ROOT.parent / "shared" / "eval" / "locomo_dev" / "locomo_dev5.json"
BUDGETS = (500, 1000, 2000)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
BASELINES = ("BM25", "dense", "RRF")
SEARCH_CUTOFFS = (5, 10, 40)  # 40: the hits a pack of 1,000 tokens reads
SPREAD_COLUMN = "pack@1000"  # the budget the goals are set at
BM25_K1, BM25_B = 0.9, 0.4
RRF_K = 60
GRAM = 5
GRAM_SHARE = 0.8
ORG = "Memory Org"

_WORD = re.compile(r"\w+")
_PUNCTUATION = re.compile(r"[^\w\s]")
_EVIDENCE_ID = re.compile(r"D(\d+):(\d+)")


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    shared: str = ""  # the caption of an image the turn shared, as LoCoMo gives it

    @property
    def said(self) -> str:
        """The turn as every system holds it: its words, then what it shared, written as
        the conversation connector writes an attachment."""
        image = f"[image: {self.shared}]" if self.shared else ""
        return " ".join(part for part in (self.text, image) if part)

    @property
    def line(self) -> str:
        return f"{self.speaker}: {self.said}"


@dataclass(frozen=True)
class Question:
    text: str
    category: int
    evidence: tuple[str, ...]  # dia ids, each a turn of the conversation


@dataclass
class Conversation:
    sample_id: str
    sessions: list[tuple[int, str, list[Turn]]]  # (number, date and time, turns)
    questions: list[Question]
    skipped: int  # questions without (resolvable) evidence

    @property
    def turns(self) -> list[Turn]:
        return [turn for _, _, turns in self.sessions for turn in turns]


# --- Data -----------------------------------------------------------------------------


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def load(path: Path, *, shared: bool = False) -> list[Conversation]:
    """The conversations of a LoCoMo file, sessions in order, questions with evidence;
    each turn with the caption of the image it shared when `shared`."""
    out = []
    for index, row in enumerate(json.loads(path.read_text(encoding="utf-8"))):
        chat = row["conversation"]
        numbers = sorted(
            int(key.removeprefix("session_"))
            for key, value in chat.items()
            if re.fullmatch(r"session_\d+", key) and isinstance(value, list) and value
        )
        sessions = []
        for number in numbers:
            turns = [
                Turn(
                    t["dia_id"], _one_line(t["speaker"]), _one_line(t.get("text", "")),
                    _one_line(t.get("blip_caption", "")) if shared else "",
                )
                for t in chat[f"session_{number}"]
                if _one_line(t.get("text", "")) or (shared and _one_line(t.get("blip_caption", "")))
            ]  # fmt: skip
            sessions.append((number, _one_line(chat.get(f"session_{number}_date_time", "")), turns))
        known = {turn.dia_id for _, _, turns in sessions for turn in turns}
        questions, skipped = [], 0
        for qa in row.get("qa", []):
            ids = []
            for entry in qa.get("evidence") or []:  # some entries hold several ids
                ids += [f"D{s}:{t}" for s, t in _EVIDENCE_ID.findall(str(entry))]
            evidence = tuple(dict.fromkeys(i for i in ids if i in known))
            if not evidence or qa.get("category") not in CATEGORIES:
                skipped += 1
                continue
            questions.append(Question(_one_line(qa["question"]), qa["category"], evidence))
        out.append(Conversation(str(row.get("sample_id", index)), sessions, questions, skipped))
    return out


def _written(turn: Turn) -> dict[str, object]:
    """A turn as the transcript holds it: an image it shared as an attachment."""
    row: dict[str, object] = {"speaker": turn.speaker, "text": turn.text}
    if turn.shared:
        row["images"] = [{"caption": turn.shared}]
    return row


def write_conversation(conversation: Conversation, folder: Path) -> None:
    """The conversation as one JSON transcript, as a chat export would give it: its
    sessions in order, each with its date as LoCoMo writes it ("1:56 pm on 8 May,
    2023") and its turns (speaker, text)."""
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("*"):
        stale.unlink()
    transcript = {
        "title": f"Conversation {conversation.sample_id}",
        "sessions": [
            {"title": f"Session {number}", "date": when,
             "turns": [_written(t) for t in turns]}
            for number, when, turns in conversation.sessions
        ],
    }  # fmt: skip
    (folder / f"{conversation.sample_id}.json").write_text(
        json.dumps(transcript, ensure_ascii=False, indent=1), encoding="utf-8"
    )


# --- Judging --------------------------------------------------------------------------


def normalised(text: str) -> str:
    return " ".join(_PUNCTUATION.sub(" ", text.casefold()).split())


class Haystack:
    """A returned text, normalised once, that evidence turns are looked up in."""

    def __init__(self, text: str) -> None:
        self.text = normalised(text)
        words = self.text.split()
        self.words = set(words)
        self.grams = {tuple(words[i : i + GRAM]) for i in range(len(words) - GRAM + 1)}

    def holds(self, turn_text: str) -> bool:
        needle = normalised(turn_text)
        if not needle:
            return True
        if needle in self.text:
            return True
        words = needle.split()
        if len(words) < GRAM:
            return all(word in self.words for word in words)
        grams = [tuple(words[i : i + GRAM]) for i in range(len(words) - GRAM + 1)]
        return sum(gram in self.grams for gram in grams) >= GRAM_SHARE * len(grams)


def recall(question: Question, inside: Callable[[str], bool]) -> float:
    """The share of the question's evidence turns (dia ids) that are `inside`."""
    return sum(inside(dia_id) for dia_id in question.evidence) / len(question.evidence)


def found_in(hay: Haystack, text_of: dict[str, str]) -> Callable[[str], bool]:
    return lambda dia_id: hay.holds(text_of[dia_id])


def selected(chosen: set[int], position: dict[str, int]) -> Callable[[str], bool]:
    return lambda dia_id: position[dia_id] in chosen


# --- Baselines ------------------------------------------------------------------------


def tokenize(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class BM25:
    """Okapi BM25 over a fixed list of texts."""

    def __init__(self, texts: Sequence[str], *, k1: float = BM25_K1, b: float = BM25_B) -> None:
        self.k1, self.b = k1, b
        self.docs = [Counter(tokenize(text)) for text in texts]
        self.lengths = [sum(doc.values()) for doc in self.docs]
        self.mean_length = (sum(self.lengths) / len(self.lengths)) if self.lengths else 1.0
        frequency: Counter[str] = Counter()
        for doc in self.docs:
            frequency.update(doc.keys())
        n = len(self.docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in frequency.items()}

    def ranking(self, query: str) -> list[int]:
        terms = [t for t in dict.fromkeys(tokenize(query)) if t in self.idf]
        scores = []
        for index, doc in enumerate(self.docs):
            norm = self.k1 * (1 - self.b + self.b * self.lengths[index] / self.mean_length)
            score = sum(
                self.idf[t] * doc[t] * (self.k1 + 1) / (doc[t] + norm) for t in terms if t in doc
            )
            scores.append(score)
        return sorted(range(len(self.docs)), key=lambda i: (-scores[i], i))


def rrf(rankings: Sequence[Sequence[int]], *, k: int = RRF_K) -> list[int]:
    scores: dict[int, float] = defaultdict(float)
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] += 1 / (k + rank)
    return sorted(scores, key=lambda i: (-scores[i], i))


def fill(ranking: Sequence[int], costs: Sequence[int], budget: int) -> tuple[set[int], int]:
    """Greedy in rank order: each item that still fits goes in; (chosen, tokens)."""
    chosen, used = set(), 0
    for index in ranking:
        if used + costs[index] <= budget:
            chosen.add(index)
            used += costs[index]
    return chosen, used


# --- Running --------------------------------------------------------------------------


def workspace_name(conversation: Conversation) -> str:
    shared = any(turn.shared for turn in conversation.turns)
    return f"Memory {conversation.sample_id}" + (" (with images)" if shared else "")


def ingest(conversation: Conversation, *, reuse: bool) -> tuple[str, float]:
    """The conversation's workspace (ingested and indexed unless reused); its group id
    and the seconds ingesting took."""
    from curation.usecases import ingest_now
    from tenants.models import Scope

    name = workspace_name(conversation)
    found = Scope.objects.filter(name=name).first()
    if found is not None and reuse:
        return found.group_id, 0.0
    folder = Path(tempfile.gettempdir()) / "vera-bench-memory" / conversation.sample_id
    write_conversation(conversation, folder)
    workspace, principal = bench_workspace(ORG, name)
    started = time.perf_counter()
    # Tier 2: the bench's conversations are the record it asks about (chat defaults to 4).
    source_id = markdown_source(
        principal, workspace.group_id, folder, name=name, tier=2, kind="conversation"
    )
    report = ingest_now(source_id=source_id, group_id=workspace.group_id)
    drain_outbox()
    seconds = time.perf_counter() - started
    print(f"ingested {name}: {len(conversation.sessions)} sessions, "
          f"{len(conversation.turns)} turns, {report.new} records, claims "
          f"{dict(report.claims)} in {seconds:.0f} s", flush=True)  # fmt: skip
    return workspace.group_id, seconds


@dataclass
class Scores:
    """Per system column: each question's recall (with its category) and tokens used."""

    recall: dict[str, list[tuple[int, float]]]
    tokens: dict[str, list[int]]


def columns() -> list[str]:
    out = [f"pack@{b}" for b in BUDGETS]
    out += [f"{name}@{b}" for name in BASELINES for b in BUDGETS]
    out += [f"search R@{k}" for k in SEARCH_CUTOFFS]
    return out


def evaluate(
    conversation: Conversation, group_id: str, questions: Sequence[Question], scores: Scores
) -> None:
    """Every system's recall (and tokens) for the conversation's questions, into `scores`."""
    import numpy as np
    from django.utils import timezone

    from retrieval.domain.context import ContextRequest
    from retrieval.domain.query import Query
    from retrieval.models import SearchDocument
    from retrieval.usecases import context_pack, live_search, tokenizer
    from tenants import rls
    from tenants.selectors import principal_system
    from vera import wiring

    count = tokenizer().count
    search = live_search()
    principal = principal_system("bench", group_ids=[group_id])
    turns = conversation.turns
    position = {turn.dia_id: index for index, turn in enumerate(turns)}
    text_of = {turn.dia_id: turn.said for turn in turns}
    lines = [turn.line for turn in turns]
    costs = [count(line) for line in lines]
    bm25 = BM25(lines)
    passages = np.asarray(wiring.embedder().embed(lines), dtype=np.float32)
    passages /= np.linalg.norm(passages, axis=1, keepdims=True) + 1e-12
    query_embedder = wiring.query_embedder()

    with rls.tenant_context(principal):
        documents = dict(SearchDocument.objects.values_list("claim_id", "text"))
        for question in questions:
            now = timezone.now()
            for budget in BUDGETS:
                wanted = ContextRequest(query=Query(text=question.text), token_budget=budget)
                served = context_pack(principal, wanted, now=now, keep=False)
                hay = Haystack(served.pack.text)
                column = f"pack@{budget}"
                scores.recall[column].append(
                    (question.category, recall(question, found_in(hay, text_of)))
                )
                scores.tokens[column].append(served.pack.tokens)
            result = search(
                query=Query(text=question.text, k=max(SEARCH_CUTOFFS)), now=now, record=False
            )
            for k in SEARCH_CUTOFFS:
                hits = "\n".join(documents.get(h.claim_id, "") for h in result.hits[:k])
                hay = Haystack(hits)
                scores.recall[f"search R@{k}"].append(
                    (question.category, recall(question, found_in(hay, text_of)))
                )
            lexical = bm25.ranking(question.text)
            vector = np.asarray(query_embedder.embed([question.text])[0], dtype=np.float32)
            similarity = passages @ (vector / (np.linalg.norm(vector) + 1e-12))
            dense = sorted(range(len(turns)), key=lambda i: (-float(similarity[i]), i))
            for name, ranking in (("BM25", lexical), ("dense", dense),
                                  ("RRF", rrf([lexical, dense]))):  # fmt: skip
                for budget in BUDGETS:
                    chosen, used = fill(ranking, costs, budget)
                    column = f"{name}@{budget}"
                    scores.recall[column].append(
                        (question.category, recall(question, selected(chosen, position)))
                    )
                    scores.tokens[column].append(used)


def table(scores: Scores) -> str:
    names = columns()
    width = max(len(n) for n in names) + 1
    head = f"{'category':<12}{'n':>5} " + "".join(f"{n:>{width}}" for n in names)
    rows = [head, "-" * len(head)]
    for category, label in [*CATEGORIES.items(), (0, "overall")]:
        cells, n = [], 0
        for name in names:
            values = [r for c, r in scores.recall[name] if category in (0, c)]
            n = len(values)
            cells.append(f"{sum(values) / n:>{width}.3f}" if n else f"{'-':>{width}}")
        rows.append(f"{label:<12}{n:>5} " + "".join(cells))
    used = [
        f"{name} {sum(values) / len(values):.0f}"
        for name in names
        if (values := scores.tokens.get(name))
    ]
    rows.append("mean tokens used: " + ", ".join(used))
    return "\n".join(rows)


def interval(values: Sequence[float]) -> tuple[float, float]:
    """The mean of `values` and the half-width of its 95% interval (1.96 standard errors,
    the sample standard deviation over the square root of n; 0 for fewer than two)."""
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, 0.0
    variance = sum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, 1.96 * math.sqrt(variance / n)


def spread(parts: Sequence[tuple[str, Scores]], column: str = SPREAD_COLUMN) -> str:
    """`column`'s recall per category for each conversation, then over all of them with
    its 95% interval: how far a conversation nobody has seen may land from the mean."""
    names = [name for name, _ in parts]
    width = max(9, *(len(n) + 1 for n in names))
    head = f"{'category':<12}" + "".join(f"{n:>{width}}" for n in names) + f"{'all':>16}"
    rows = [f"{column} per conversation", head, "-" * len(head)]
    for category, label in [*CATEGORIES.items(), (0, "overall")]:
        cells, every = [], []
        for _, part in parts:
            values = [r for c, r in part.recall[column] if category in (0, c)]
            every += values
            mean = f"{sum(values) / len(values):.3f}" if values else "-"
            cells.append(f"{mean:>{width}}")
        total = "-"
        if every:
            middle, half = interval(every)
            total = f"{middle:.3f} ± {half:.3f}"
        rows.append(f"{label:<12}" + "".join(cells) + f"{total:>16}")
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--conversations", type=int, default=0, help="the first N (0: all)")
    parser.add_argument(
        "--questions", type=int, default=0,
        help="the first N questions with evidence per conversation (0: all)",
    )  # fmt: skip
    parser.add_argument("--reuse", action="store_true", help="keep an earlier run's workspaces")
    parser.add_argument(
        "--images", action="store_true",
        help="the images the turns shared (their captions) as attachments, for every system",
    )  # fmt: skip
    args = parser.parse_args()
    os.environ.setdefault("VERA_BENCH__DB", "vera_bench_memory")
    os.environ.setdefault("VERA_MEMORY__GRAPH_NAME", "vera_bench_memory")
    os.environ["VERA_EMBEDDER__PROVIDER"] = "minilm"
    conversations = load(args.data, shared=args.images)
    if args.conversations:
        conversations = conversations[: args.conversations]
    setup_django(fresh=not args.reuse)
    from retrieval.usecases import tokenizer

    started = time.perf_counter()
    workspaces = [ingest(c, reuse=args.reuse) for c in conversations]
    ingest_seconds = sum(seconds for _, seconds in workspaces)
    analyze()
    print(f"ingest: {ingest_seconds:.0f} s ({time.perf_counter() - started:.0f} s wall)")
    scores = Scores(defaultdict(list), defaultdict(list))
    parts: list[tuple[str, Scores]] = []
    asked_started = time.perf_counter()
    skipped = 0
    for conversation, (group_id, _) in zip(conversations, workspaces, strict=True):
        questions = conversation.questions
        if args.questions:
            questions = questions[: args.questions]
        skipped += conversation.skipped
        t0 = time.perf_counter()
        part = Scores(defaultdict(list), defaultdict(list))
        evaluate(conversation, group_id, questions, part)
        parts.append((conversation.sample_id, part))
        for column, rows in part.recall.items():
            scores.recall[column] += rows
        for column, used in part.tokens.items():
            scores.tokens[column] += used
        print(f"asked {workspace_name(conversation)}: {len(questions)} questions in "
              f"{time.perf_counter() - t0:.0f} s", flush=True)  # fmt: skip
    asked = len(scores.recall[columns()[0]])
    print(f"\n{len(conversations)} conversations, {asked} questions "
          f"({skipped} without evidence skipped), tokenizer "
          f"{tokenizer().name}, questions took "
          f"{time.perf_counter() - asked_started:.0f} s\n")  # fmt: skip
    print("evidence recall (share of evidence turns inside what each system returned)")
    print(table(scores))
    print()
    print(spread(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
