"""Invitations to a scope: the link's token and when it may be accepted (pure).

The link carries 256 random bits (base64url); only their SHA-256 is stored, so the
database never holds a usable link. An invitation is accepted once, before it expires,
unless revoked, by a person signed in with the address it was sent to.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import secrets

LIFETIME = dt.timedelta(days=7)
MAX_LIFETIME = dt.timedelta(days=30)
_TOKEN = re.compile(r"^[A-Za-z0-9_-]{43}$")


def new_token() -> tuple[str, str]:
    """(token for the link, its hash for the row)."""
    token = secrets.token_urlsafe(32)
    return token, token_hash(token)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def well_formed(token: str) -> bool:
    return bool(_TOKEN.match(token))


def normal_email(email: object) -> str:
    """An address as invitations compare them (trimmed, lower-case); ValueError if it is not one."""
    if not isinstance(email, str):
        raise ValueError("an invitation needs an email address")
    cleaned = email.strip().lower()
    local, at, domain = cleaned.partition("@")
    if (
        not (local and at and "." in domain)
        or len(cleaned) > 254
        or any(c.isspace() for c in cleaned)
    ):
        raise ValueError("that is not an email address")
    return cleaned


def acceptance_refusal(
    *,
    now: dt.datetime,
    expires_at: dt.datetime,
    accepted_at: dt.datetime | None,
    revoked_at: dt.datetime | None,
    invited: str,
    accepting: str | None,
) -> str | None:
    """Why the invitation cannot be accepted now by a person with address `accepting`
    (None: not known yet, as before sign-up), or None."""
    if revoked_at is not None:
        return "this invitation was withdrawn"
    if accepted_at is not None:
        return "this invitation has been used already"
    if now >= expires_at:
        return "this invitation has expired: ask for a new one"
    if accepting is not None and accepting.strip().lower() != invited:
        return f"this invitation is for {invited}: sign in (or sign up) with that address"
    return None
