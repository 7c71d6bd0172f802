#!/usr/bin/env python3
"""An independent provider of the homelab DNS webhook protocol, in Python's standard library only.

It checks what it is sent on its own (not with Zonekeeper's code): the HMAC signature over
METHOD\\nPATH\\nTIMESTAMP\\nNONCE[\\nBODY], the timestamp within +-5 minutes, nonces never seen within
that window, and the record values. Tests steer it through /_control/* (loopback only, unsigned):
fail every request (503, 500, or closing the connection), refuse a record (400), read and change what
it holds (drift), and read the log of requests it accepted.

Usage: homelab-provider.py --port 0 [--secret S] [--algorithm SHA256|SHA512] [--no-get]
Prints "listening <port>" once ready.
"""

import argparse
import datetime
import hashlib
import hmac
import ipaddress
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

WINDOW = 300
LABEL = r"[A-Za-z0-9_]([-A-Za-z0-9_]{0,61}[A-Za-z0-9_])?"
DOMAIN = re.compile(r"^(" + LABEL + r"\.)+" + LABEL + r"\.?$")
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


class State:
    def __init__(self, secret, algorithm, no_get):
        self.lock = threading.Lock()
        self.secret = secret
        self.algorithm = algorithm
        self.no_get = no_get
        self.records = {}
        self.nonces = {}
        self.fail = None  # None | "503" | "500" | "drop"
        self.reject = set()  # (type, domain, subdomain) refused with 400 INVALID_VALUE
        self.log = []
        self.auth_failures = 0


def key_of(t, domain, sub):
    return (t.upper(), domain.lower().rstrip("."), sub.lower())


