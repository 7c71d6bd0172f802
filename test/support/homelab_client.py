#!/usr/bin/env python3
"""An independent client of the homelab DNS webhook protocol, in Python's standard library only.

It signs requests its own way, from the protocol's description alone: HMAC over the method, the path
(unescaped), the RFC 3339 UTC timestamp, the nonce and, only when there is a body, the body, joined by
newlines; lowercase hex; headers X-DNS-Timestamp, X-DNS-Nonce, X-DNS-Signature. The tests use it to
check that Zonekeeper's provider interoperates with a client it shares no code with.

Usage: homelab_client.py URL SECRET_FILE METHOD PATH [BODY_JSON]
         [--algorithm SHA256|SHA512] [--nonce N] [--timestamp T] [--skew-seconds S] [--tamper]
Prints one JSON line: {"status": <HTTP status>, "body": <parsed JSON body>, "nonce": "..."}.
"""

import argparse
import datetime
import hashlib
import hmac
import http.client
import json
import sys
import urllib.parse
import uuid


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("secret_file")
    p.add_argument("method")
    p.add_argument("path")
    p.add_argument("body", nargs="?")
    p.add_argument("--algorithm", default="SHA256", choices=["SHA256", "SHA512"])
    p.add_argument("--nonce")
    p.add_argument("--timestamp")
    p.add_argument("--skew-seconds", type=int, default=0)
    p.add_argument("--tamper", action="store_true", help="flip one hex digit of the signature")
    args = p.parse_args()

    with open(args.secret_file, "rb") as f:
        secret = f.read().strip()
    nonce = args.nonce or str(uuid.uuid4())
    if args.timestamp:
        timestamp = args.timestamp
    else:
        at = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=args.skew_seconds)
        timestamp = at.strftime("%Y-%m-%dT%H:%M:%SZ")
    lines = [args.method, args.path, timestamp, nonce]
    body = args.body.encode("utf-8") if args.body is not None else None
    if body is not None:
        lines.append(args.body)
    digest = hashlib.sha256 if args.algorithm == "SHA256" else hashlib.sha512
    signature = hmac.new(secret, "\n".join(lines).encode("utf-8"), digest).hexdigest()
    if args.tamper:
        signature = ("0" if signature[0] != "0" else "1") + signature[1:]

    target = urllib.parse.urlsplit(args.url)
    conn = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
    headers = {
        "X-DNS-Timestamp": timestamp,
        "X-DNS-Nonce": nonce,
        "X-DNS-Signature": signature,
    }
    if body is not None:
        headers["Content-Type"] = "application/json"
    # The path is sent as signed: the protocol's paths (/records/MX/example.com/@) need no escaping.
    conn.request(args.method, args.path, body=body, headers=headers)
    response = conn.getresponse()
    text = response.read().decode("utf-8")
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = text
    print(json.dumps({"status": response.status, "body": parsed, "nonce": nonce}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
