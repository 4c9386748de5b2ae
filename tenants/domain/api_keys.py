"""API key format, hashing and verification (pure).

A key reads `vera_<prefix>_<secret>`: the prefix (8 base32 chars) is public and
finds the row; the secret (256 random bits, base64url) is stored only as SHA-256.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

KEY_PREFIX = "vera"
_PATTERN = re.compile(r"^vera_([a-z2-7]{8})_([A-Za-z0-9_-]{43})$")
# Compared against when no row matches the prefix, so a miss costs what a hit costs.
DUMMY_HASH = hashlib.sha256(b"vera-no-such-key").hexdigest()


@dataclass(frozen=True)
class NewKey:
    """A freshly generated key: the plaintext is shown once, only the hash is kept."""

    prefix: str
    secret_hash: str
    plaintext: str


def generate() -> NewKey:
    prefix = base64.b32encode(secrets.token_bytes(5)).decode().lower()
    secret = base64.urlsafe_b64encode(secrets.token_bytes(32)).decode().rstrip("=")
    return NewKey(
        prefix=prefix, secret_hash=hash_secret(secret), plaintext=f"{KEY_PREFIX}_{prefix}_{secret}"
    )


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def parse(token: str) -> tuple[str, str] | None:
    """(prefix, secret) of a well-formed key, else None."""
    match = _PATTERN.match(token)
    return (match.group(1), match.group(2)) if match else None


def secret_matches(secret: str, stored_hash: str) -> bool:
    """Constant-time comparison of the presented secret's hash with the stored one."""
    return hmac.compare_digest(hash_secret(secret), stored_hash)
