"""The ObjectStore port's contract, run against the local folder and a real S3 API (moto's
server over HTTP), both built by the composition root exactly as VERA builds them."""

from __future__ import annotations

import hashlib
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from curation.domain.errors import ObjectStoreError, ObjectStoreUnavailable
from curation.ports import ObjectStore
from tests.support.s3_server import S3Server
from vera import wiring

TEXT = "text/plain; charset=utf-8"


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, settings: Any, tmp_path: Path) -> ObjectStore:
    if request.param == "s3":
        request.getfixturevalue("s3_bucket")
    else:
        settings.VERA_OBJECT_STORE__BACKEND = "local"
        settings.VERA_OBJECT_STORE__ROOT = str(tmp_path / "objects")
    built = wiring.object_store()
    assert built.backend == request.param
    return built


def _key(name: str) -> str:
    """Keys shaped as ingest writes them: group / source / content hash."""
    return f"w:acme/17/{hashlib.sha256(name.encode()).hexdigest()}"


def test_get_returns_the_bytes_put_when_the_key_was_stored(store: ObjectStore) -> None:
    store.put(_key("a"), b"owner: team-payments\n", content_type=TEXT)
    assert store.get(_key("a")) == b"owner: team-payments\n"


def test_get_raises_key_error_when_the_key_was_never_stored(store: ObjectStore) -> None:
    with pytest.raises(KeyError):
        store.get(_key("never"))


def test_get_raises_key_error_when_the_key_was_deleted(store: ObjectStore) -> None:
    store.put(_key("gone"), b"erase me", content_type=TEXT)
    store.delete(_key("gone"))
    with pytest.raises(KeyError):
        store.get(_key("gone"))


def test_delete_is_quiet_when_the_key_is_absent(store: ObjectStore) -> None:
    store.delete(_key("absent"))  # an erasure cleanup that runs twice
    with pytest.raises(KeyError):
        store.get(_key("absent"))


def test_put_is_idempotent_when_the_same_bytes_come_again(store: ObjectStore) -> None:
    store.put(_key("twice"), b"same bytes", content_type=TEXT)
    store.put(_key("twice"), b"same bytes", content_type=TEXT)
    assert store.get(_key("twice")) == b"same bytes"


def test_delete_removes_only_its_key_when_siblings_share_the_prefix(store: ObjectStore) -> None:
    store.put("w:acme/17/one", b"1", content_type=TEXT)
    store.put("w:acme/17/two", b"2", content_type=TEXT)
    store.put("w:acme/18/one", b"3", content_type=TEXT)
    store.delete("w:acme/17/one")
    assert (store.get("w:acme/17/two"), store.get("w:acme/18/one")) == (b"2", b"3")
    with pytest.raises(KeyError):
        store.get("w:acme/17/one")


def test_bytes_round_trip_exactly_when_they_are_binary_and_large(store: ObjectStore) -> None:
    data = os.urandom(6 * 1024 * 1024 + 7) + bytes(range(256)) + b"\x00\r\n"
    store.put(_key("large"), data, content_type="application/octet-stream")
    assert hashlib.sha256(store.get(_key("large"))).digest() == hashlib.sha256(data).digest()


def test_an_empty_artifact_round_trips_when_stored(store: ObjectStore) -> None:
    store.put(_key("empty"), b"", content_type=TEXT)
    assert store.get(_key("empty")) == b""


def test_ping_answers_when_the_store_is_up(store: ObjectStore) -> None:
    store.ping()


def test_the_local_store_refuses_a_key_that_escapes_its_root(settings: Any, tmp_path: Path) -> None:
    settings.VERA_OBJECT_STORE__BACKEND = "local"
    settings.VERA_OBJECT_STORE__ROOT = str(tmp_path / "objects")
    local = wiring.object_store()
    with pytest.raises(ValueError, match="escapes the store"):
        local.put("../outside", b"x", content_type=TEXT)
    assert not (tmp_path / "outside").exists()


