"""Verifies a stablepay webhook delivery in Python, both ways it is signed.

    python verify.py SECRET HEADERS_JSON_FILE BODY_FILE

SECRET is the endpoint's signing secret (whsec_...), HEADERS_JSON_FILE a JSON object of the
request's headers (names in lower case), BODY_FILE the raw body exactly as received. Exits 0
when both signatures verify, 1 otherwise. Needs `pip install standardwebhooks`.
"""

import hashlib
import hmac
import json
import sys
import time

from standardwebhooks.webhooks import Webhook

TOLERANCE_SECONDS = 300


def verify_stablepay(secret: str, header: str, body: bytes, now: int) -> bool:
    """The X-Stablepay-Signature scheme: t=<timestamp>,v1=<hex>[,v1=<hex>...]."""
    parts = [p.split("=", 1) for p in header.split(",") if "=" in p]
    timestamps = [v for k, v in parts if k == "t"]
    candidates = [v for k, v in parts if k == "v1"]
    if len(timestamps) != 1 or not candidates:
        return False
    timestamp = timestamps[0]
    if abs(now - int(timestamp)) > TOLERANCE_SECONDS:
        return False
    expected = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return any(hmac.compare_digest(expected, c) for c in candidates)


def verify_standard(secret: str, headers: dict, body: bytes) -> bool:
    """Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature)."""
    try:
        Webhook(secret).verify(body, headers)
        return True
    except Exception:
        return False


def main() -> int:
    secret, headers_file, body_file = sys.argv[1:4]
    with open(headers_file) as f:
        headers = json.load(f)
    with open(body_file, "rb") as f:
        body = f.read()
    ok_spec = verify_stablepay(secret, headers["x-stablepay-signature"], body, int(time.time()))
    ok_standard = verify_standard(secret, headers, body)
    print(json.dumps({"stablepay": ok_spec, "standardWebhooks": ok_standard}))
    return 0 if ok_spec and ok_standard else 1


if __name__ == "__main__":
    sys.exit(main())
