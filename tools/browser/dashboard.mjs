// Drives Debian's Chromium through the merchant dashboard as the people of a shop use it, at
// 360 px: every page passes axe-core (no serious or critical violation), has no sideways
// scroll, logs no console error, and leaves a screenshot.
//
//   node dashboard.mjs '<plan as JSON>'
//
// Plan (made by crates/app/tests/api/browser.rs, which starts the service):
//   {"base", "merchant", "owner", "viewer", "support", "signup", "password", "toVoid", "receiver", "shots"}
// Prints one line per step; exits 1 with the reason on the first failure.

import { createHmac } from "node:crypto";

import { ARGS, accessible, chromium, expectText, fail, noSidewaysScroll, shot, step, text, useShots } from "./common.mjs";

const plan = JSON.parse(process.argv[2]);
useShots(plan.shots);
const errors = [];

/// Collects the console errors of `page`. A refused form answers its page again with the
/// refusal's status (400, 409 ...) on purpose, which Chromium reports for the document itself:
/// only those are not counted.
function listen(page) {
  page.on("console", (m) => {
    const refusedDocument = /status of 4\d\d/.test(m.text()) && m.location().url === page.url();
    if (m.type() === "error" && !refusedDocument) errors.push(`${m.text()} (${m.location().url})`);
  });
  page.on("pageerror", (e) => errors.push(e.message));
}

/// A page of the dashboard checked as every page is: readable at 360 px, accessible, quiet.
async function checked(page, name) {
  await page.waitForLoadState();
  await shot(page, `dashboard-${name}`);
  const wide = await page.evaluate(() =>
    [...document.querySelectorAll("body *")].filter((e) => !(e.parentElement && e.parentElement.closest(".table-wrap")) && e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
      .slice(0, 3).map((e) => `${e.tagName.toLowerCase()}.${e.className}: ${e.textContent.slice(0, 60)}`));
  if (wide.length) step(`${name}: wider than the screen: ${wide.join(" | ")}`);
  await noSidewaysScroll(page, name);
  await accessible(page, name);
  if (errors.length) fail(`console errors on ${name}: ${errors.join("; ")}`);
}

/// A list at a phone's width shows each row as a card: every cell of `labels` is on screen (not
/// cut or scrolled out of its box), and says which column it is.
async function cardsFit(page, table, labels) {
  const found = await page.evaluate(([table, labels]) => {
    const width = document.documentElement.clientWidth;
    const wrap = document.querySelector(table).closest(".table-wrap");
    const rows = [...document.querySelectorAll(`${table} tbody tr`)];
    const cut = [];
    for (const row of rows) {
      for (const label of labels) {
        const cell = row.querySelector(`td[data-label="${label}"]`);
        const box = cell && cell.getBoundingClientRect();
        if (!cell || box.width === 0 || box.left < 0 || box.right > width + 1) cut.push(`${label}: ${cell ? cell.textContent : "missing"}`);
        else if (getComputedStyle(cell, "::before").content !== `"${label}"`) cut.push(`${label} is not named`);
      }
    }
    return { rows: rows.length, scrolls: wrap.scrollWidth > wrap.clientWidth + 1, cut };
  }, [table, labels]);
  if (found.rows === 0) fail(`${table}: no rows to check`);
  if (found.scrolls) fail(`${table} scrolls sideways in its box at ${await page.evaluate(() => innerWidth)} px`);
  if (found.cut.length) fail(`${table} at a phone's width: ${found.cut.slice(0, 4).join(" | ")}`);
}

async function click(page, role, name) {
  try {
    await Promise.all([page.waitForNavigation({ timeout: 15000 }), page.getByRole(role, { name, exact: true }).first().click({ timeout: 15000 })]);
  } catch (e) {
    await shot(page, "dashboard-failure").catch(() => {});
    fail(`${role} "${name}" on ${page.url()}: ${e.message.split("\n")[0]}; the page says: ${(await page.locator("body").innerText()).slice(0, 600)}`);
  }
}

async function signIn(page, email) {
  await page.goto(`${plan.base}/dashboard`);
  if (!page.url().endsWith("/dashboard/login")) fail(`without a session, /dashboard went to ${page.url()}`);
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password", { exact: true }).fill(plan.password);
  await click(page, "button", "Sign in");
  await expectText(page, email);
}

async function draftInvoice(page) {
  await click(page, "link", "Invoices");
  await checked(page, "invoices");
  await click(page, "link", "New invoice");
  await page.getByLabel("Customer name").fill("Ada Lovelace");
  await page.getByLabel("Customer email").fill("ada@example.com");
  await page.getByLabel("Line 1 description").fill("Consulting");
  await page.getByLabel("Line 1 quantity").fill("2");
  await page.getByLabel("Line 1 unit amount").fill("50");
  await page.getByLabel("Line 2 description").fill("Espresso machine service");
  await page.getByLabel("Line 2 quantity").fill("1");
  await page.getByLabel("Line 2 unit amount").fill("35.5");
  await page.getByLabel("Discount", { exact: true }).selectOption("percentage");
  await page.getByLabel("Discount value").fill("10");
  await page.getByLabel("Tax 1 label").fill("VAT");
  await page.getByLabel("Tax 1 amount").fill("24.39");
  await click(page, "button", "Update totals");
  await expectText(page, "146.34", "#total");
  step("the totals the domain computed: 146.34");
  await checked(page, "invoice-new");
  await click(page, "button", "Save the draft");
  await expectText(page, "The draft is saved.");
  await checked(page, "invoice-draft");
  await click(page, "button", "Issue and send");
  await expectText(page, "queued to the customer's email");
  step("the draft was issued and sent");
}

async function payFromTheHostedPage(page) {
  await click(page, "button", "Open a checkout");
  await expectText(page, "A checkout for what is due is open");
  await checked(page, "invoice-open");
  const hosted = await page.getByRole("link", { name: "hosted page" }).first().getAttribute("href");
  await page.goto(hosted);
  await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: /^Pay in full/ }).click()]);
  await expectText(page, "Paid", ".state");
  step("the customer paid it on the hosted page (test mode)");
  await page.goto(`${plan.base}/dashboard/overview?merchant=${plan.merchant}&mode=test`);
  await expectText(page, "146.34");
  await checked(page, "overview");
  step("the overview counts what came in");
}

