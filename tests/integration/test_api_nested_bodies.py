"""A JSON body nested 2,000 levels is a 400 naming the bound on every operation, never a 500.

`json.loads` recurses once per level and runs out of stack near 1,500: before the
bounded parser (vera.parsers), such a body was a RecursionError and a 500. The operations
are read from the served OpenAPI schema, as the fuzzing run (test_api_fuzz.py) reads
them, so a new endpoint that takes a body is covered without editing this file.
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from django.core.cache import cache
from django.test import Client

from tenants.domain.scopes import Role
from tenants.models import Scope
from tests.support.tenancy import Tenant

pytestmark = pytest.mark.django_db

DEPTH = 2_000
BODIES = {
    "array": "[" * DEPTH + "]" * DEPTH,
    "object": '{"a":' * DEPTH + "null" + "}" * DEPTH,
}
MESSAGE = "JSON nested deeper than 64 levels"
# Where an operation refuses before it reads the body: the caller, the id, the method,
# the rate. Anything else, a 500 above all, fails.
REFUSED_FIRST = {401, 403, 404, 405, 429}


@pytest.fixture
def api_client(tenant_a: Tenant) -> Client:
    """A client with a workspace admin's real API key, limits lifted, 500s answered."""
    issued = tenant_a.issue_key(owner=tenant_a.admin, role=Role.ADMIN)
    unlimited = 2**31 - 1
    Scope.objects.filter(pk=tenant_a.workspace.pk).update(
        write_limit=unlimited, principal_write_limit=unlimited
    )
    cache.clear()  # failed-authentication counters of earlier tests
    # raise_request_exception=False: a RecursionError is seen as the 500 a client gets.
    return Client(raise_request_exception=False, HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}")


def _operations_with_json_bodies(client: Client) -> list[Any]:
    """Every operation of the served schema that takes a JSON request body."""
    served = client.get("/api/v1/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert served.status_code == 200
    loaded = schemathesis.openapi.from_dict(served.json())
    operations = [result.ok() for result in loaded.get_all_operations()]
    return [
        operation
        for operation in operations
        if any(_is_json(kind) for kind in operation.get_request_payload_content_types())
    ]


def _is_json(media_type: str) -> bool:
    kind = media_type.split(";")[0].strip()
    return kind == "application/json" or kind.endswith("+json")


def _send(client: Client, operation: Any, body: str) -> tuple[int, Any]:
    """The operation called with `body` as it is (json.dumps would itself run out of stack)."""
    path = operation.path.format(**{param.name: 1 for param in operation.path_parameters})
    response = client.generic(operation.method.upper(), path, body, content_type="application/json")
    is_json = response.get("Content-Type", "").startswith("application/json")
    return response.status_code, response.json() if is_json else response.content


def _problem(status: int, body: Any) -> str | None:
    """What is wrong with an answer to a nested body, or None."""
    if status != 400 and status not in REFUSED_FIRST:
        return f"answered {status}"
    detail = body.get("detail") if isinstance(body, dict) else None
    if not isinstance(detail, str) or not detail:
        return f"answered {status} without a JSON message: {body!r}"
    if status == 400 and detail != MESSAGE:
        return f"answered 400 with {detail!r}, not {MESSAGE!r}"
    return None


def test_every_json_operation_refuses_a_deep_body_when_sent_one(api_client: Client) -> None:
    operations = _operations_with_json_bodies(api_client)
    labels = {operation.label for operation in operations}
    reported = {"POST /api/v1/feedback", "POST /api/v1/sources", "POST /api/v1/snapshots",
                "POST /api/v1/claims/{id}/retract"}  # fmt: skip
    assert reported <= labels, labels  # the enumeration found what it must
    problems = []
    for operation in operations:
        for form, body in BODIES.items():
            if problem := _problem(*_send(api_client, operation, body)):
                problems.append(f"{operation.label} ({form}): {problem}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("form", sorted(BODIES))
def test_feedback_answers_400_with_the_depth_when_the_body_is_nested(
    api_client: Client, form: str
) -> None:
    response = api_client.post("/api/v1/feedback", BODIES[form], content_type="application/json")
    assert response.status_code == 400
    assert response.json() == {"detail": MESSAGE}


def test_feedback_reads_a_body_when_it_is_nested_within_the_bound(api_client: Client) -> None:
    body = '{"hit_id": 1, "helpful": true, "note": ' + "[" * 60 + "]" * 60 + "}"
    response = api_client.post("/api/v1/feedback", body, content_type="application/json")
    assert response.status_code == 404  # parsed and validated: no such hit


def test_nan_is_still_refused_when_the_body_is_shallow(api_client: Client) -> None:
    body = '{"hit_id": NaN, "helpful": true}'
    response = api_client.post("/api/v1/feedback", body, content_type="application/json")
    assert response.status_code == 400
    assert "JSON parse error" in response.json()["detail"]


def test_feedback_answers_413_with_the_limit_when_the_body_is_too_large(
    api_client: Client, settings: Any
) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1_000
    body = '{"hit_id": 1, "helpful": true, "pad": "' + "x" * 2_000 + '"}'
    response = api_client.post("/api/v1/feedback", body, content_type="application/json")
    assert response.status_code == 413
    assert response.json() == {
        "detail": "the request body is larger than 1000 bytes; nothing was read"
    }
