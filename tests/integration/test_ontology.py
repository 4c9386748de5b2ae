"""The ontology per workspace: the defaults until an admin edits it through the one write
path (the REST API and the admin both call the ontology use cases), each change audited
and moving the workspace's version; read under row-level security; pinned by knowledge
snapshots, which read the pinned version back exactly.

Real Postgres as the application role (RLS forced), the REST API with session auth.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from common.errors import PermissionDenied
from curation.domain.ontology import DEFAULT_ONTOLOGY, MAX_WORDS, Ontology, PredicateSense
from curation.models import OntologyRevision, Predicate
from curation.selectors import ontologies_for, ontology_at, ontology_for
from curation.services.ontology import ontology_predicate_reset, ontology_predicate_set
from retrieval import bootstrap as retrieval_bootstrap
from retrieval.models import Snapshot
from retrieval.services.snapshots import (
    Pinning,
    snapshot_copy,
    snapshot_ontology,
    snapshot_take,
    snapshot_verify,
)
from tenants import rls
from tenants.domain.access import Principal
from tenants.models import AuditEvent
from tests.support.tenancy import Tenant, admin_site_login

pytestmark = pytest.mark.django_db

URL = "/api/v1/ontology"
SERVED_FROM = {
    "label": "is served from",
    "description": "where requests to it are answered",
    "words": ["served", "serves", "backend"],
    "questions": ["where is X served from", "what serves X"],
    "object_type": "host",
    "functional": True,
}


def _get(client: Client, user: Any, scope: str) -> Any:
    client.force_login(user)
    return client.get(URL, {"scope": scope})


def _put(client: Client, user: Any, scope: str, name: str, body: dict[str, Any]) -> Any:
    client.force_login(user)
    return client.put(f"{URL}/{name}?scope={scope}", body, content_type="application/json")


def _delete(client: Client, user: Any, scope: str, name: str) -> Any:
    client.force_login(user)
    return client.delete(f"{URL}/{name}?scope={scope}")


def _predicates(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["name"]: entry for entry in body["predicates"]}


def _events(tenant: Tenant, action: str) -> list[AuditEvent]:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return list(AuditEvent.objects.filter(action=action).order_by("pk"))


def _ontology(tenant: Tenant) -> Ontology:
    with rls.tenant_context(tenant.principal(tenant.admin)):
        return ontology_for(tenant.workspace.group_id)


def _set(tenant: Tenant, name: str = "RUNS_ON", **fields: Any) -> Ontology:
    """The default sense of `name` (if any) with these fields changed, set by the admin."""
    actor = tenant.principal(tenant.admin)
    changes = {"label": "is served from", **fields}
    default = DEFAULT_ONTOLOGY.get(name)
    sense = replace(default, **changes) if default else PredicateSense(name=name, **changes)
    with rls.tenant_context(actor):
        return ontology_predicate_set(actor=actor, group_id=tenant.workspace.group_id, sense=sense)


# --- reading ---------------------------------------------------------------------------


def test_defaults_are_served_at_version_0_when_never_edited(
    tenant_a: Tenant, client: Client
) -> None:
    response = _get(client, tenant_a.viewer, tenant_a.workspace.group_id)
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["group_id"], body["version"]) == (tenant_a.workspace.group_id, 0)
    served = _predicates(body)
    assert set(served) == set(DEFAULT_ONTOLOGY.senses)
    runs_on = DEFAULT_ONTOLOGY.senses["RUNS_ON"]
    assert served["RUNS_ON"]["label"] == runs_on.label
    assert served["RUNS_ON"]["questions"] == list(runs_on.questions)
    assert all(entry["default"] for entry in served.values())


def test_get_without_a_scope_is_a_400_naming_it(tenant_a: Tenant, client: Client) -> None:
    client.force_login(tenant_a.viewer)
    response = client.get(URL)
    assert response.status_code == 400
    assert "scope" in response.json()


# --- editing through the API -------------------------------------------------------------


def test_admin_put_changes_the_sense_moves_the_version_and_is_audited(
    tenant_a: Tenant, client: Client
) -> None:
    scope = tenant_a.workspace.group_id
    response = _put(client, tenant_a.admin, scope, "RUNS_ON", SERVED_FROM)
    assert response.status_code == 200, response.content
    assert response.json()["version"] == 1
    runs_on = _predicates(_get(client, tenant_a.viewer, scope).json())["RUNS_ON"]
    assert runs_on == {"name": "RUNS_ON", **SERVED_FROM, "default": False}
    assert _ontology(tenant_a).senses["RUNS_ON"].words == ("served", "serves", "backend")
    [event] = _events(tenant_a, "ontology.predicate.set")
    assert (event.actor_id, event.group_id, event.target_id) == (
        tenant_a.admin.pk,
        scope,
        "RUNS_ON",
    )
    assert event.data == {
        "name": "RUNS_ON", "version": 1,
        "changed": ["label", "description", "words", "questions"],  # the object type is kept
    }  # fmt: skip


def test_put_of_a_new_predicate_adds_it_to_the_ontology(tenant_a: Tenant, client: Client) -> None:
    scope = tenant_a.workspace.group_id
    body = {"label": "is paged by", "questions": ["who gets paged for X"]}
    assert _put(client, tenant_a.admin, scope, "PAGED_BY", body).status_code == 200
    paged = _ontology(tenant_a).get("PAGED_BY")
    assert paged is not None
    assert (paged.label, paged.questions, paged.words) == (
        "is paged by",
        ("who gets paged for X",),
        (),
    )


def test_put_of_the_sense_it_has_already_is_no_edit(tenant_a: Tenant, client: Client) -> None:
    scope = tenant_a.workspace.group_id
    assert _put(client, tenant_a.admin, scope, "RUNS_ON", SERVED_FROM).json()["version"] == 1
    assert _put(client, tenant_a.admin, scope, "RUNS_ON", SERVED_FROM).json()["version"] == 1
    assert len(_events(tenant_a, "ontology.predicate.set")) == 1


def test_reviewer_put_is_a_403_and_changes_nothing(tenant_a: Tenant, client: Client) -> None:
    scope = tenant_a.workspace.group_id
    response = _put(client, tenant_a.reviewer, scope, "RUNS_ON", SERVED_FROM)
    assert response.status_code == 403
    assert "admin" in response.json()["detail"]
    assert _ontology(tenant_a) == DEFAULT_ONTOLOGY
    assert _events(tenant_a, "ontology.predicate.set") == []


def test_reviewer_delete_is_a_403_and_keeps_the_workspaces_sense(
    tenant_a: Tenant, client: Client
) -> None:
    _set(tenant_a)
    response = _delete(client, tenant_a.reviewer, tenant_a.workspace.group_id, "RUNS_ON")
    assert response.status_code == 403
    assert _ontology(tenant_a).senses["RUNS_ON"].label == "is served from"


def test_another_tenants_admin_gets_404_for_the_scope_and_changes_nothing(
    tenant_a: Tenant, tenant_b: Tenant, client: Client
) -> None:
    scope = tenant_a.workspace.group_id
    assert _get(client, tenant_b.admin, scope).status_code == 404
    assert _put(client, tenant_b.admin, scope, "RUNS_ON", SERVED_FROM).status_code == 404
    assert _delete(client, tenant_b.admin, scope, "RUNS_ON").status_code == 404
    assert _ontology(tenant_a) == DEFAULT_ONTOLOGY


def test_another_tenants_admin_is_refused_by_the_service_itself(
    tenant_a: Tenant, tenant_b: Tenant
) -> None:
    intruder = tenant_b.principal(tenant_b.admin)
    sense = PredicateSense(name="RUNS_ON", label="is served from")
    with rls.tenant_context(intruder), pytest.raises(PermissionDenied):
        ontology_predicate_set(actor=intruder, group_id=tenant_a.workspace.group_id, sense=sense)
    assert _ontology(tenant_a) == DEFAULT_ONTOLOGY


@pytest.mark.parametrize(
    ("name", "change", "message"),
    [
        ("runs_on", {}, "must be UPPER_SNAKE_CASE"),
        ("RUNS_ON", {"questions": ["where does it run"]}, "must name the entity as X"),
        ("RUNS_ON", {"words": [f"w{i}" for i in range(MAX_WORDS + 1)]},
         f"words holds at most {MAX_WORDS} entries"),
        ("RUNS_ON", {"label": "l" * 201}, "label must be 1 to 200 characters"),
        ("RUNS_ON", {"words": ["host", " "]}, "every entry of words must be 1 to 200"),
        ("R" * 101, {}, "name must be at most 100 characters"),
    ],
    ids=["lowercase-name", "question-without-x", "65-words", "long-label", "blank-word",
         "long-name"],
)  # fmt: skip
def test_bad_input_is_a_400_with_the_message_and_changes_nothing(
    tenant_a: Tenant, client: Client, name: str, change: dict[str, Any], message: str
) -> None:
    response = _put(client, tenant_a.admin, tenant_a.workspace.group_id, name,
                    {**SERVED_FROM, **change})  # fmt: skip
    assert response.status_code == 400
    assert message in response.json()["detail"]
    assert _ontology(tenant_a) == DEFAULT_ONTOLOGY


def test_a_blank_label_is_a_400_naming_the_field(tenant_a: Tenant, client: Client) -> None:
    body = {**SERVED_FROM, "label": "  "}
    response = _put(client, tenant_a.admin, tenant_a.workspace.group_id, "RUNS_ON", body)
    assert response.status_code == 400
    assert response.json() == {"label": ["This field may not be blank."]}


def test_unknown_body_fields_are_a_400(tenant_a: Tenant, client: Client) -> None:
    body = {**SERVED_FROM, "version": 7}
    response = _put(client, tenant_a.admin, tenant_a.workspace.group_id, "RUNS_ON", body)
    assert response.status_code == 400
    assert "unknown field(s): version" in str(response.json())


def test_delete_resets_to_the_default_and_is_audited(tenant_a: Tenant, client: Client) -> None:
    scope = tenant_a.workspace.group_id
    _set(tenant_a, words=("served",))
    response = _delete(client, tenant_a.admin, scope, "RUNS_ON")
    assert response.status_code == 200, response.content
    assert response.json()["version"] == 2
    assert _predicates(response.json())["RUNS_ON"]["default"] is True
    assert _ontology(tenant_a).senses["RUNS_ON"] == DEFAULT_ONTOLOGY.senses["RUNS_ON"]
    [event] = _events(tenant_a, "ontology.predicate.reset")
    assert (event.actor_id, event.target_id) == (tenant_a.admin.pk, "RUNS_ON")
    assert event.data == {"name": "RUNS_ON", "version": 2, "changed": ["label", "words"]}


def test_delete_of_a_predicate_only_the_workspace_had_removes_it(tenant_a: Tenant) -> None:
    _set(tenant_a, name="PAGED_BY", label="is paged by")
    actor = tenant_a.principal(tenant_a.admin)
    with rls.tenant_context(actor):
        after = ontology_predicate_reset(
            actor=actor, group_id=tenant_a.workspace.group_id, name="PAGED_BY"
        )
    assert (after.get("PAGED_BY"), after.version) == (None, 2)
    assert _ontology(tenant_a) == after


def test_delete_of_what_was_never_set_changes_nothing(tenant_a: Tenant, client: Client) -> None:
    response = _delete(client, tenant_a.admin, tenant_a.workspace.group_id, "RUNS_ON")
    assert response.status_code == 200
    assert response.json()["version"] == 0
    assert _events(tenant_a, "ontology.predicate.reset") == []


# --- versions, and row-level security ------------------------------------------------------


def test_each_version_is_kept_whole_and_read_back_exactly(tenant_a: Tenant) -> None:
    first = _set(tenant_a, label="is served from")
    second = _set(tenant_a, label="is hosted by")
    group_id = tenant_a.workspace.group_id
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert ontology_at(group_id=group_id, version=1) == first
        assert ontology_at(group_id=group_id, version=2) == second == ontology_for(group_id)
        assert ontology_at(group_id=group_id, version=0) == DEFAULT_ONTOLOGY
        assert ontology_at(group_id=group_id, version=3) is None


def test_ontology_for_never_returns_another_workspaces_rows(
    tenant_a: Tenant, tenant_b: Tenant
) -> None:
    _set(tenant_b, label="belongs to globex")
    a, b = tenant_a.workspace.group_id, tenant_b.workspace.group_id
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        assert ontology_for(b) == DEFAULT_ONTOLOGY  # B's rows are invisible here
        assert ontologies_for([a, b]) == {a: DEFAULT_ONTOLOGY, b: DEFAULT_ONTOLOGY}
        assert not Predicate.objects.exists()
        assert not OntologyRevision.objects.exists()
    with rls.tenant_context(tenant_b.principal(tenant_b.admin)):
        assert ontology_for(b).senses["RUNS_ON"].label == "belongs to globex"


def test_ontologies_for_reads_many_workspaces_in_one_query(
    tenant_a: Tenant, tenant_b: Tenant
) -> None:
    _set(tenant_a, label="acme's")
    _set(tenant_a, name="PAGED_BY", label="is paged by")
    _set(tenant_b, label="globex's")
    a, b = tenant_a.workspace.group_id, tenant_b.workspace.group_id
    both = tenant_a.principal(tenant_a.admin).roles | tenant_b.principal(tenant_b.admin).roles
    with rls.tenant_context(Principal(label="both", roles=both)):
        with CaptureQueriesContext(connection) as queries:
            found = ontologies_for([a, b, "workspace:never-edited"])
        assert len(queries) == 1
    assert (found[a].version, found[b].version) == (2, 1)
    assert (found[a].senses["RUNS_ON"].label, found[b].senses["RUNS_ON"].label) == (
        "acme's", "globex's",
    )  # fmt: skip
    assert found[a].get("PAGED_BY") is not None
    assert found[b].get("PAGED_BY") is None
    assert found["workspace:never-edited"] == DEFAULT_ONTOLOGY


# --- snapshots pin the version ---------------------------------------------------------------


def _snapshot(tenant: Tenant, name: str) -> Snapshot:
    actor = tenant.principal(tenant.admin)
    pinning = Pinning(
        catalog=retrieval_bootstrap.providers().embedders(), reranking=None, fusion={}
    )
    with rls.tenant_context(actor):
        taken = snapshot_take(actor=actor, group_id=tenant.workspace.group_id, name=name)
        built = snapshot_copy(taken.pk, pinning)
    assert built is not None
    return built


def test_a_snapshot_keeps_the_ontology_version_it_was_taken_at(
    tenant_a: Tenant, client: Client
) -> None:
    before = _snapshot(tenant_a, "before")
    edited = _set(tenant_a, label="is served from")
    after = _snapshot(tenant_a, "after")
    assert (before.ontology_version, after.ontology_version) == (0, 1)
    assert before.pins["predicates"]["ontology_version"] == 0
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        before.refresh_from_db()
        assert before.ontology_version == 0  # the edit left the earlier snapshot alone
        assert snapshot_ontology(before) == DEFAULT_ONTOLOGY
        assert snapshot_ontology(after) == edited
        assert snapshot_verify(before)
        assert snapshot_verify(after)
    client.force_login(tenant_a.viewer)
    shown = client.get(f"/api/v1/snapshots/{after.pk}").json()
    assert (shown["ontology_version"], shown["pins"]["predicates"]["ontology_version"]) == (1, 1)


def test_the_seal_covers_the_pinned_ontology_version(tenant_a: Tenant) -> None:
    _set(tenant_a, label="is served from")
    snapshot = _snapshot(tenant_a, "sealed")
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        Snapshot.objects.filter(pk=snapshot.pk).update(ontology_version=0)
        snapshot.refresh_from_db()
        assert not snapshot_verify(snapshot)


# --- the admin saves through the use cases -------------------------------------------------


def _admin_form(**fields: str) -> dict[str, str]:
    return {
        "label": "is served from", "description": "", "words": "served\r\nbackend, api",
        "questions": "where is X served from", "object_type": "host", **fields,
    }  # fmt: skip


def test_a_predicate_added_in_the_admin_goes_through_the_service(
    tenant_a: Tenant, client: Client
) -> None:
    admin_site_login(client, tenant_a.admin)
    data = _admin_form(group_id=tenant_a.workspace.group_id, name="RUNS_ON")
    response = client.post("/admin/curation/predicate/add/", data)
    assert response.status_code == 302, response.content.decode()[-2000:]
    runs_on = _ontology(tenant_a).senses["RUNS_ON"]
    assert (runs_on.words, runs_on.functional) == (("served", "backend, api"), False)
    [event] = _events(tenant_a, "ontology.predicate.set")
    assert event.actor_id == tenant_a.admin.pk


def test_a_predicate_saved_in_the_admin_is_a_new_version(tenant_a: Tenant, client: Client) -> None:
    _set(tenant_a, words=("served",))
    admin_site_login(client, tenant_a.admin)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        row = Predicate.objects.get()
    response = client.post(f"/admin/curation/predicate/{row.pk}/change/",
                           _admin_form(label="is hosted by"))  # fmt: skip
    assert response.status_code == 302
    assert _ontology(tenant_a).version == 2
    assert _ontology(tenant_a).senses["RUNS_ON"].label == "is hosted by"


def test_the_admin_shows_the_domains_refusal_as_a_form_error(
    tenant_a: Tenant, client: Client
) -> None:
    _set(tenant_a)
    admin_site_login(client, tenant_a.admin)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        row = Predicate.objects.get()
    response = client.post(f"/admin/curation/predicate/{row.pk}/change/",
                           _admin_form(questions="where does it run"))  # fmt: skip
    assert response.status_code == 200
    assert "must name the entity as X" in response.content.decode()
    assert _ontology(tenant_a).version == 1


def test_the_admin_reset_action_goes_through_the_service(tenant_a: Tenant, client: Client) -> None:
    _set(tenant_a)
    admin_site_login(client, tenant_a.admin)
    with rls.tenant_context(tenant_a.principal(tenant_a.admin)):
        row = Predicate.objects.get()
    response = client.post(
        "/admin/curation/predicate/", {"action": "reset_selected", "_selected_action": [row.pk]}
    )
    assert response.status_code == 302
    assert _ontology(tenant_a).senses["RUNS_ON"] == DEFAULT_ONTOLOGY.senses["RUNS_ON"]
    assert len(_events(tenant_a, "ontology.predicate.reset")) == 1
