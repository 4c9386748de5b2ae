"""Review portal benchmark: server time of the queue page and of an approval at 10,000 pending.

    .venv/bin/python -m bench.portal [--pending 10000] [--requests 200]

Requests go through the whole Django stack in-process (middleware, RLS context,
sessions, templates), so the figures are server time without network. Prints
p50/p95/max in milliseconds; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from bench.common import analyze, setup_django


def _percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[max(0, int(len(ordered) * 0.95) - 1)]
    return (
        f"p50 {statistics.median(ordered):6.1f} ms  p95 {p95:6.1f} ms  "
        f"max {ordered[-1]:6.1f} ms  (n={len(ordered)})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pending", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    setup_django()
    from django.contrib.auth import get_user_model
    from django.test import Client

    from curation.models import Claim
    from tenants import rls
    from tenants.domain.scopes import Role, ScopeKind
    from tenants.selectors import principal_for_user
    from tenants.usecases import membership_grant, scope_create
    from tests.support.bulk_claims import make_pending

    org = scope_create(kind=ScopeKind.ORGANISATION, name="Portal Org")
    workspace = scope_create(kind=ScopeKind.WORKSPACE, name="Portal WS", parent_id=org.pk)
    reviewer = get_user_model().objects.create_user(username="bench-reviewer", password="x" * 20)
    membership_grant(user_id=reviewer.pk, scope_id=workspace.pk, role=Role.REVIEWER)
    principal = principal_for_user(reviewer.pk, label="bench")
    started = time.perf_counter()
    ids = make_pending(principal=principal, group_id=workspace.group_id, count=args.pending)
    analyze()
    print(f"setup            {len(ids)} pending claims in {time.perf_counter() - started:.1f} s")

    client = Client(HTTP_HOST="localhost")  # an allowed host of the local settings
    client.force_login(reviewer)
    pages = ["/review/", "/review/?page=7", "/review/?sort=newest", "/review/?entity=svc-42"]
    client.get(pages[0])  # warm caches and templates
    queue_ms = []
    for i in range(args.requests):
        t0 = time.perf_counter()
        response = client.get(pages[i % len(pages)])
        queue_ms.append((time.perf_counter() - t0) * 1000)
        if response.status_code != 200:
            raise SystemExit(f"queue page answered {response.status_code}")
    print(f"queue page       {_percentiles(queue_ms)}")

    with rls.tenant_context(principal):
        versions = dict(
            Claim.objects.filter(pk__in=ids[: args.requests]).values_list("pk", "version")
        )
    approve_ms = []
    for claim_id in ids[: args.requests]:
        t0 = time.perf_counter()
        response = client.post(
            f"/review/claims/{claim_id}/approve",
            {"version": versions[claim_id]},
            HTTP_HX_REQUEST="true",
        )
        approve_ms.append((time.perf_counter() - t0) * 1000)
        if response.status_code != 200:
            raise SystemExit(f"approve answered {response.status_code}: {response.content[:200]!r}")
    print(f"approve (htmx)   {_percentiles(approve_ms)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