def fqdn(domain, sub):
    return domain if sub == "@" else sub + "." + domain


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state = None

    def log_message(self, fmt, *args):
        pass

    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def error(self, status, code, message):
        self.reply(status, {"success": False, "error": {"code": code, "message": message}})

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n > 65536:
            return None
        return self.rfile.read(n).decode() if n > 0 else None

    def authenticate(self, body):
        st = self.state
        if st.secret is None:
            return True
        ts = self.headers.get("X-DNS-Timestamp")
        nonce = self.headers.get("X-DNS-Nonce")
        sig = self.headers.get("X-DNS-Signature")
        if not ts or not nonce or not sig:
            st.auth_failures += 1
            self.error(401, "AUTH_FAILED", "missing signature headers")
            return False
        if not RFC3339.match(ts):
            st.auth_failures += 1
            self.error(401, "TIMESTAMP_STALE", "timestamp is not RFC 3339")
            return False
        at = datetime.datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
        now = time.time()
        if abs(now - at) > WINDOW:
            st.auth_failures += 1
            self.error(401, "TIMESTAMP_STALE", "timestamp outside +-5 minutes")
            return False
        parts = [self.command, self.path, ts, nonce]
        if body is not None:
            parts.append(body)
        digest = hashlib.sha512 if st.algorithm == "SHA512" else hashlib.sha256
        expected = hmac.new(st.secret.encode(), "\n".join(parts).encode(), digest).hexdigest()
        if not hmac.compare_digest(expected, sig.lower()):
            st.auth_failures += 1
            self.error(401, "AUTH_FAILED", "signature does not match")
            return False
        with st.lock:
            for n, seen in list(st.nonces.items()):
                if now - seen > 2 * WINDOW:
                    del st.nonces[n]
            if nonce in st.nonces:
                st.auth_failures += 1
                self.error(401, "NONCE_REUSED", "nonce already used")
                return False
            st.nonces[nonce] = now
        return True

    def failing(self):
        mode = self.state.fail
        if mode == "drop":
            self.close_connection = True
            self.connection.shutdown(2)
            return True
        if mode == "503":
            self.error(503, "SERVER_ERROR", "provider unavailable (told to fail)")
            return True
        if mode == "500":
            self.error(500, "SERVER_ERROR", "provider broken (told to fail)")
            return True
        return False

    # -- control (tests) ----------------------------------------------------------------------
    def control(self, body):
        st = self.state
        path = self.path
        with st.lock:
            if path == "/_control/fail":
                st.fail = json.loads(body or "{}").get("mode")
                return self.reply(200, {"ok": True})
            if path == "/_control/reject":
                r = json.loads(body)
                if r.get("clear"):
                    st.reject.clear()
                else:
                    st.reject.add(key_of(r["type"], r["domain"], r["subdomain"]))
                return self.reply(200, {"ok": True})
            if path == "/_control/records":
                if self.command == "GET":
                    return self.reply(200, {"records": list(st.records.values())})
                r = json.loads(body)  # drift: set or delete behind the client's back
                k = key_of(r["type"], r["domain"], r["subdomain"])
                if r.get("delete"):
                    st.records.pop(k, None)
                else:
                    st.records[k] = r
                return self.reply(200, {"ok": True})
            if path == "/_control/log":
                return self.reply(200, {"log": st.log, "authFailures": st.auth_failures})
        self.error(404, "RECORD_NOT_FOUND", "no such control endpoint")

    # -- protocol -----------------------------------------------------------------------------
    def handle_any(self):
        body = self.read_body()
        if self.path.startswith("/_control/"):
            return self.control(body)
        if self.failing():
            return
        if not self.authenticate(body):
            return
        st = self.state
        parts = self.path.split("/")
        if self.command == "GET" and self.path == "/health":
            return self.reply(200, {"status": "healthy", "message": "python provider", "timestamp": ""})
        if self.command == "POST" and self.path == "/records":
            return self.upsert(body)
        if len(parts) == 5 and parts[1] == "records" and self.command in ("GET", "DELETE"):
            k = key_of(parts[2], parts[3], parts[4])
            with st.lock:
                st.log.append({"method": self.command, "path": self.path})
                if self.command == "GET":
                    if st.no_get:
                        self.send_response(404)
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    r = st.records.get(k)
                    if r is None:
                        return self.error(404, "RECORD_NOT_FOUND", "Record does not exist")
                    return self.reply(200, {"success": True, "record": r})
                if k not in st.records:
                    return self.error(404, "RECORD_NOT_FOUND", "Record does not exist")
                del st.records[k]
                return self.reply(200, {"success": True, "message": "Record deleted successfully"})
        self.error(404, "RECORD_NOT_FOUND", "no such endpoint")

    def upsert(self, body):
        st = self.state
        try:
            req = json.loads(body or "")
            rec = req["record"]
            t, domain, sub, values = rec["type"], rec["domain"], rec["subdomain"], rec["values"]
            assert req.get("operation") == "upsert"
            assert isinstance(values, list) and values
        except Exception:
            return self.error(400, "INVALID_RECORD", "body is not an upsert request")
        if not DOMAIN.match(domain):
            return self.error(400, "INVALID_DOMAIN", "invalid domain " + domain)
        try:
            for v in values:
                if t == "A":
                    ipaddress.IPv4Address(v)
                elif t == "AAAA":
                    ipaddress.IPv6Address(v)
                elif t in ("CNAME", "MX", "NS", "SRV") and not DOMAIN.match(v):
                    raise ValueError(v)
            if t == "CNAME" and len(values) != 1:
                raise ValueError("CNAME has one value")
        except Exception as e:
            return self.error(400, "INVALID_VALUE", "invalid value: " + str(e))
        k = key_of(t, domain, sub)
        with st.lock:
            if k in st.reject:
                return self.error(400, "INVALID_VALUE", "refused (told to refuse)")
            stored = {"type": t, "domain": domain, "subdomain": sub, "fqdn": fqdn(domain, sub), "values": values}
            if "ttl" in rec:
                stored["ttl"] = rec["ttl"]
            if "metadata" in rec:
                stored["metadata"] = rec["metadata"]
            st.records[k] = stored
            st.log.append({"method": "POST", "path": "/records", "record": stored})
        self.reply(200, {"success": True, "record": stored, "message": "Record created successfully"})

    do_GET = handle_any
    do_POST = handle_any
    do_DELETE = handle_any


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--secret")
    ap.add_argument("--algorithm", default="SHA256")
    ap.add_argument("--no-get", action="store_true")
    args = ap.parse_args()
    Handler.state = State(args.secret, args.algorithm, args.no_get)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print("listening", server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
