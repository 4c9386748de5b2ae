"""Retraction of a claim, an episode or a source, through the REST API.

Real pipeline (Markdown source; billing-api ran on k8s-prod-1 from T0 and on
k8s-prod-2 since T1), real outbox into the search index and FalkorDB, real RLS. A
retracted claim is hidden now and found as of a time it was valid; its graph edge goes;
what it had superseded is current again; the reason is kept and audited.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone

from curation import bootstrap
from curation.domain.tiers import ClaimStatus
from curation.models import Claim, Entity, Episode, EpisodeStatus, Source
from curation.services.projection import graph_rebuild
from curation.tasks import process_outbox
from retrieval import bootstrap as retrieval_bootstrap
from retrieval.domain.query import Query
from retrieval.models import SearchDocument
from tenants import rls
from tenants.models import AuditEvent
from tenants.selectors import principal_system
from tests.support.ingest import (
    T0,
    T1,
    ingest_billing_history,
    ingest_markdown,
    ingest_org_handbook,
)
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db


def _claim(tenant: Tenant, target: str) -> Claim:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return Claim.objects.get(predicate="RUNS_ON", object_entity__canonical_name=target)


def _post(client: Client, user, url: str, reason: str | None = "wrong document") -> tuple:
    client.force_login(user)
    body = {} if reason is None else {"reason": reason}
    response = client.post(url, body, content_type="application/json")
    return response.status_code, response.json()


def _runs_on(tenant: Tenant, *, as_of: dt.datetime | None = None) -> list[str]:
    """Where search says billing-api runs (now or as of), best first."""
    with rls.tenant_context(tenant.principal(tenant.viewer)):
        result = retrieval_bootstrap.search()(
            query=Query(text="where does billing-api run", k=10, as_of=as_of),
            now=timezone.now(),
        )
        ids = [hit.claim_id for hit in result.hits]
        names = dict(
            Claim.objects.filter(pk__in=ids, predicate="RUNS_ON").values_list(
                "pk", "object_entity__canonical_name"
            )
        )
    return [names[pk] for pk in ids if pk in names]


def _edges(tenant: Tenant, predicate: str = "RUNS_ON") -> dict[int, str]:
    """The graph's edges of `predicate`: claim id -> the status the edge carries."""
    dump = bootstrap.providers().graph().dump(tenant.workspace.group_id)
    return {edge[0]: edge[5] for edge in dump.edges if edge[3] == predicate}


def test_a_retracted_claim_is_hidden_now_found_as_of_then_and_its_predecessor_returns(
    tenant_a: Tenant, tmp_path: Path, client: Client
) -> None:
    ingest_billing_history(tenant_a, tmp_path)
    now_claim, before = _claim(tenant_a, "k8s-prod-2"), _claim(tenant_a, "k8s-prod-1")
    assert (now_claim.status, before.status) == (ClaimStatus.PUBLISHED, ClaimStatus.SUPERSEDED)
    assert _runs_on(tenant_a)[0] == "k8s-prod-2"

    status, body = _post(
        client, tenant_a.reviewer, f"/api/v1/claims/{now_claim.pk}/retract",
        reason="the migration to k8s-prod-2 was rolled back",
    )  # fmt: skip
    while process_outbox():
        pass

    assert status == 200, body
    assert body["retracted"] == [now_claim.pk]
    assert body["restored"] == [before.pk]
    assert "1 earlier values current again" in body["message"]
    now_claim, before = _claim(tenant_a, "k8s-prod-2"), _claim(tenant_a, "k8s-prod-1")
    assert now_claim.status == ClaimStatus.RETRACTED
    assert now_claim.status_reason == "the migration to k8s-prod-2 was rolled back"
    assert now_claim.valid_to is not None
    assert (before.status, before.valid_to, before.superseded_by_id) == (
        ClaimStatus.PUBLISHED, None, None,
    )  # fmt: skip
    # Search: hidden now, found as of a time it was valid; the old value is current.
    assert _runs_on(tenant_a) == ["k8s-prod-1"]
    assert "k8s-prod-2" in _runs_on(tenant_a, as_of=T1 + dt.timedelta(days=1))
    assert _runs_on(tenant_a, as_of=T0 + dt.timedelta(days=1)) == ["k8s-prod-1"]
    # The graph: the retracted edge is gone, the restored one open; a rebuild agrees.
    assert _edges(tenant_a) == {before.pk: "published"}
    projected = bootstrap.providers().graph().dump(tenant_a.workspace.group_id)
    with rls.tenant_context(principal_system("test", group_ids=[tenant_a.workspace.group_id])):
        graph_rebuild(graph=bootstrap.providers().graph(), group_ids=[tenant_a.workspace.group_id])
    assert bootstrap.providers().graph().dump(tenant_a.workspace.group_id) == projected
    # Audited with the reason; the row is kept (undo is a new decision).
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        event = AuditEvent.objects.get(action="claim.retract")
        assert event.data["reason"] == "the migration to k8s-prod-2 was rolled back"
        assert (event.data["retracted"], event.data["restored"]) == (1, 1)
        assert SearchDocument.objects.get(claim_id=now_claim.pk).status == "retracted"