async function refundAndVoid(page, invoicePage) {
  await page.goto(invoicePage);
  await page.locator("#refund-amount").fill("10");
  await page.locator("#refund-reason").fill("Returned one service");
  await page.locator("#refund-externalTransactionHash").fill(`0x${"ab".repeat(32)}`);
  await click(page, "button", "Add a refund reference");
  await expectText(page, "The refund reference is recorded.");
  await checked(page, "invoice-refund");
  await page.goto(`${plan.base}/dashboard/invoices/${plan.toVoid}?merchant=${plan.merchant}&mode=test`);
  await click(page, "button", "Void");
  await expectText(page, "Reason");
  if ((await page.locator("#void-reason[aria-invalid=true]").count()) !== 1) fail("an empty reason is not marked invalid");
  await checked(page, "invoice-void-refused");
  await page.locator("#void-reason").fill("Ordered twice");
  await click(page, "button", "Void");
  await expectText(page, "The invoice's collection is closed.");
  step("a refund reference was added and another invoice voided (an empty reason refused first)");
}

/// RFC 6238's code of a base32 secret now (30-second steps, six digits).
function totp(secret) {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  let bits = "";
  for (const c of secret.replace(/=+$/, "")) bits += alphabet.indexOf(c).toString(2).padStart(5, "0");
  const key = Buffer.from(bits.match(/.{8}/g).map((b) => parseInt(b, 2)));
  const step = Buffer.alloc(8);
  step.writeBigUInt64BE(BigInt(Math.floor(Date.now() / 30000)));
  const mac = createHmac("sha1", key).update(step).digest();
  const offset = mac[19] & 0x0f;
  return String((mac.readUInt32BE(offset) & 0x7fffffff) % 1_000_000).padStart(6, "0");
}

