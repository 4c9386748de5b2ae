"""Literal object keys too long for the column end in a digest of the value, not a cut.

A key was "l:" + the normalised literal cut at 300 characters, so two long literals with
the same head (the passages of a repetitive document) were the same value, and the later
one was dropped as a re-confirmation of the earlier. Keys are now cut only to make room
for the SHA-256 of the whole normalised literal (`supersession.value_key`); the claims
recorded before keep their values, and get the key the code now gives them, so later
re-confirmations of them are recognised. Only keys 300 characters long can change.
RLS is forced even on the owner, so it is lifted for this step inside the migration's
transaction.
"""

from typing import Any

from django.db import migrations
from django.db.models.functions import Length

from curation.domain.supersession import OBJECT_KEY_MAX, value_key


def rekey_long_literals(apps: Any, schema_editor: Any) -> None:
    claim_model = apps.get_model("curation", "Claim")
    schema_editor.execute("ALTER TABLE curation_claim NO FORCE ROW LEVEL SECURITY")
    rows = (
        claim_model.objects.using(schema_editor.connection.alias)
        .annotate(key_length=Length("object_key"))
        .filter(object_literal__isnull=False, key_length__gte=OBJECT_KEY_MAX)
        .only("pk", "object_literal", "object_key")
        .order_by("pk")
    )
    changed = []
    for claim in rows.iterator(chunk_size=500):
        key = value_key(entity_id=None, literal=claim.object_literal)
        if key != claim.object_key:
            claim.object_key = key
            changed.append(claim)
    claim_model.objects.using(schema_editor.connection.alias).bulk_update(
        changed, ["object_key"], batch_size=500
    )
    schema_editor.execute("ALTER TABLE curation_claim FORCE ROW LEVEL SECURITY")


class Migration(migrations.Migration):
    dependencies = [("curation", "0005_lanes_reach_links")]

    operations = [migrations.RunPython(rekey_long_literals, migrations.RunPython.noop)]
