"""A real OpenID provider on 127.0.0.1 for tests (plain module; fixtures live in the tests).

Authorization-code flow over HTTP: `/authorize` -> 302 back with a one-time code,
`/token` (client_secret_post or Basic) -> RS256 ID token + access token, `/userinfo`,
`/jwks`. Keys rotate by adding a new `kid`; `sign()`/`mint_access_token()` make any
token a test needs (expired, foreign issuer or audience, unknown or forged key).
"""

from __future__ import annotations

import base64
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm


@dataclass(frozen=True)
class SigningKey:
    """An RSA key pair and the `kid` it is published under."""

    kid: str
    private: rsa.RSAPrivateKey = field(repr=False)

    @classmethod
    def generate(cls, kid: str | None = None) -> SigningKey:
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        return cls(kid=kid or f"k-{secrets.token_hex(6)}", private=private)

    def public_jwk(self) -> dict[str, Any]:
        jwk: dict[str, Any] = json.loads(RSAAlgorithm.to_jwk(self.private.public_key()))
        return {**jwk, "kid": self.kid, "use": "sig", "alg": "RS256"}

    def public_pem(self) -> str:
        return (
            self.private.public_key()
            .public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            .decode()
        )


class OIDCProvider:
    """The provider; use as a context manager (or start()/stop())."""

    def __init__(
        self,
        *,
        client_id: str = "vera-web",
        client_secret: str | None = None,
        api_audience: str = "vera-api",
    ) -> None:
        self.client_id = client_id
        self.client_secret = client_secret or secrets.token_urlsafe(24)
        self.api_audience = api_audience
        # Who signs in next at /authorize (tests change it between sign-ins).
        self.user: dict[str, Any] = {
            "sub": "alice-0001",
            "email": "alice@example.org",
            "email_verified": True,
            "preferred_username": "alice",
        }
        # Extra or replaced ID token claims, e.g. {"aud": "someone-else"}.
        self.id_token_overrides: dict[str, Any] = {}
        self.keys: list[SigningKey] = [SigningKey.generate()]
        self.jwks_requests = 0
        self._codes: dict[str, dict[str, Any]] = {}
        self._access_tokens: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.provider = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        host, port = self._server.server_address[:2]
        self.url = f"http://{host}:{port}"
        self.issuer = self.url

    # --- lifecycle --------------------------------------------------------------
    def start(self) -> OIDCProvider:
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join(timeout=5)
        self._server.server_close()

    def __enter__(self) -> OIDCProvider:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    # --- endpoints ---------------------------------------------------------------
    @property
    def authorization_endpoint(self) -> str:
        return f"{self.url}/authorize"

    @property
    def token_endpoint(self) -> str:
        return f"{self.url}/token"

    @property
    def userinfo_endpoint(self) -> str:
        return f"{self.url}/userinfo"

    @property
    def jwks_endpoint(self) -> str:
        return f"{self.url}/jwks"

    # --- keys and tokens -----------------------------------------------------------
    @property
    def current_key(self) -> SigningKey:
        return self.keys[-1]

    def rotate_key(self, *, retire_old: bool = False) -> SigningKey:
        """Sign with a new key (new kid); old keys stay published unless retired."""
        new = SigningKey.generate()
        with self._lock:
            self.keys = [new] if retire_old else [*self.keys, new]
        return new

    def jwks(self) -> dict[str, Any]:
        with self._lock:
            return {"keys": [key.public_jwk() for key in self.keys]}

    def sign(
        self,
        claims: dict[str, Any],
        *,
        key: SigningKey | None = None,
        algorithm: str = "RS256",
        secret: str | None = None,
        headers: dict[str, Any] | None = None,
    ) -> str:
        """A JWT over `claims`: RS256 with `key` (default: current), or HS*/none with `secret`."""
        if algorithm.startswith("RS"):
            key = key or self.current_key
            return jwt.encode(
                claims,
                key.private,
                algorithm=algorithm,
                headers={"kid": key.kid, **(headers or {})},
            )
        return jwt.encode(claims, secret, algorithm=algorithm, headers=headers)

    def claims(
        self, *, audience: str | list[str], user: dict[str, Any] | None = None, lifetime: int = 300
    ) -> dict[str, Any]:
        """Standard claims for `user` (default: the current one), valid for `lifetime` s."""
        now = int(time.time())
        user = user or self.user
        return {
            "iss": self.issuer,
            "aud": audience,
            "iat": now,
            "exp": now + lifetime,
            "sub": user["sub"],
            "email": user["email"],
            "email_verified": user.get("email_verified", True),
            "preferred_username": user["preferred_username"],
            # Whatever else the user carries, as providers add theirs (e.g. `groups`).
            **{
                name: value for name, value in user.items()
                if name not in {"sub", "email", "email_verified", "preferred_username"}
            },
        }  # fmt: skip

    def access_token_claims(
        self, user: dict[str, Any] | None = None, **overrides: Any
    ) -> dict[str, Any]:
        """Claims of an API access token; overrides replace any claim, None drops it."""
        claims = {
            **self.claims(audience=[self.api_audience], user=user),
            "scope": "openid email profile",
        }
        claims.update(overrides)
        return {name: value for name, value in claims.items() if value is not None}

    def mint_access_token(
        self,
        *,
        key: SigningKey | None = None,
        user: dict[str, Any] | None = None,
        **overrides: Any,
    ) -> str:
        """An RS256 access token (also valid at /userinfo); `overrides` as for the claims."""
        claims = self.access_token_claims(user, **overrides)
        token = self.sign(claims, key=key)
        with self._lock:
            self._access_tokens[token] = claims
        return token

    # --- the authorization code flow ---------------------------------------------------
    def _authorize(self, query: dict[str, str]) -> tuple[int, dict[str, str], Any]:
        redirect_uri = query.get("redirect_uri", "")
        if query.get("client_id") != self.client_id or not redirect_uri.startswith("http"):
            return 400, {}, {"error": "invalid_request"}
        if query.get("response_type") != "code":
            return 400, {}, {"error": "unsupported_response_type"}
        code = secrets.token_urlsafe(16)
        with self._lock:
            self._codes[code] = {
                "nonce": query.get("nonce"),
                "state": query.get("state"),
                "redirect_uri": redirect_uri,
                "user": dict(self.user),
            }
        sep = "&" if "?" in redirect_uri else "?"
        location = f"{redirect_uri}{sep}{urlencode({'code': code, 'state': query.get('state')})}"
        return 302, {"Location": location}, None

    def _token(self, form: dict[str, str], basic: tuple[str, str] | None) -> tuple[int, Any]:
        client_id, client_secret = basic or (form.get("client_id"), form.get("client_secret"))
        if client_id != self.client_id or not secrets.compare_digest(
            str(client_secret or ""), self.client_secret
        ):
            return 401, {"error": "invalid_client"}
        with self._lock:
            grant = self._codes.pop(form.get("code", ""), None)  # one-time
        if (
            form.get("grant_type") != "authorization_code"
            or grant is None
            or grant["redirect_uri"] != form.get("redirect_uri")
        ):
            return 400, {"error": "invalid_grant"}
        user = grant["user"]
        id_claims = {
            **self.claims(audience=self.client_id, user=user),
            "nonce": grant["nonce"],
            **self.id_token_overrides,
        }
        return 200, {
            "access_token": self.mint_access_token(user=user),
            "token_type": "Bearer",
            "expires_in": 300,
            "id_token": self.sign(id_claims),
        }

    def _userinfo(self, authorization: str) -> tuple[int, Any]:
        scheme, _, token = authorization.partition(" ")
        with self._lock:
            claims = self._access_tokens.get(token) if scheme.lower() == "bearer" else None
        if claims is None or claims["exp"] < time.time():
            return 401, {"error": "invalid_token"}
        # The user's claims, without the token's own (audience, times, issuer).
        token_only = {"iss", "aud", "iat", "exp", "nbf", "jti", "scope", "azp", "client_id"}
        return 200, {name: value for name, value in claims.items() if name not in token_only}


