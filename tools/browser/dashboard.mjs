// Drives Debian's Chromium through the merchant dashboard as the people of a shop use it, at
// 360 px: every page passes axe-core (no serious or critical violation), has no sideways
// scroll, logs no console error, and leaves a screenshot.
//
//   node dashboard.mjs '<plan as JSON>'
//
// Plan (made by crates/app/tests/api/browser.rs, which starts the service):
//   {"base", "merchant", "owner", "viewer", "password", "toVoid", "shots"}
// Prints one line per step; exits 1 with the reason on the first failure.

import { ARGS, accessible, chromium, expectText, fail, noSidewaysScroll, shot, step, useShots } from "./common.mjs";

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
  await noSidewaysScroll(page, name);
  await accessible(page, name);
  await shot(page, `dashboard-${name}`);
  if (errors.length) fail(`console errors on ${name}: ${errors.join("; ")}`);
}

async function click(page, role, name) {
  await Promise.all([page.waitForNavigation(), page.getByRole(role, { name, exact: true }).first().click()]);
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
  await expectText(page, "146.340000", "#total");
  step("the totals the domain computed: 146.340000");
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
  await expectText(page, "146.340000");
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
  for (const section of ["Payment links", "Webhooks"]) {
    await click(page, "link", section);
    await checked(page, section.toLowerCase().replace(" ", "-"));
  }
  await click(page, "button", "Sign out");
  if (!page.url().endsWith("/dashboard/login")) fail(`signing out went to ${page.url()}`);
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
  await owner(browser);
  await viewer(browser);
  console.log("ok");
} catch (e) {
  console.error(`FAILED: ${e.message}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
