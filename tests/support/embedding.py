"""A deployment that offers e5 besides its default model, for the embedding-choice tests.

The test settings' default embedder is `hashing`; these tests offer the real multilingual
e5 too (`VERA_EMBEDDER__CHOICES`), in the test process and in the maintenance lane's
worker, and ingest a Vietnamese and an English corpus into two workspaces.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

from tests.support.workers import celery_worker

E5 = "multilingual-e5-small-q4"
VIETNAMESE = {
    "hanoi.md": "# Hà Nội\n\nHà Nội là thủ đô của Việt Nam, nằm bên bờ sông Hồng.\n",
    "pho.md": "# Phở\n\nPhở là món ăn truyền thống làm từ bánh phở và nước dùng bò.\n",
}
ENGLISH = {"billing.md": "# Billing\n\nThe billing-api service runs on the k8s-prod-1 cluster.\n"}


@contextlib.contextmanager
def maintenance_worker_offering_e5(
    database_url: str, log_path: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """The maintenance lane's real worker, offering e5 as the test process does (the
    model is loaded when first used, not at start)."""
    with celery_worker(
        database_url=database_url, log_path=log_path, queue="maintenance",
        extra_env={"VERA_EMBEDDER__CHOICES": "e5", "VERA_WORKER__WARM_EMBEDDER": "false"},
    ) as process:  # fmt: skip
        yield process