def test_undoing_a_retraction_is_a_new_decision_that_keeps_the_history(
    tenant_a: Tenant, tmp_path: Path, client: Client
) -> None:
    ingest_billing_history(tenant_a, tmp_path)
    wrong = _claim(tenant_a, "k8s-prod-2")
    assert _post(client, tenant_a.reviewer, f"/api/v1/claims/{wrong.pk}/retract")[0] == 200
    while process_outbox():
        pass
    assert _runs_on(tenant_a) == ["k8s-prod-1"]
    url = f"/api/v1/claims/{wrong.pk}/reinstate"
    assert _post(client, tenant_a.viewer, url, reason="x")[0] == 403
    assert _post(client, tenant_a.reviewer, url, reason=" ")[0] == 400
    before = _claim(tenant_a, "k8s-prod-1")
    status, body = _post(client, tenant_a.reviewer, f"/api/v1/claims/{before.pk}/reinstate")
    assert status == 400
    assert "only a retracted claim can be reinstated" in body["detail"]

    status, body = _post(client, tenant_a.reviewer, url, reason="the rollback was undone")
    while process_outbox():
        pass

    assert status == 200, body
    assert body["created"] is True
    assert body["current"] != wrong.pk
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        kept, current = Claim.objects.get(pk=wrong.pk), Claim.objects.get(pk=body["current"])
        before.refresh_from_db()
        assert kept.status == ClaimStatus.RETRACTED  # the retraction stays in the history
        assert (current.status, current.valid_to) == (ClaimStatus.PUBLISHED, None)
        assert current.valid_from > kept.valid_to
        assert set(current.evidence.values_list("episode_id", flat=True)) == set(
            kept.evidence.values_list("episode_id", flat=True)
        )
        assert (before.status, before.superseded_by_id) == (ClaimStatus.SUPERSEDED, current.pk)
        event = AuditEvent.objects.get(action="claim.reinstate")
        assert event.data == {
            "reason": "the rollback was undone", "current": current.pk, "created": True,
        }  # fmt: skip
    assert _runs_on(tenant_a)[0] == "k8s-prod-2"
    assert _runs_on(tenant_a, as_of=T0 + dt.timedelta(days=1)) == ["k8s-prod-1"]
    # Again: the value is current already; it is re-confirmed, not duplicated.
    status, body = _post(client, tenant_a.reviewer, url, reason="twice")
    assert (status, body["created"], body["current"]) == (200, False, current.pk)


