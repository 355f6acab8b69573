// Drives Debian's Chromium through stablepay's hosted pages as a customer would, with an
// axe-core pass on every page and a 360 px screenshot of each under the given folder.
//
//   node pages.mjs '<plan as JSON>'
//
// Plans (made by crates/app/tests/api/browser.rs, which starts the service, and anvil for live):
//   {"scenario": "test-pages", "checkoutUrl", "invoiceUrl", "linkUrl", "logo", "shots"}
//   {"scenario": "live-wallet", "checkoutUrl", "anvilUrl", "payer", "wallet", "typedData", "shots"}
//     typedData: "signed" (the wallet signs the authorization and sends its call), "relayed"
//     (it signs; the service's relayer sends the call), "unsupported" (the plain transfer)
// Prints one line per step; exits 1 with the reason on the first failure.

import { ARGS, accessible, chromium, expectText, fail, noSidewaysScroll, shot, step, text, useShots } from "./common.mjs";

const plan = JSON.parse(process.argv[2]);
useShots(plan.shots);

/// Every request the page makes must go to the service itself: collects the others (checked
/// at the end of a scenario by `noneOutside`).
const outside = [];
/// Every asset the pages load (script, style, icon) must answer: a failed one is
/// an error in the customer's console (the icon's 404 was one).
const failedLoads = [];
function sameOriginOnly(page, base) {
  const origin = new URL(base).origin;
  page.on("request", (r) => {
    const url = r.url();
    if (!url.startsWith(origin) && !url.startsWith("data:")) outside.push(url);
  });
  // (Fetches are the page's own calls, whose refusals it shows: only assets count here.)
  page.on("response", (r) => {
    const asset = ["script", "stylesheet", "image", "font"].includes(r.request().resourceType()) || r.url().endsWith("/favicon.ico");
    if (r.status() >= 400 && asset) failedLoads.push(`${r.status()} ${r.url()}`);
  });
  // (A refused form answers its page with 400 on purpose: documents are not counted.)
  page.on("console", (m) => {
    if (m.type() === "error" && /favicon/.test(m.text())) failedLoads.push(m.text());
  });
}

function noneOutside() {
  if (outside.length) fail(`third-party requests: ${outside.join(", ")}`);
  step("no request left the service's origin");
  if (failedLoads.length) fail(`loads that failed: ${failedLoads.join(", ")}`);
  step("every script, style and icon of the pages answered");
}