/// Opens open sign-up, signs in, turns on two-factor login with a code of the key the page
/// shows, keeps a recovery code, signs out, and signs in again with the password and that code.
async function signUpAndEnrol(browser) {
  const context = await browser.newContext({ viewport: { width: 360, height: 800 } });
  const page = await context.newPage();
  listen(page);
  await page.goto(`${plan.base}/dashboard/signup`);
  await checked(page, "signup");
  await page.getByLabel("Your name").fill("Grace Hopper");
  await page.getByLabel("Your business").fill("Hopper Tea House");
  await page.getByLabel("Email").fill(plan.signup);
  await page.getByLabel("Password", { exact: true }).fill(plan.password);
  await click(page, "button", "Create the account");
  await expectText(page, "Check your email");
  await signIn(page, plan.signup);
  await click(page, "link", "Invoices");
  await click(page, "link", "Settings");
  await checked(page, "settings");
  await click(page, "link", "Security: two-factor login, password, sessions and the audit log");
  await click(page, "button", "Turn on two-factor login");
  await checked(page, "two-factor-enrol");
  const secret = (await page.locator("#totp-secret").innerText()).trim();
  await page.getByLabel("The code your app shows").fill(totp(secret));
  await click(page, "button", "Confirm");
  await expectText(page, "Two-factor login is on");
  const codes = await page.locator("ul.codes code").allInnerTexts();
  if (codes.length !== 10) fail(`expected ten recovery codes, saw ${codes.length}`);
  await checked(page, "two-factor-on");
  await click(page, "button", "Sign out");
  await page.getByLabel("Email").fill(plan.signup);
  await page.getByLabel("Password", { exact: true }).fill(plan.password);
  await click(page, "button", "Sign in");
  await expectText(page, "Two-factor code");
  // The password is never sent back in a page: typed again, with the recovery code.
  await page.getByLabel("Password", { exact: true }).fill(plan.password);
  await page.getByLabel("Two-factor code (only if you turned it on)").fill(codes[0]);
  await click(page, "button", "Sign in");
  await expectText(page, "Hopper Tea House");
  step("signed up, turned on two-factor login, and signed in again with a recovery code");
  await context.close();
}

async function paymentLink(page) {
  await click(page, "link", "Payment links");
  await click(page, "link", "New payment link");
  await page.getByLabel("Title").fill("Coffee subscription");
  await page.getByLabel("Fixed amount").fill("9.50");
  await click(page, "button", "Save the link");
  await expectText(page, "The link is created.");
  await checked(page, "payment-link");
  const linkPage = page.url();
  const publicUrl = await page.locator("a.hash").first().getAttribute("href");
  await page.goto(publicUrl);
  await page.getByLabel("Email").fill("ada@example.com");
  await Promise.all([page.waitForURL(/\/checkout\//), page.getByRole("button", { name: "Continue to payment" }).click()]);
  await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: /^Pay in full/ }).click()]);
  await expectText(page, "Paid", ".state");
  await page.goto(linkPage);
  if ((await page.locator("a[href*='/dashboard/invoices/inv_']").count()) !== 1) fail("the link's page does not list the invoice it created");
  step("a payment link was made, paid on its public page, and lists its invoice");
  await click(page, "link", "Payment links");
  await checked(page, "payment-links");
  await cardsFit(page, "table.links", ["Title", "State", "Public page"]);
  step("the link list at 360 px is a stack of cards, every title, state and public page on screen");
}

async function keysAndExport(page) {
  await click(page, "link", "Developers");
  await page.getByLabel(/^Restrict to/).fill("invoices:read");
  await click(page, "button", "Create the key");
  const key = (await page.locator("#new-key").innerText()).trim();
  if (!key.startsWith("sk_test_")) fail(`no new key shown: ${key}`);
  await checked(page, "developers-key");
  await click(page, "button", `Revoke ${key.slice(0, 12)}`);
  await expectText(page, "revoked");
  step("a restricted key was made (shown once) and revoked");
  await click(page, "link", "Exports");
  await click(page, "button", "Export");
  for (let i = 0; i < 100 && !(await page.locator("a[href*='/file']").count()); i++) {
    await page.waitForTimeout(200);
    await page.reload();
  }
  const file = await page.locator("a[href*='/file']").first().getAttribute("href");
  const csv = await page.request.get(`${plan.base}${file}`);
  if (csv.status() !== 200 || !(await csv.text()).includes("invoice")) fail(`the export's file answered ${csv.status()}`);
  await checked(page, "exports");
  step("an export was run and its file downloaded");
}

async function brokenWebhook(page) {
  await click(page, "link", "Webhooks");
  await page.getByLabel("Endpoint URL (https)").fill(plan.receiver);
  await click(page, "button", "Add the endpoint");
  await expectText(page, "whsec_", "#new-secret");
  await click(page, "button", `Send a test event to ${plan.receiver}`);
  for (let i = 0; i < 100 && !(await page.getByText("HTTP 503").count()); i++) {
    await page.waitForTimeout(200);
    await page.reload();
  }
  await expectText(page, "HTTP 503");
  await checked(page, "webhooks-failing");
  await click(page, "button", /^Replay /);
  for (let i = 0; i < 100 && !(await page.getByText("HTTP 200").count()); i++) {
    await page.waitForTimeout(200);
    await page.reload();
  }
  await expectText(page, "HTTP 200");
  step("a failing delivery (503) was replayed after the receiver was fixed, and delivered");
}

