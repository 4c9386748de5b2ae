from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    # The passage before (or after) a cited span in its episode: a conversation's turn and
    # the one before it (retrieval/services/index.py `companion_texts`), a hit and its
    # neighbours (context packs). Without it each lookup reads every evidence row of the
    # episode, thousands for one long transcript. Built concurrently: evidence is as large
    # as the claims table.
    atomic = False

    dependencies = [
        ("curation", "0027_claim_object_idx"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="evidence",
            index=models.Index(fields=["episode", "start"], name="evidence_episode_start_idx"),
        ),
    ]
