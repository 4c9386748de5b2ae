"""Conversations as a source, end to end: transcripts read by the real connector (JSON,
Markdown, a Slack export), one dated, attributed claim per turn with its relative times
resolved, answered through `GET /api/v1/context`; Postgres under forced RLS as the app
role."""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from curation.domain.tiers import ClaimStatus
from curation.models import Claim, Episode, EpisodeStatus, Source
from retrieval import bootstrap
from retrieval.domain.query import Query
from retrieval.services import context
from retrieval.usecases import live_search
from tenants import rls
from tenants.domain.scopes import Role
from tests.support.ingest import drain_outbox, ingest_run, write_files
from tests.support.tenancy import Tenant, create_source

pytestmark = pytest.mark.django_db

TRANSCRIPT = {
    "title": "Caroline and Melanie",
    "sessions": [
        {
            "date": "1:56 pm on 8 May, 2023",
            "turns": [
                {"speaker": "Caroline", "text": "Hey Mel! Good to see you! How have you been?"},
                {
                    "speaker": "Melanie",
                    "text": "Hey Caroline! I'm swamped with the kids and work. What's up?",
                },
                {
                    "speaker": "Caroline",
                    "text": "I went to an LGBTQ support group yesterday and it was so powerful.",
                },
                {"speaker": "Melanie", "text": "Wow, that's cool! What happened there?"},
            ],
        },
        {
            "date": "7:55 pm on 25 May, 2023",
            "turns": [
                {
                    "speaker": "Melanie",
                    "text": "I ran a charity race for mental health last Saturday.",
                },
                {"speaker": "Caroline", "text": "That's awesome, Mel! What made you do it?"},
            ],
        },
    ],
}
MARKDOWN = """# Book club

## Session 1 - 3 June 2023

Jon: I finished the book about whales last week.
Gina: Which one?
Jon: Moby-Dick, of course. The chapter on the whiteness of the whale
was the hardest.
"""


def _post_source(client: Client, tenant: Tenant, root: Path, **extra: Any) -> Any:
    key = tenant.issue_key(owner=tenant.admin, role=Role.ADMIN).plaintext
    body = {"scope": tenant.workspace.group_id, "name": "chats", "kind": "conversation",
            "config": {"root": str(root)}, **extra}  # fmt: skip
    return client.post(
        "/api/v1/sources", body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
    )


def _ingest(tenant: Tenant, root: Path, files: dict[str, str], *, tier: int = 2) -> int:
    write_files(root, files)
    source_id = create_source(
        tenant.principal(tenant.admin), group_id=tenant.workspace.group_id, kind="conversation",
        name="chats", config={"root": str(root)}, tier=tier,
    )  # fmt: skip
    ingest_run(source_id=source_id, group_id=tenant.workspace.group_id)
    drain_outbox()
    return source_id


def _context(client: Client, tenant: Tenant, q: str, budget: int = 1000) -> dict[str, Any]:
    client.force_login(tenant.viewer)
    response = client.get("/api/v1/context", {"q": q, "budget": budget})
    assert response.status_code == 200, response.content
    return response.json()


def _claims(tenant: Tenant) -> list[Claim]:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return list(Claim.objects.filter(predicate="STATES").order_by("valid_from", "pk"))


def test_a_source_created_without_a_tier_only_proposes_unless_its_admin_says_otherwise(
    client: Client, tenant_a: Tenant, tmp_path: Path
) -> None:
    default = _post_source(client, tenant_a, tmp_path)
    assert default.status_code == 201, default.content
    chosen = _post_source(client, tenant_a, tmp_path, name="trusted", trust_tier=2)
    assert chosen.status_code == 201, chosen.content
    markdown = _post_source(client, tenant_a, tmp_path, name="docs", kind="markdown")
    assert markdown.status_code == 201, markdown.content
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        tiers = dict(Source.objects.values_list("name", "trust_tier"))
    assert tiers == {"chats": 4, "trusted": 2, "docs": 4}