def test_retraction_refuses_bad_input_and_writes_nothing(
    tenant_a: Tenant, tenant_b: Tenant, tmp_path: Path, client: Client
) -> None:
    ingest_billing_history(tenant_a, tmp_path / "a")
    ingest_billing_history(tenant_b, tmp_path / "b")
    claim = _claim(tenant_a, "k8s-prod-2")
    url = f"/api/v1/claims/{claim.pk}/retract"

    assert _post(client, tenant_a.reviewer, url, reason=None)[0] == 400
    status, body = _post(client, tenant_a.reviewer, url, reason="   ")
    assert status == 400
    assert "may not be blank" in str(body)
    assert _post(client, tenant_a.viewer, url)[0] == 403
    assert _post(client, tenant_b.admin, url)[0] == 404  # another tenant's: not even there
    assert _post(client, tenant_a.reviewer, "/api/v1/claims/99999999/retract")[0] == 404
    assert (
        _post(client, tenant_a.reviewer, "/api/v1/sources/99999999999999999999/retract")[0] == 404
    )

    assert _claim(tenant_a, "k8s-prod-2").status == ClaimStatus.PUBLISHED
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert not AuditEvent.objects.filter(action__endswith=".retract").exists()
    assert _post(client, tenant_a.reviewer, url)[0] == 200
    status, body = _post(client, tenant_a.reviewer, url)  # twice: nothing left to retract
    assert status == 400
    assert "retracted" in str(body)


def test_an_episode_withdraws_only_the_claims_no_other_document_supports(
    tenant_a: Tenant, tmp_path: Path, client: Client
) -> None:
    ingest_markdown(
        tenant_a, tmp_path,
        {"billing.md": "# Billing\n\nThe billing-api runs on k8s-prod-1. "
                       "The billing-api is owned by payments-team.\n",
         "team.md": "# Team\n\nThe billing-api is owned by payments-team.\n"},
    )  # fmt: skip
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        episode = Episode.objects.get(external_id="billing.md")
    status, body = _post(client, tenant_a.admin, f"/api/v1/episodes/{episode.pk}/retract")
    while process_outbox():
        pass

    assert status == 200, body
    assert body["kept"] == 1
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert Episode.objects.get(pk=episode.pk).status == EpisodeStatus.RETRACTED
        statuses = dict(Claim.objects.values_list("predicate", "status"))
        only_billing = set(
            Claim.objects.filter(evidence__episode=episode)
            .exclude(evidence__episode__external_id="team.md")
            .values_list("pk", flat=True)
        )
    assert set(body["retracted"]) == only_billing
    assert (statuses["RUNS_ON"], statuses["OWNED_BY"]) == ("retracted", "published")
    assert _edges(tenant_a) == {}
    assert list(_edges(tenant_a, "OWNED_BY").values()) == ["published"]


def test_a_source_withdraws_its_claims_and_stops_its_schedule(
    tenant_a: Tenant, tmp_path: Path, client: Client
) -> None:
    ingest_billing_history(tenant_a, tmp_path)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        source = Source.objects.get()
    status, body = _post(client, tenant_a.admin, f"/api/v1/sources/{source.pk}/retract")
    while process_outbox():
        pass

    assert status == 200, body
    assert body["restored"] == []  # what superseded the old value went with it
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert set(body["retracted"]) == set(Claim.objects.values_list("pk", flat=True))
        assert set(Claim.objects.values_list("status", flat=True)) == {"retracted"}
        assert not Source.objects.get().enabled
        assert set(Episode.objects.values_list("status", flat=True)) == {"retracted"}
        assert not Claim.objects.filter(status=ClaimStatus.PUBLISHED).exists()
        assert Entity.objects.exists()  # entities stay: retraction deletes nothing
    assert _runs_on(tenant_a) == []
    assert "k8s-prod-1" in _runs_on(tenant_a, as_of=T0 + dt.timedelta(days=1))
    assert _edges(tenant_a) == {}
    assert _edges(tenant_a, "OWNED_BY") == {}


