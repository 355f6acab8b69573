#!/usr/bin/env bash
# Repeatable instruction counts of the read path: runs `stablepay serve --no-worker` under
# callgrind (one HTTP worker), creates one checkout, reads its invoice N times over one
# keep-alive connection, stops the server with SIGTERM and prints callgrind's total
# instructions. Per read: (total with N reads - total with 0 reads) / N.
#
# Usage: xtask/bench/callgrind/reads.sh BINARY N [OUT]
#   BINARY: a release build (target/release/stablepay); N: reads; OUT: callgrind file
#   (default target/callgrind.reads.out; read it with callgrind_annotate).
# Needs valgrind (apt-get install valgrind), python3, and PostgreSQL on 127.0.0.1:5432
# (DATABASE_URL's server; a database stablepay_callgrind_<pid> is made and dropped).
set -euo pipefail
B=$1; N=$2; OUT=${3:-target/callgrind.reads.out}
DB=stablepay_callgrind_$$
ADMIN=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}
U=${ADMIN%/*}/$DB
psql "$ADMIN" -qAt -c "create database $DB" >/dev/null
trap 'psql "$ADMIN" -qAt -c "drop database if exists $DB with (force)" >/dev/null' EXIT
DATABASE_URL=$U RUST_LOG=warn "$B" migrate >/dev/null
MID=$(DATABASE_URL=$U "$B" merchant create --name Callgrind --json | python3 -c 'import json,sys;print(json.load(sys.stdin)["id"])')
KEY=$(DATABASE_URL=$U "$B" key create --merchant "$MID" --mode test --type secret --json | python3 -c 'import json,sys;print(json.load(sys.stdin)["key"])')
PORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
DATABASE_URL=$U STABLEPAY_BIND=127.0.0.1:$PORT STABLEPAY_METRICS_BIND=off STABLEPAY_HTTP_WORKERS=1 \
  STABLEPAY_DB_POOL_SIZE=2 RUST_LOG=warn \
  valgrind --tool=callgrind --callgrind-out-file="$OUT" "$B" serve --no-worker >/dev/null 2>&1 &
SERVER=$!
for _ in $(seq 1 120); do curl -s -o /dev/null "http://127.0.0.1:$PORT/healthz" && break; sleep 0.5; done
python3 - "$PORT" "$KEY" "$N" <<'PY'
import http.client, json, sys
port, key, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
c = http.client.HTTPConnection("127.0.0.1", port)
auth = {"Authorization": "Bearer " + key}
c.request("POST", "/v1/checkout-sessions", body='{"amount":"10.50","externalReference":"bench"}',
          headers={**auth, "Content-Type": "application/json"})
r = c.getresponse()
invoice = json.loads(r.read())["data"]["invoiceId"]
for _ in range(n):
    c.request("GET", "/v1/invoices/" + invoice, headers=auth)
    r = c.getresponse()
    r.read()
    assert r.status == 200, r.status
PY
kill -TERM $SERVER
wait $SERVER || true
grep -E "^totals" "$OUT"