class _Handler(BaseHTTPRequestHandler):
    server: ThreadingHTTPServer

    @property
    def provider(self) -> OIDCProvider:
        return self.server.provider  # type: ignore[attr-defined,no-any-return]

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if body is not None:
            self.send_header("Content-Type", "application/json")
            self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        if parts.path == "/authorize":
            query = {name: values[0] for name, values in parse_qs(parts.query).items()}
            status, headers, body = self.provider._authorize(query)
            self._send(status, body, headers)
        elif parts.path == "/userinfo":
            self._send(*self.provider._userinfo(self.headers.get("Authorization", "")))
        elif parts.path == "/jwks":
            self.provider.jwks_requests += 1
            self._send(200, self.provider.jwks())
        else:
            self._send(404, {"error": "not_found"})

    def do_POST(self) -> None:
        if urlsplit(self.path).path != "/token":
            self._send(404, {"error": "not_found"})
            return
        length = int(self.headers.get("Content-Length", "0"))
        form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
        self._send(*self.provider._token(form, _basic_auth(self.headers.get("Authorization"))))


def _basic_auth(header: str | None) -> tuple[str, str] | None:
    scheme, _, value = (header or "").partition(" ")
    if scheme.lower() != "basic":
        return None
    user, _, password = base64.b64decode(value).decode().partition(":")
    return user, password
