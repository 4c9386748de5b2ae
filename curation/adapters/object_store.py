"""Object stores for raw artifact bytes: a local folder (default) or S3 / MinIO.

Both raise the domain's ObjectStoreError (ObjectStoreUnavailable when the store cannot
serve anyone now) instead of OSError or botocore's exceptions, so callers handle one
failure whatever the backend; S3 sits behind a circuit breaker (ResilientObjectStore).
"""

from __future__ import annotations

import errno
import functools
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from botocore.exceptions import BotoCoreError, ClientError, ParamValidationError

from common.guarded import Guarded
from curation.domain.errors import ObjectStoreError, ObjectStoreUnavailable
from curation.ports import ObjectStore
from kernel.resilience import CircuitOpen

# Errors of the whole folder (full, read-only, not ours), not of one key.
_FOLDER_DOWN = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM,
                          errno.EIO})  # fmt: skip


def _folder_error(call: str, error: OSError, *, down: bool = False) -> ObjectStoreError:
    """An OSError as the domain's error, named by errno: no path (it holds the key, and
    the message reaches a source's last error)."""
    reason = errno.errorcode.get(error.errno or 0, type(error).__name__)
    message = f"object store (local folder): {call} failed: {reason}"
    if down or error.errno in _FOLDER_DOWN:
        return ObjectStoreUnavailable(message, reason=reason)
    return ObjectStoreError(message, reason=reason)


class LocalFolderObjectStore:
    """Keys are relative paths under a root folder; writes are atomic (rename)."""

    backend = "local"

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        path = (self.root / key).resolve()
        if not path.is_relative_to(self.root.resolve()):
            raise ValueError(f"object key {key!r} escapes the store")
        return path

    def put(self, key: str, data: bytes, *, content_type: str) -> None:
        path = self._path(key)
        try:
            if path.exists() and path.stat().st_size == len(data):
                return  # content-addressed keys: same key, same bytes
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, path)
        except OSError as error:
            raise _folder_error("put", error) from error

    def get(self, key: str) -> bytes:
        path = self._path(key)
        try:
            return path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):  # absent (or below a file)
            raise KeyError(key) from None
        except OSError as error:
            raise _folder_error("get", error) from error

    def delete(self, key: str) -> None:
        try:
            self._path(key).unlink()
        except (FileNotFoundError, NotADirectoryError):
            return
        except OSError as error:
            raise _folder_error("delete", error) from error

    def ping(self) -> None:
        """The root is a folder this process may write into (made on first use)."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            if not os.access(self.root, os.W_OK | os.X_OK):
                raise PermissionError(errno.EACCES, "not writable")
        except OSError as error:
            raise _folder_error("ping", error, down=True) from error


# S3 error codes that fail every request alike, not one key's: the bucket, the
# credentials or the service. Any 5xx is one too; other 4xx are this request's own.
_S3_DOWN_CODES = frozenset({
    "NoSuchBucket", "AccessDenied", "AllAccessDisabled", "InvalidAccessKeyId",
    "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken", "SlowDown", "RequestTimeout",
    "ServiceUnavailable", "InternalError", "Throttling", "ThrottlingException",
})  # fmt: skip
_HEAD_BUCKET_CODES = {"404": "NoSuchBucket", "403": "AccessDenied"}


class S3ObjectStore:
    """An S3-compatible bucket (AWS S3, MinIO) through boto3.

    Timeouts and bounded retries are the client's (botocore's Config, built by the
    composition root); this translates what is left into the domain's errors.
    """

    backend = "s3"
    transient_errors: tuple[type[BaseException], ...] = (ObjectStoreUnavailable,)

    def __init__(self, *, bucket: str, client: Any) -> None:
        self.bucket = bucket
        self.client = client
        # What Guarded labels its span and the provider metrics with.
        self.model = f"s3://{bucket}"

    def _call[T](self, call: str, request: Callable[[], T]) -> T:
        try:
            return request()
        except ClientError as error:
            raise self._refused(call, error) from error
        except ParamValidationError as error:  # a bad key: this request's, not the store's
            raise ObjectStoreError(self._message(call, "ParamValidationError"),
                                   reason="ParamValidationError") from error  # fmt: skip
        except BotoCoreError as error:  # unreachable, timed out, no credentials
            reason = type(error).__name__
            raise ObjectStoreUnavailable(self._message(call, reason), reason=reason) from error

    def _message(self, call: str, reason: str) -> str:
        return f"object store {self.model}: {call} failed: {reason}"

    def _refused(self, call: str, error: ClientError) -> ObjectStoreError:
        code = str(error.response.get("Error", {}).get("Code") or "ClientError")
        status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
        message = self._message(call, f"{code} (HTTP {status})" if status else code)
        if code in _S3_DOWN_CODES or status >= 500:
            return ObjectStoreUnavailable(message, reason=code)
        return ObjectStoreError(message, reason=code)

    def put(self, key: str, data: bytes, *, content_type: str) -> None:
        self._call("put", functools.partial(
            self.client.put_object, Bucket=self.bucket, Key=key, Body=data,
            ContentType=content_type,
        ))  # fmt: skip

    def get(self, key: str) -> bytes:
        def read() -> bytes:
            try:
                response = self.client.get_object(Bucket=self.bucket, Key=key)
            except ClientError as error:
                if error.response.get("Error", {}).get("Code") in {"NoSuchKey", "404"}:
                    raise KeyError(key) from None
                raise
            return bytes(response["Body"].read())  # a timeout here is the store's too

        return self._call("get", read)

    def delete(self, key: str) -> None:
        self._call("delete", functools.partial(
            self.client.delete_object, Bucket=self.bucket, Key=key
        ))  # fmt: skip

    def ping(self) -> None:
        """The bucket exists and these credentials reach it (HEAD bucket)."""

        def head() -> None:
            try:
                self.client.head_bucket(Bucket=self.bucket)
            except ClientError as error:
                # A HEAD answer has no body, so no code: its status is the code here.
                error_info = error.response.setdefault("Error", {})
                status = str(error_info.get("Code"))
                error_info["Code"] = _HEAD_BUCKET_CODES.get(status, status)
                raise

        self._call("ping", head)


class _ModelObjectStore(ObjectStore, Protocol):
    @property
    def model(self) -> str: ...


class ResilientObjectStore(Guarded[_ModelObjectStore]):
    """ObjectStore port around a remote store behind a circuit breaker.

    Only ObjectStoreUnavailable counts against the store: after the breaker's threshold
    of them in a row, calls fail at once (ObjectStoreUnavailable naming the open circuit)
    until its trial, instead of each waiting out the timeouts. A missing key (KeyError)
    or a refused request is an answer and closes the circuit.
    """

    @property
    def backend(self) -> str:
        return self.inner.backend

    def _call[T](self, request: Callable[[], T]) -> T:
        try:
            return self._guarded(request)
        except CircuitOpen as error:
            message = f"object store {self.model}: {error}"
            raise ObjectStoreUnavailable(message, reason="CircuitOpen") from None

    def put(self, key: str, data: bytes, *, content_type: str) -> None:
        self._call(functools.partial(self.inner.put, key, data, content_type=content_type))

    def get(self, key: str) -> bytes:
        return self._call(functools.partial(self.inner.get, key))

    def delete(self, key: str) -> None:
        self._call(functools.partial(self.inner.delete, key))

    def ping(self) -> None:
        self._call(self.inner.ping)
