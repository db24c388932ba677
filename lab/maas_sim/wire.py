"""What arrives on the wire: OAuth 1.0 Authorization headers and request bodies.

OAuth: MAAS API keys are ``consumer_key:token_key:token_secret`` with an empty
consumer secret. python-libmaas signs PLAINTEXT (signature ``&<token_secret>``,
percent-encoded, with ``realm="OAuth"``); the maas.maas collection signs
PLAINTEXT without a realm; maas-client-go signs HMAC-SHA1 (and does not sign
PUT parameters, so the body is tried both in and out of the base string).

Bodies: python-libmaas sends multipart/form-data whose every part is
``Content-Transfer-Encoding: base64``; a POST without arguments is one part
without headers, which Django ignores and so do we.
"""

from __future__ import annotations

import email.parser
import email.policy
import email.utils
import re
import time
from urllib.parse import parse_qsl, unquote

from oauthlib.oauth1.rfc5849 import signature as oauth_sig

from lab.maas_sim.forms import Form, Unauthorized

_PARAM_RE = re.compile(r'(\w+)\s*=\s*"([^"]*)"')


def parse_oauth_header(header: str) -> dict | None:
    if not header or not header.strip().lower().startswith("oauth "):
        return None
    return {k: unquote(v) for k, v in _PARAM_RE.findall(header)}


def authenticate(store, headers, method: str, url: str, content_type: str, body: bytes) -> dict | None:
    """The user an OAuth-signed request acts for; None without a header; 401 if it does not check out."""
    params = parse_oauth_header(headers.get("Authorization", ""))
    if params is None:
        return None
    consumer, token = params.get("oauth_consumer_key", ""), params.get("oauth_token", "")
    if not any(t["consumer_key"] == consumer for t in store.tokens.values()):
        raise Unauthorized("Authorization Error: Invalid API key.")
    entry = store.tokens.get(token)
    if entry is None or entry["consumer_key"] != consumer:
        raise Unauthorized(f"Authorization Error: 'Invalid access token: {token}'")
    _check_timestamp_and_nonce(store, consumer, token, params)
    method_name = params.get("oauth_signature_method", "").upper()
    sig = params.get("oauth_signature", "")
    secret = entry["token_secret"]
    if method_name == "PLAINTEXT":
        ok = sig in (f"&{secret}", unquote(f"&{secret}")) or unquote(sig) == f"&{secret}"
    elif method_name == "HMAC-SHA1":
        ok = _check_hmac(headers, method, url, content_type, body, sig, secret)
    else:
        raise Unauthorized(f"Authorization Error: 'Signature method {method_name} not supported.'")
    if not ok:
        raise Unauthorized("Authorization Error: 'Invalid signature.'")
    user = store.users.get(entry["username"])
    if user is None:
        raise Unauthorized("Authorization Error: 'Invalid access token: user is gone'")
    return user


TIMESTAMP_THRESHOLD = 300  # python-oauth OAuthServer.timestamp_threshold, as piston3 uses it


def _check_timestamp_and_nonce(store, consumer: str, token: str, params: dict) -> None:
    """OAuthServer._check_signature's first two steps: a fresh timestamp, a nonce never seen before."""
    for name in ("oauth_timestamp", "oauth_nonce"):
        if name not in params:
            raise Unauthorized(f"Authorization Error: 'Parameter not found: {name}'")
    try:
        timestamp = int(params["oauth_timestamp"])
    except ValueError:
        raise Unauthorized("Authorization Error: 'Invalid timestamp'") from None
    now = int(time.time())
    if abs(now - timestamp) > TIMESTAMP_THRESHOLD:
        raise Unauthorized(
            f"Authorization Error: 'Expired timestamp: given {timestamp} and now {now} has a greater "
            f"difference than threshold {TIMESTAMP_THRESHOLD}'"
        )
    # piston3's store keeps every (consumer, token, nonce); a nonce older than twice the threshold can no
    # longer come with an acceptable timestamp, so it is forgotten
    if now - store.nonces.get("_purged", 0) > TIMESTAMP_THRESHOLD:
        for key, seen in list(store.nonces.items()):
            if now - seen > 2 * TIMESTAMP_THRESHOLD:
                del store.nonces[key]
        store.nonces["_purged"] = now
    key = (consumer, token, params["oauth_nonce"])
    if key in store.nonces:
        raise Unauthorized(f"Authorization Error: 'Nonce already used: {params['oauth_nonce']}'")
    store.nonces[key] = now


def _check_hmac(headers, method, url, content_type, body, sig, secret) -> bool:
    query = url.split("?", 1)[1] if "?" in url else ""
    base_uri = oauth_sig.base_string_uri(url.split("?", 1)[0])
    bodies = [None]
    if content_type.startswith("application/x-www-form-urlencoded") and body:
        bodies.insert(0, body.decode("utf-8", "replace"))
    for candidate in bodies:
        params = oauth_sig.collect_parameters(uri_query=query, body=candidate, headers={"Authorization": headers.get(
            "Authorization")})  # fmt: skip
        base = oauth_sig.signature_base_string(method.upper(), base_uri, oauth_sig.normalize_parameters(params))
        if oauth_sig.safe_string_equals(oauth_sig.sign_hmac_sha1(base, "", secret), sig):
            return True
    return False


def parse_body(content_type: str, body: bytes) -> Form:
    """Form fields of a POST/PUT body: multipart (base64 parts decoded) or urlencoded."""
    form = Form()
    if not body:
        return form
    ctype = content_type.split(";", 1)[0].strip().lower()
    if ctype == "multipart/form-data":
        header = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode()
        msg = email.parser.BytesParser(policy=email.policy.compat32).parsebytes(header + body)
        if not msg.is_multipart():
            return form
        for part in msg.get_payload():
            name = part.get_param("name", header="content-disposition")
            if not name:
                continue  # a part without a name (python-libmaas's empty POST) is no field
            if isinstance(name, tuple):
                name = email.utils.collapse_rfc2231_value(name)
            payload = part.get_payload(decode=True) or b""
            form.add(name, payload.decode("utf-8", "surrogateescape"))
    elif ctype in ("application/x-www-form-urlencoded", ""):
        for key, value in parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True):
            form.add(key, value)
    return form


def parse_query(query: str) -> Form:
    return Form(parse_qsl(query, keep_blank_values=True))