async function owner(browser) {
  const context = await browser.newContext({ viewport: { width: 360, height: 800 } });
  const page = await context.newPage();
  listen(page);
  await signIn(page, plan.owner);
  await checked(page, "home");
  await click(page, "link", "Invoices");
  await click(page, "link", "Overview");
  await checked(page, "overview-empty");
  await draftInvoice(page);
  const invoicePage = page.url();
  await payFromTheHostedPage(page);
  await refundAndVoid(page, invoicePage);
  await paymentLink(page);
  await keysAndExport(page);
  await brokenWebhook(page);
  for (const section of ["Checkouts", "Payments", "Payment links", "Webhooks", "Settings"]) {
    await click(page, "link", section);
    await checked(page, section.toLowerCase().replace(" ", "-"));
  }
  await page.goto(`${plan.base}/dashboard/payments?merchant=${plan.merchant}&mode=test`);
  await page.locator("table.payments a").first().click();
  await page.waitForLoadState();
  await expectText(page, "Next step");
  await checked(page, "payment-diagnosis");
  await page.goto(`${plan.base}/dashboard/settings/audit-log?merchant=${plan.merchant}&mode=test`);
  await checked(page, "audit-log");
  await page.goto(`${plan.base}/dashboard/overview?merchant=${plan.merchant}&mode=live`);
  await expectText(page, "live mode");
  if (await page.locator(".test-banner").count()) fail("live mode shows the test banner");
  if ((await text(page, "body")).includes("146.34")) fail("live mode shows test mode's money");
  await checked(page, "overview-live");
  step("live mode shows nothing of test mode");
  await click(page, "button", "Sign out");
  if (!page.url().endsWith("/dashboard/login")) fail(`signing out went to ${page.url()}`);
  await context.close();
}

async function support(browser) {
  const context = await browser.newContext({ viewport: { width: 360, height: 800 } });
  const page = await context.newPage();
  listen(page);
  await signIn(page, plan.support);
  await page.goto(`${plan.base}/dashboard/invoices?merchant=${plan.merchant}&mode=test`);
  if (await page.getByRole("link", { name: "Developers", exact: true }).count()) fail("support is offered the developers page");
  if (await page.getByRole("link", { name: "New invoice" }).count()) fail("support is offered a new invoice");
  await checked(page, "support-invoices");
  await cardsFit(page, "table.invoices", ["Number", "Total", "State", "Status"]);
  step("the invoice list at 360 px is a stack of cards, every total, state and status on screen");
  const open = page.locator("table.invoices a").last();
  await Promise.all([page.waitForNavigation(), open.click()]);
  for (const absent of ["Void", "Duplicate", "Issue"]) {
    if (await page.getByRole("button", { name: absent, exact: true }).count()) fail(`support is offered ${absent}`);
  }
  await checked(page, "support-invoice");
  step("support reads invoices and is offered no developer page, new invoice, void or duplicate");
  await context.close();
}

async function viewer(browser) {
  const context = await browser.newContext({ viewport: { width: 360, height: 800 } });
  const page = await context.newPage();
  listen(page);
  await signIn(page, plan.viewer);
  await page.goto(`${plan.base}/dashboard/invoices/${plan.toVoid}?merchant=${plan.merchant}&mode=test`);
  if (await page.locator("form[method=post] button", { hasText: /Void|Duplicate|Send/ }).count()) fail("a viewer is offered actions");
  await checked(page, "viewer-invoice");
  await page.goto(`${plan.base}/dashboard/invoices/new?merchant=${plan.merchant}&mode=test`);
  await expectText(page, "Not allowed");
  await checked(page, "viewer-refused");
  step("a viewer reads the invoice, is offered no action, and a new invoice is refused on a page that says why");
  await context.close();
}

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium", args: ARGS });
try {
  await signUpAndEnrol(browser);
  await owner(browser);
  await support(browser);
  await viewer(browser);
  console.log("ok");
} catch (e) {
  console.error(`FAILED: ${e.message}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