def test_each_turn_is_a_claim_saying_who_said_it_and_when_with_relative_times_resolved(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    _ingest(tenant_a, tmp_path, {"caroline.json": json.dumps(TRANSCRIPT), "club.md": MARKDOWN})
    claims = _claims(tenant_a)
    texts = [c.fact_text for c in claims]
    assert len(claims) == 6 + 3
    assert all(c.status == ClaimStatus.PUBLISHED for c in claims)
    support = next(c for c in claims if "support group" in c.fact_text)
    assert support.fact_text == (
        "On 8 May 2023, Caroline said: I went to an LGBTQ support group yesterday and it was "
        "so powerful. (yesterday = 7 May 2023)"
    )
    assert support.valid_from.date() == dt.date(2023, 5, 7)  # when it happened
    race = next(c for c in claims if "charity race" in c.fact_text)
    assert race.fact_text.endswith("(last Saturday = 20 May 2023)"), race.fact_text
    # A turn continued on the next line stays one turn, with its speaker and the day.
    assert (
        "On 3 June 2023, Jon said: Moby-Dick, of course. The chapter on the whiteness of the "
        "whale was the hardest." in texts
    )
    whales = next(t for t in texts if "whales" in t)
    assert whales.startswith("On 3 June 2023, Jon said:")
    assert "(last week = " in whales


def test_a_when_question_is_answered_with_the_resolved_date_in_the_pack(
    client: Client, tenant_a: Tenant, tmp_path: Path
) -> None:
    _ingest(tenant_a, tmp_path, {"caroline.json": json.dumps(TRANSCRIPT), "club.md": MARKDOWN})
    body = _context(client, tenant_a, "When did Caroline go to the LGBTQ support group?")
    first = (body["current"] + body["history"])[0]
    assert "support group" in first["fact"]
    assert "7 May 2023" in first["fact"]
    assert "(yesterday = 7 May 2023)" in body["text"]
    assert first["citations"][0]["episode"] == "caroline.json"
    race = _context(client, tenant_a, "When did Melanie run the charity race?")
    assert "20 May 2023" in (race["current"] + race["history"])[0]["fact"]


@pytest.mark.parametrize("budget", [300, 1000, 4000])
def test_a_pack_of_a_conversation_repeats_no_text_and_keeps_its_budget(
    client: Client, tenant_a: Tenant, tmp_path: Path, budget: int
) -> None:
    _ingest(tenant_a, tmp_path, {"caroline.json": json.dumps(TRANSCRIPT), "club.md": MARKDOWN})
    body = _context(client, tenant_a, "What did Caroline say about the support group?", budget)
    assert 0 < body["tokens"] <= budget
    assert body["current"], body  # at 300 tokens too: a cited fact
    assert all(fact["citations"] for fact in body["current"])
    sentences = [
        s.strip()
        for line in body["text"].splitlines()[1:]
        for s in re.split(r"(?<=[.!?])\s+", re.sub(r"^\[\d+\]\s*", "", line))
        if len(s.split()) >= 4
    ]
    assert sentences
    assert len(sentences) == len(set(sentences)), body["text"]
    assert "STATES" not in body["text"]


def test_a_slack_export_names_its_speakers_from_its_users_file(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    users = [{"id": "U1", "name": "ana", "profile": {"real_name": "Ana Lima"}}]
    day = [
        {"type": "message", "user": "U1", "text": "The deploy is done.", "ts": "1685000000.000100"},
        {"type": "message", "subtype": "channel_join", "user": "U1", "text": "joined",
         "ts": "1685000001.000100"},
    ]  # fmt: skip
    (tmp_path / "ops").mkdir()
    _ingest(
        tenant_a, tmp_path,
        {"users.json": json.dumps(users), "ops/2023-05-25.json": json.dumps(day)},
    )  # fmt: skip
    (claim,) = _claims(tenant_a)
    assert claim.fact_text == "On 25 May 2023, Ana Lima said: The deploy is done."


def test_a_file_that_is_not_a_conversation_fails_alone_with_its_reason(
    tenant_a: Tenant, tmp_path: Path
) -> None:
    files = {
        "caroline.json": json.dumps(TRANSCRIPT),
        "config.json": json.dumps({"retries": 3}),
        "broken.json": "{not json",
        "notes.md": "# Notes\n\nNobody speaks here; these are notes.\n",
    }
    _ingest(tenant_a, tmp_path, files, tier=4)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        episodes = {e.external_id: e for e in Episode.objects.all()}
    failed = {
        name: e.failure_reason for name, e in episodes.items() if e.status == EpisodeStatus.FAILED
    }
    assert set(failed) == {"config.json", "broken.json", "notes.md"}, failed
    assert all(reason for reason in failed.values())
    assert "not a conversation" in failed["config.json"]
    claims = _claims(tenant_a)
    assert len(claims) == 6  # the good transcript's turns, not lost
    assert {c.status for c in claims} == {ClaimStatus.PROPOSED}  # tier 4: only proposals


def test_a_hits_neighbouring_turns_come_with_it_marked_beside_it(
    client: Client, tenant_a: Tenant, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _ingest(tenant_a, tmp_path, {"caroline.json": json.dumps(TRANSCRIPT), "club.md": MARKDOWN})
    # A search read one hit deep: what else is packed is the hit's context.
    monkeypatch.setattr(context, "pack_depth", lambda budget: 1)
    body = _context(client, tenant_a, "Was the LGBTQ support group powerful?")
    hit, *rest = body["current"]
    assert "support group" in hit["fact"]
    assert hit["beside"] is None
    assert [f["fact"].split(": ", 1)[1] for f in rest] == [
        "Hey Caroline! I'm swamped with the kids and work. What's up?",
        "Wow, that's cool! What happened there?",
    ]
    assert all(f["beside"] == hit["claim_ids"][0] for f in rest)
    assert "(beside [1])" in body["text"]


def test_another_tenant_gets_neither_the_hits_nor_their_neighbours(
    client: Client, tenant_a: Tenant, tenant_b: Tenant, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    _ingest(tenant_a, tmp_path / "a", {"caroline.json": json.dumps(TRANSCRIPT)})
    monkeypatch.setattr(context, "pack_depth", lambda budget: 1)
    body = _context(client, tenant_b, "What happened at the LGBTQ support group?")
    assert body["current"] == body["history"] == []


# A turn said to Melanie by name, six times over, and her one answer.
CHEERS = {
    "title": "At the park",
    "sessions": [
        {
            "date": "9:00 am on 27 May, 2023",
            "turns": [
                *(
                    {"speaker": "Caroline", "text": f"Melanie! Melanie, {words}, Melanie!"}
                    for words in ("over here", "look", "wave", "smile", "this way", "hello")
                ),
                {
                    "speaker": "Melanie",
                    "text": "Thanks! It was a charity race for mental health, my first race.",
                },
                {"speaker": "Caroline", "text": "So proud of you."},
            ],
        }
    ],
}


def test_a_question_naming_a_speaker_finds_what_they_said_not_what_was_said_to_them(
    client: Client, tenant_a: Tenant, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _ingest(tenant_a, tmp_path, {"park.json": json.dumps(CHEERS)})
    question = "What race did Melanie do?"
    # The search as asked: the name outweighs the question, and a turn said to her ranks
    # first (what the pack would lead with, were the question searched only as asked).
    with rls.tenant_context(tenant_a.principal(tenant_a.viewer)):
        hits = live_search()(query=Query(text=question, k=2), now=timezone.now(), record=False)
        facts = dict(Claim.objects.values_list("pk", "fact_text"))
    assert "Caroline said: Melanie! Melanie" in facts[hits.hits[0].claim_id]
    monkeypatch.setattr(context, "pack_depth", lambda budget: 2)  # two hits of each search
    body = _context(client, tenant_a, question)
    first = body["current"][0]
    assert first["fact"].endswith("Melanie said: Thanks! It was a charity race for mental "
                                  "health, my first race."), first  # fmt: skip
    assert first["beside"] is None  # a hit, not a neighbour
    # Searched twice when the question names someone who speaks, else once, as asked;
    # then once more like the best facts (the second reading), without the names.
    packing = bootstrap.packing()
    asked: list[str] = []

    def spied(**kwargs: Any) -> Any:
        query = kwargs["query"]
        asked.append(f"{query.text} (like)" if query.like else query.text)
        return packing.search(**kwargs)

    with rls.tenant_context(tenant_a.principal(tenant_a.viewer)):
        for text in (question, "What race was it?", "Who is Melanie?"):
            context.context_pack(
                query=Query(text=text), token_budget=1000, user_id=None, now=timezone.now(),
                packing=replace(packing, search=spied), keep=False,
            )  # fmt: skip
    assert asked == [
        question, "What race did do?", "What race did do? (like)",
        "What race was it?", "What race was it? (like)",
        "Who is Melanie?", "Who is Melanie? (like)",
    ]  # fmt: skip