def test_the_local_store_is_unavailable_when_its_root_is_not_a_folder(
    settings: Any, tmp_path: Path
) -> None:
    (tmp_path / "objects").write_text("a file where the folder should be")
    settings.VERA_OBJECT_STORE__BACKEND = "local"
    settings.VERA_OBJECT_STORE__ROOT = str(tmp_path / "objects")
    with pytest.raises(ObjectStoreUnavailable) as raised:
        wiring.object_store().ping()
    assert raised.value.reason == "EEXIST"


# --- S3: what lands in the bucket, and failures as the domain's errors -----------------


def test_the_bytes_land_in_the_bucket_under_their_key_with_their_type(
    s3_bucket: str, s3_server: S3Server
) -> None:
    wiring.object_store().put(_key("a"), b"owner: team-payments\n", content_type=TEXT)
    stored = s3_server.client().get_object(Bucket=s3_bucket, Key=_key("a"))
    assert (stored["Body"].read(), stored["ContentType"]) == (b"owner: team-payments\n", TEXT)


def test_a_missing_bucket_is_unavailable_naming_no_such_bucket(
    s3_bucket: str, s3_server: S3Server
) -> None:
    # What the first ingest on compose met before compose created the bucket.
    s3_server.client().delete_bucket(Bucket=s3_bucket)
    store = wiring.object_store()
    with pytest.raises(ObjectStoreUnavailable, match="NoSuchBucket") as raised:
        store.put(_key("a"), b"x", content_type=TEXT)
    assert raised.value.reason == "NoSuchBucket"
    assert f"s3://{s3_bucket}" in str(raised.value)


def test_a_stopped_server_is_unavailable_naming_the_connection_error(
    s3_outage: S3Server,
) -> None:
    store = wiring.object_store()
    store.put(_key("a"), b"x", content_type=TEXT)
    s3_outage.stop()
    with pytest.raises(ObjectStoreUnavailable) as raised:
        store.get(_key("a"))
    assert raised.value.reason == "EndpointConnectionError"


def test_the_breaker_opens_after_repeated_failures_and_sheds_calls_when_the_server_returns(
    s3_outage: S3Server,
) -> None:
    store = wiring.object_store()
    s3_outage.stop()
    for _ in range(5):  # the breaker's threshold (vera.wiring)
        with pytest.raises(ObjectStoreUnavailable, match="EndpointConnectionError"):
            store.ping()
    s3_outage.start()  # back, but the open circuit is not tried before its trial
    with pytest.raises(ObjectStoreUnavailable, match="circuit 'object-store' is open") as raised:
        store.ping()
    assert raised.value.reason == "CircuitOpen"


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A loopback port that takes connections (the kernel's backlog) and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"


def test_a_store_that_never_answers_times_out_after_the_read_timeout(
    s3_bucket: str, silent_server: str, settings: Any
) -> None:
    settings.VERA_OBJECT_STORE__ENDPOINT_URL = silent_server
    settings.VERA_OBJECT_STORE__READ_TIMEOUT_S = 1
    settings.VERA_OBJECT_STORE__RETRIES = 1  # two attempts of a second each
    started = time.monotonic()
    with pytest.raises(ObjectStoreUnavailable) as raised:
        wiring.object_store().get(_key("a"))
    assert raised.value.reason == "ReadTimeoutError"
    assert 2.0 <= time.monotonic() - started < 10.0


def test_a_refused_request_does_not_count_against_the_breaker(s3_bucket: str) -> None:
    store = wiring.object_store()
    for _ in range(6):  # past the breaker's threshold: each is the request's own fault
        with pytest.raises(ObjectStoreError) as raised:
            store.put("", b"x", content_type=TEXT)  # S3 has no empty key
        assert not isinstance(raised.value, ObjectStoreUnavailable)
    store.put(_key("after"), b"still served", content_type=TEXT)
    assert store.get(_key("after")) == b"still served"
