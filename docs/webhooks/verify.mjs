// Verifies a stablepay webhook delivery in Node.js (18+), both ways it is signed, with the
// standard library only.
//
//   node verify.mjs SECRET HEADERS_JSON_FILE BODY_FILE
//
// SECRET is the endpoint's signing secret (whsec_...), HEADERS_JSON_FILE a JSON object of the
// request's headers (names in lower case), BODY_FILE the raw body exactly as received. Exits 0
// when both signatures verify, 1 otherwise.
import { createHmac, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";

const TOLERANCE_SECONDS = 300;

function same(a, b) {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

// The X-Stablepay-Signature scheme: t=<timestamp>,v1=<hex>[,v1=<hex>...].
export function verifyStablepay(secret, header, body, now) {
  const parts = header.split(",").map((p) => p.split("=", 2));
  const t = parts.filter(([k]) => k === "t").map(([, v]) => v);
  const candidates = parts.filter(([k]) => k === "v1").map(([, v]) => v);
  if (t.length !== 1 || candidates.length === 0) return false;
  if (Math.abs(now - Number(t[0])) > TOLERANCE_SECONDS) return false;
  const expected = createHmac("sha256", secret).update(`${t[0]}.`).update(body).digest("hex");
  return candidates.some((c) => same(expected, c));
}

// Standard Webhooks: HMAC-SHA256 keyed with the base64 part of the secret, over id.timestamp.body.
export function verifyStandard(secret, headers, body, now) {
  const id = headers["webhook-id"];
  const timestamp = headers["webhook-timestamp"];
  if (!id || !timestamp || Math.abs(now - Number(timestamp)) > TOLERANCE_SECONDS) return false;
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  const expected = createHmac("sha256", key).update(`${id}.${timestamp}.`).update(body).digest("base64");
  return (headers["webhook-signature"] || "")
    .split(" ")
    .filter((s) => s.startsWith("v1,"))
    .some((s) => same(expected, s.slice(3)));
}

const [secret, headersFile, bodyFile] = process.argv.slice(2);
const headers = JSON.parse(readFileSync(headersFile, "utf8"));
const body = readFileSync(bodyFile);
const now = Math.floor(Date.now() / 1000);
const result = {
  stablepay: verifyStablepay(secret, headers["x-stablepay-signature"], body, now),
  standardWebhooks: verifyStandard(secret, headers, body, now),
};
console.log(JSON.stringify(result));
process.exit(result.stablepay && result.standardWebhooks ? 0 : 1);
