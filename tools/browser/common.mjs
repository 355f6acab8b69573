// What the browser scenarios share: Debian's Chromium through playwright-core, failing with a
// reason, one line per step, an axe-core pass (no serious or critical violation) and a full-page
// screenshot of each page.

import { readFileSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

const require = createRequire(import.meta.url);
export const { chromium } = require("playwright-core");
const AXE = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");

export const ARGS = [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync",
];

let shots = "target/screenshots";

/// Where screenshots go.
export function useShots(dir) {
  shots = dir;
  mkdirSync(shots, { recursive: true });
}

export function fail(message) {
  throw new Error(message);
}

export function step(text) {
  console.log(`· ${text}`);
}

/// axe-core in the page (evaluated over the DevTools protocol, so the page's CSP stays as it is):
/// no serious or critical violation.
export async function accessible(page, name) {
  await page.evaluate(AXE);
  const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ["violations"] }));
  const bad = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  if (bad.length) {
    fail(`${name}: accessibility violations: ${bad.map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`).join("; ")}`);
  }
  step(`${name}: axe-core found no serious or critical violation`);
}

export async function shot(page, name) {
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
  step(`screenshot ${name}.png`);
}

export async function text(page, selector) {
  return (await page.locator(selector).first().innerText()).trim();
}

export async function expectText(page, needle, where = "body") {
  const found = await text(page, where);
  if (!found.includes(needle)) fail(`expected "${needle}" in ${where} of ${page.url()}, found: ${found.slice(0, 800)}`);
}

/// Whether the page scrolls sideways.
export async function noSidewaysScroll(page, name) {
  const [scroll, client] = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
  if (scroll > client) fail(`${name} scrolls sideways (${scroll} > ${client})`);
}