async function testPages(browser) {
  const context = await browser.newContext({ viewport: { width: 360, height: 800 } });
  const page = await context.newPage();
  sameOriginOnly(page, plan.checkoutUrl);

  // Checkout (test mode): banner, amount, simulate half, then the rest.
  await page.goto(plan.checkoutUrl);
  await expectText(page, "Test mode", ".test-banner");
  await expectText(page, "84.00", "#amount-due");
  if (await page.locator(".qr, #pay-address").count()) fail("a test checkout shows a settlement address or QR code");
  await expectText(page, "What you are paying for", ".summary");
  // At 360 px the invoice number stays on one line.
  const numberLines = await page.locator("h1 .ref").evaluate((el) => el.getClientRects().length);
  if (numberLines !== 1) fail(`the invoice number wraps over ${numberLines} lines at 360 px`);
  step("the checkout shows what is paid for, and the invoice number on one line at 360 px");
  // The merchant's logo: loaded from the service, above the name, and the page's icon.
  const logo = await page.locator("img.logo").evaluate((img) => [img.complete && img.naturalWidth, new URL(img.src).pathname]);
  if (!logo[0] || logo[1] !== plan.logo) fail(`the merchant's logo did not load (${logo})`);
  const icon = await page.locator('link[rel="icon"]').getAttribute("href");
  if (icon !== plan.logo) fail(`the page icon is ${icon}, not the merchant's logo`);
  step("the merchant's logo loads above its name and is the page's icon");
  await accessible(page, "checkout (test)");
  await shot(page, "checkout-test");
  await Promise.all([page.waitForURL(/\/checkout\//), page.getByRole("button", { name: "Pay half" }).click()]);
  await expectText(page, "Partly paid");
  await expectText(page, "42.00", "#amount-due");
  step("after paying half, the checkout asks for the remaining 42.00");
  await shot(page, "checkout-partly-paid");
  await Promise.all([page.waitForURL(/\/checkout\//), page.getByRole("button", { name: /Pay in full/ }).click()]);
  await expectText(page, "Paid", ".state");
  await expectText(page, "Download the receipt (PDF)", ".state");
  const receipt = await page.locator("#receipt").getAttribute("href");
  const pdf = await page.request.get(receipt);
  if (pdf.status() !== 200 || pdf.headers()["content-type"] !== "application/pdf") fail(`the receipt link answered ${pdf.status()}`);
  step("the paid checkout offers its receipt, which downloads as a PDF");
  await accessible(page, "checkout (paid)");
  await shot(page, "checkout-paid");

  // Invoice: everything the customer should read, then "Pay" opens a checkout for the rest.
  await page.goto(plan.invoiceUrl);
  for (const needle of ["Ada Lovelace", "Analytical Engines Ltd", "Consulting", "VAT", "Discount", "Amount due", "Download the invoice (PDF)", "Net 14", "Thank you for your business"]) {
    await expectText(page, needle);
  }
  await accessible(page, "invoice");
  await shot(page, "invoice");
  await Promise.all([page.waitForURL(/\/checkout\//), page.getByRole("button", { name: /^Pay / }).click()]);
  await expectText(page, "Amount due");
  step("the invoice's Pay button opened a checkout for what is due");

  // Payment link: a missing required field gets its message, then the checkout.
  await page.goto(plan.linkUrl);
  await accessible(page, "payment link");
  await shot(page, "link");
  await page.getByLabel(/Amount in/).fill("25");
  await page.getByRole("button", { name: "Continue to payment" }).click();
  await page.waitForLoadState();
  await expectText(page, "Enter your email address.");
  const invalid = await page.getByLabel("Email").getAttribute("aria-invalid");
  if (invalid !== "true") fail("the email input is not marked invalid");
  step("a missing email is reported next to its field");
  await accessible(page, "payment link (refused)");
  await shot(page, "link-missing-field");
  await page.getByLabel("Email").fill("ada@example.com");
  await Promise.all([page.waitForURL(/\/checkout\//), page.getByRole("button", { name: "Continue to payment" }).click()]);
  await expectText(page, "25.00", "#amount-due");
  step("the link's form led to a checkout of 25.00");
  noneOutside();
  await context.close();
  await desktop(browser);
}

// The same pages on a desktop screen (1280 px): the paid checkout with its summary and receipt
// link, and the invoice page, without horizontal scroll and with no serious axe finding.
async function desktop(browser) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  for (const [url, name, needles] of [
    [plan.checkoutUrl, "checkout-1280", ["What you are paying for", "Download the receipt (PDF)"]],
    [plan.invoiceUrl, "invoice-1280", ["Amount due", "Download the"]],
  ]) {
    await page.goto(url);
    for (const needle of needles) await expectText(page, needle);
    await noSidewaysScroll(page, name);
    await accessible(page, name);
    await shot(page, name);
  }
  step("at 1280 px the paid checkout (summary, receipt) and the invoice read without sideways scroll");
  await context.close();
}

async function liveWallet(browser) {
  const context = await browser.newContext({ viewport: { width: 360, height: 800 } });
  let id = 0;
  const anvil = async (method, params) => {
    const r = await fetch(plan.anvilUrl, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: ++id, method, params }),
    });
    return r.json();
  };
  // An EIP-1193 provider in the page that forwards to anvil (whose accounts are unlocked). It
  // starts on another chain, so the page must switch it when the service says so.
  const sentTransactions = [];
  const signedTypedData = [];
  let onOtherChain = true;
  await context.exposeFunction("__anvilRpc", async (method, params) => {
    if (method === "eth_requestAccounts" || method === "eth_accounts") return { result: [plan.payer] };
    if (method === "eth_chainId" && onOtherChain) return { result: "0x1" };
    if (method === "wallet_switchEthereumChain") {
      onOtherChain = false;
      return { result: null };
    }
    if (method === "eth_sendTransaction") sentTransactions.push(params[0]);
    if (method === "eth_signTypedData_v4") {
      // A wallet without typed data (the page falls back to the plain transfer), or one that
      // signs it: the JSON text the page passes, as MetaMask takes it.
      if (plan.typedData === "unsupported") return { error: { code: 4200, message: "eth_signTypedData_v4 is not supported" } };
      signedTypedData.push(JSON.parse(params[1]));
      return anvil(method, [params[0], JSON.parse(params[1])]);
    }
    if (method === "wallet_switchEthereumChain" || method === "wallet_addEthereumChain") return { result: null };
    return anvil(method, params);
  });
  await context.addInitScript(() => {
    window.ethereum = {
      request: async ({ method, params }) => {
        const r = await window.__anvilRpc(method, params || []);
        if (r.error) {
          const e = new Error(r.error.message);
          e.code = r.error.code;
          throw e;
        }
        return r.result;
      },
    };
  });
  const page = await context.newPage();
  sameOriginOnly(page, plan.checkoutUrl);
  // What the page asked the service: the wallet attempts (and their answers) and its steps.
  const attempts = [];
  const steps = [];
  const relays = [];
  page.on("response", async (r) => {
    if (r.url().endsWith("/wallet-payment-attempts")) {
      attempts.push({ status: r.status(), request: JSON.parse(r.request().postData()), body: await r.json().catch(() => null) });
    }
    if (r.url().endsWith("/telemetry")) steps.push(JSON.parse(r.request().postData()).step);
    if (r.url().endsWith("/authorizations")) {
      relays.push({ status: r.status(), request: JSON.parse(r.request().postData()), body: await r.json().catch(() => null) });
    }
  });
  // How the page follows its checkout: the pushed stream, not the poll it falls back to.
  const follows = [];
  page.on("request", (r) => {
    const path = new URL(r.url()).pathname;
    // The stream, or the status poll (the public view itself, no sub-resource).
    if (path.endsWith("/events") || /^\/v1\/public\/checkout-sessions\/[^/]+$/.test(path)) follows.push(path);
  });
  await page.goto(plan.checkoutUrl);
  if (await page.locator(".test-banner").count()) fail("a live checkout shows the test banner");
  await expectText(page, "12.50", "#amount-due");
  if ((await page.locator(".qr svg").count()) !== 1) fail("no QR code");
  await expectText(page, plan.wallet, "#pay-address");
  await page.locator("#wallet-pay").waitFor({ state: "visible" });
  await accessible(page, "checkout (live)");
  await shot(page, "checkout-live");
  await page.locator("#wallet-pay").click();
  step("paid with the injected wallet; waiting for verification");
  // Make blocks final while the page follows the payment by itself.
  const deadline = Date.now() + 60_000;
  for (;;) {
    await anvil("anvil_mine", ["0x41"]);
    const state = await page.locator("[data-phase]").first().getAttribute("data-phase").catch(() => null);
    if (state === "paid") break;
    if (Date.now() > deadline) fail(`the checkout never reached paid (phase ${state}): ${await text(page, "body")}`);
    await page.waitForTimeout(500);
  }
  await expectText(page, "Paid", ".state");
  if (!follows.some((p) => p.endsWith("/events"))) fail(`the page did not open its event stream: ${JSON.stringify(follows)}`);
  if (follows.some((p) => !p.endsWith("/events"))) fail(`the page polled although its stream worked: ${JSON.stringify(follows)}`);
  step("the checkout page reached paid by itself, pushed by its event stream");
  // The page went through the service's wallet routes: refused on the wrong chain, switched,
  // then signed exactly the transfer the service answered.
  if (attempts.length !== 2) fail(`expected 2 wallet attempts, saw ${JSON.stringify(attempts)}`);
  if (attempts[0].status !== 400 || attempts[0].body.error.code !== "INVALID_DEPOSIT_NETWORK" || attempts[0].request.chainId !== 1) {
    fail(`the first attempt (chain 1) was not refused as INVALID_DEPOSIT_NETWORK: ${JSON.stringify(attempts[0])}`);
  }
  const answered = attempts[1].body && attempts[1].body.data;
  if (attempts[1].status !== 200 || !answered) fail(`the second attempt failed: ${JSON.stringify(attempts[1])}`);
  step(`the wallet attempt on chain 1 was refused (INVALID_DEPOSIT_NETWORK); after switching, the service answered the transfer`);
  // Relayed: the wallet only signs; the service sends the call (the payer holds no POL).
  const relayed = plan.typedData === "relayed";
  if (sentTransactions.length !== (relayed ? 0 : 1)) {
    fail(`expected ${relayed ? "no" : "one"} eth_sendTransaction, saw ${sentTransactions.length}`);
  }
  const signed = sentTransactions[0];
  if (plan.typedData === "signed" || relayed) {
    // Paid by authorization: the wallet signed the service's typed data, then sent its call.
    const a = answered.authorization;
    if (!a) fail(`the service answered no authorization: ${JSON.stringify(answered)}`);
    if (signedTypedData.length !== 1 || JSON.stringify(signedTypedData[0]) !== JSON.stringify(a.typedData)) {
      fail(`the wallet signed ${JSON.stringify(signedTypedData)}, the service answered ${JSON.stringify(a.typedData)}`);
    }
    const nonce = a.typedData.message.nonce.slice(2).toLowerCase();
    if (relayed) {
      if (!a.relayUrl) fail(`the service offered no relayer: ${JSON.stringify(a)}`);
      if (relays.length !== 1 || relays[0].status !== 202 || relays[0].request.nonce !== a.typedData.message.nonce) {
        fail(`the page did not hand the signed authorization to the service once: ${JSON.stringify(relays)}`);
      }
      step("the wallet signed the service's typed data; the page handed it to the service, which sent it (no gas for the payer)");
    } else {
      if (relays.length) fail(`the page posted to a relayer the service did not offer: ${JSON.stringify(relays)}`);
      if (String(signed.to).toLowerCase() !== a.call.to.toLowerCase() || !signed.data.startsWith(a.call.selector) || !signed.data.includes(nonce)) {
        fail(`the wallet sent ${JSON.stringify(signed)}, not the authorization's call`);
      }
      step("the wallet signed the service's typed data and sent transferWithAuthorization with its nonce");
    }
  } else {
    for (const k of ["from", "to", "data", "value"]) {
      if (String(signed[k]).toLowerCase() !== String(answered.transaction[k]).toLowerCase()) {
        fail(`the wallet was asked to sign ${k}=${signed[k]}, the service answered ${answered.transaction[k]}`);
      }
    }
    step(plan.typedData === "unsupported"
      ? "the wallet could not sign typed data: the page sent exactly the plain transfer the service answered"
      : "the wallet signed exactly the transaction the service answered");
  }
  for (const s of ["viewed", "transfer_sent"]) {
    if (!steps.includes(s)) fail(`the page never reported ${s} (reported: ${steps.join(", ")})`);
  }
  step(`the page reported its steps: ${[...new Set(steps)].join(", ")}`);
  await accessible(page, "checkout (live, paid)");
  await shot(page, "checkout-live-paid");
  noneOutside();
  await context.close();
}

// Emails: each HTML part is linted (no script, no stylesheet link, no remote resource, every
// image with alt text), then rendered at 360 and 800 px with nothing loaded from anywhere and
// no horizontal scroll.
async function emails(browser) {
  for (const [i, html] of plan.htmls.entries()) {
    for (const bad of [/<script/i, /<link[^>]+stylesheet/i, /\ssrc=["']https?:/i, /url\(\s*["']?https?:/i]) {
      if (bad.test(html)) fail(`email ${i} holds ${bad}`);
    }
    for (const img of html.match(/<img[^>]*>/gi) || []) {
      if (!/\salt=/.test(img)) fail(`email ${i}: an image without alt text: ${img}`);
    }
    for (const width of [360, 800]) {
      const context = await browser.newContext({ viewport: { width, height: 900 }, javaScriptEnabled: false });
      const page = await context.newPage();
      const requests = [];
      await page.route("**/*", (route) => {
        requests.push(route.request().url());
        return route.abort();
      });
      await page.setContent(html);
      const [scroll, client] = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
      if (scroll > client) fail(`email ${i} scrolls sideways at ${width} px (${scroll} > ${client})`);
      if (requests.length) fail(`email ${i} loaded ${requests.join(", ")}`);
      await shot(page, `email-${i}-${width}`);
      await context.close();
    }
    step(`email ${i}: linted, and rendered at 360 and 800 px without horizontal scroll or any request`);
  }
}

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium", args: ARGS });
try {
  if (plan.scenario === "test-pages") await testPages(browser);
  else if (plan.scenario === "live-wallet") await liveWallet(browser);
  else if (plan.scenario === "emails") await emails(browser);
  else fail(`unknown scenario ${plan.scenario}`);
  console.log("ok");
} catch (e) {
  console.error(`FAILED: ${e.message}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