def test_the_claim_page_retracts_with_a_reason_and_says_what_happened(
    tenant_a: Tenant, tmp_path: Path, client: Client
) -> None:
    ingest_billing_history(tenant_a, tmp_path)
    claim = _claim(tenant_a, "k8s-prod-2")
    page = f"/claims/{claim.pk}/"
    client.force_login(tenant_a.viewer)
    assert "Retract this claim" not in client.get(page).content.decode()  # a viewer may not
    assert client.post(f"/claims/{claim.pk}/retract", {"reason": "x"}).status_code == 403

    client.force_login(tenant_a.reviewer)
    assert "Retract this claim" in client.get(page).content.decode()
    blank = client.post(f"/claims/{claim.pk}/retract", {"reason": " ", "claim": claim.pk})
    assert "say why" in client.get(blank["Location"]).content.decode()
    done = client.post(
        f"/claims/{claim.pk}/retract", {"reason": "rolled back", "claim": claim.pk}, follow=True
    )

    text = done.content.decode()
    assert "Retracted claim" in text
    assert "1 earlier values current again" in text
    assert "Retract this claim" not in text  # nothing left to retract
    assert _claim(tenant_a, "k8s-prod-2").status == ClaimStatus.RETRACTED
    # Undone from the same page, by a new decision.
    assert "Reinstate this claim" in text
    again = client.post(
        f"/claims/{claim.pk}/retract", {"reason": "it was right", "claim": claim.pk, "undo": "1"},
        follow=True,
    )  # fmt: skip
    assert f"Reinstated claim {claim.pk} as claim" in again.content.decode()


def test_the_admin_action_asks_why_then_retracts_through_the_service(
    tenant_a: Tenant, tmp_path: Path, client: Client
) -> None:
    ingest_billing_history(tenant_a, tmp_path)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        source = Source.objects.get()
    tenant_a.admin.is_staff = tenant_a.admin.is_superuser = True  # as the admin tests do:
    tenant_a.admin.save()  # RLS and the service's role check still apply
    client.force_login(tenant_a.admin)
    url = "/admin/curation/source/"
    chosen = {"action": "retract_selected", "_selected_action": [source.pk]}

    asked = client.post(url, chosen)
    assert asked.status_code == 200
    assert "Why" in asked.content.decode()
    assert source.name in asked.content.decode()
    again = client.post(url, {**chosen, "confirmed": "yes", "reason": ""})
    assert "the reason is required" in again.content.decode()
    assert _claim(tenant_a, "k8s-prod-2").status == ClaimStatus.PUBLISHED  # nothing yet

    done = client.post(url, {**chosen, "confirmed": "yes", "reason": "wrong repo"}, follow=True)

    assert f"Retracted source {source.pk}" in done.content.decode()
    assert _claim(tenant_a, "k8s-prod-2").status == ClaimStatus.RETRACTED
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert AuditEvent.objects.get(action="source.retract").data["reason"] == "wrong repo"


def test_an_organisations_claim_read_from_a_workspace_is_refused_not_an_error(
    tenant_a: Tenant, tmp_path: Path, client: Client
) -> None:
    # A workspace reads its organisation's published claims; retracting or reinstating
    # one of them needs a role in the organisation: 403 with the reason, never a 500.
    source_id = ingest_org_handbook(tenant_a, tmp_path)
    operator = principal_system("test", group_ids=[tenant_a.org.group_id])
    with rls.tenant_context(operator):
        claim = Claim.objects.get(predicate="RUNS_ON")
        episode = Episode.objects.get(source_id=source_id)
    with rls.tenant_context(tenant_a.principal(tenant_a.reviewer)):
        assert Claim.objects.filter(pk=claim.pk).exists()  # readable from the workspace

    for url in (
        f"/api/v1/claims/{claim.pk}/retract",
        f"/api/v1/episodes/{episode.pk}/retract",  # its citation is readable too
        f"/api/v1/claims/{claim.pk}/reinstate",
    ):
        status, body = _post(client, tenant_a.reviewer, url)
        assert status == 403, (url, status, body)
        assert "reviewer or admin role" in body["detail"]
    with rls.tenant_context(operator):
        assert Claim.objects.get(pk=claim.pk).status == ClaimStatus.PUBLISHED
