// stablepay hosted pages: optional enhancements. Every page works without this script.
(function () {
  "use strict";
  var card = document.querySelector("[data-status-url]");

  // Copy buttons.
  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    if (!navigator.clipboard) return;
    button.hidden = false;
    button.addEventListener("click", function () {
      navigator.clipboard.writeText(button.getAttribute("data-copy")).then(function () {
        button.textContent = "Copied";
        setTimeout(function () { button.textContent = "Copy"; }, 2000);
      });
    });
  });

  // Countdown to the checkout's expiry (from the service's own count of seconds left).
  var countdown = document.getElementById("countdown");
  if (countdown) {
    var left = parseInt(countdown.getAttribute("data-seconds-left"), 10) || 0;
    var started = Date.now();
    var tick = function () {
      var s = Math.max(0, left - Math.floor((Date.now() - started) / 1000));
      var m = Math.floor(s / 60);
      countdown.textContent = m + ":" + String(s % 60).padStart(2, "0");
      if (s === 0) { refresh(); return; }
      setTimeout(tick, 1000);
    };
    tick();
  }

  // Live status: reload when the checkout's phase or its latest payment changes; never once a
  // form of the page is being submitted (the reload would abort that navigation, and the page
  // it leads to shows the change anyway).
  var leaving = false;
  function refresh() {
    if (!card || leaving) return;
    fetch(card.getAttribute("data-status-url"), { headers: { Accept: "application/json" }, cache: "no-store" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (body) {
        if (!body || !body.data) return;
        var d = body.data;
        var payment = d.latestPayment ? d.latestPayment.status : "";
        if (leaving) return;
        if (d.phase !== card.getAttribute("data-phase") || payment !== card.getAttribute("data-payment")) {
          window.location.reload();
        }
      })
      .catch(function () {});
  }
  var live = card && ["pay", "validating", "underpaid", "failed", "held"].indexOf(card.getAttribute("data-phase")) >= 0;
  // Pushed by the server (Server-Sent Events) where the browser can; polled every 3 s where it
  // cannot, and as soon as the stream fails (the stream keeps retrying meanwhile).
  var polling = null;
  var stream = null;
  function poll() { if (!polling) polling = setInterval(refresh, 3000); }
  function follow() {
    var url = card.getAttribute("data-events-url");
    if (!window.EventSource || !url) { poll(); return; }
    var source = new EventSource(url);
    source.addEventListener("status", function (e) {
      var d;
      try { d = JSON.parse(e.data); } catch (err) { return; }
      if (leaving) return;
      if (d.phase !== card.getAttribute("data-phase") || d.payment !== card.getAttribute("data-payment")) {
        source.close();
        window.location.reload();
      }
    });
    source.onerror = function () { if (!leaving) poll(); };
    stream = source;
  }
  document.addEventListener("submit", function (e) {
    if (e.defaultPrevented) return;
    leaving = true;
    if (stream) stream.close();
    if (polling) clearInterval(polling);
  });
  if (live) follow();

  // After payment, back to the merchant.
  var redirect = document.querySelector("[data-redirect]");
  if (redirect) setTimeout(function () { window.location.assign(redirect.getAttribute("data-redirect")); }, 4000);

  // The page's steps, for the merchant's conversion funnel (best effort: never in the way).
  function report(step, detail) {
    if (!card || !card.getAttribute("data-telemetry")) return;
    var body = { step: step };
    if (detail) body.detail = String(detail).slice(0, 180);
    fetch(card.getAttribute("data-telemetry"), { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body), keepalive: true }).catch(function () {});
  }
  report("viewed");

  // Pay with a browser wallet (EIP-1193): connect, ask the service for the exact transfer to
  // sign (switching the wallet to the checkout's chain when the service says it is on another),
  // send it, then report its hash for verification.
  var pay = document.getElementById("wallet-pay");
  var status = document.getElementById("wallet-status");
  var relayKey = "stablepay-relay:" + (pay ? pay.getAttribute("data-attempt") : "");
  if (pay && window.ethereum) {
    pay.hidden = false;
    status.textContent = "Your wallet will ask you to confirm the transfer.";
    pay.addEventListener("click", function () { payWithWallet().catch(fail); });
    var following = null;
    try { following = sessionStorage.getItem(relayKey); } catch (e) {}
    if (following) followRelay(following);
  }
  function say(text) { status.textContent = text; }
  function fail(err) {
    pay.disabled = false;
    var text = (err && err.message) ? "Not sent: " + err.message : "Not sent.";
    say(text);
    report("error_shown", text);
  }
  function hex(n) { return "0x" + Number(n).toString(16); }
  async function post(url, body) {
    var r = await fetch(url, { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body) });
    var answer = await r.json().catch(function () { return null; });
    return { ok: r.ok, answer: answer };
  }
  function refused(answer, fallback) {
    var e = new Error(answer && answer.error ? answer.error.message : fallback);
    e.code = answer && answer.error ? answer.error.code : "";
    e.details = (answer && answer.error && answer.error.details) || {};
    return e;
  }
  async function switchChain(eth, chain) {
    say("Switching your wallet to Polygon…");
    try {
      await eth.request({ method: "wallet_switchEthereumChain", params: [{ chainId: hex(chain) }] });
    } catch (e) {
      if (!e || e.code !== 4902) throw e;
      await eth.request({ method: "wallet_addEthereumChain", params: [{ chainId: hex(chain), chainName: "Polygon",
        nativeCurrency: { name: "POL", symbol: "POL", decimals: 18 }, rpcUrls: ["https://polygon-rpc.com"],
        blockExplorerUrls: ["https://polygonscan.com"] }] });
    }
  }
  /// The transfer the service says this wallet must sign, on the checkout's chain.
  async function transferFor(eth, account) {
    for (var tries = 0; tries < 2; tries++) {
      var chain = parseInt(await eth.request({ method: "eth_chainId" }), 16);
      var attempt = await post(pay.getAttribute("data-attempt"), { walletAddress: account, chainId: chain });
      if (attempt.ok) return attempt.answer.data;
      var e = refused(attempt.answer, "the checkout cannot be paid from a wallet now");
      if (e.code !== "INVALID_DEPOSIT_NETWORK" || tries > 0) throw e;
      await switchChain(eth, parseInt(pay.getAttribute("data-chain-id"), 10));
    }
    throw new Error("the wallet did not switch to Polygon");
  }
  /// The calldata of `transferWithAuthorization` for an authorization the wallet signed: the
  /// message's fields, then the signature's v, r and s.
  function authorizedCall(a, signature) {
    var m = a.typedData.message;
    var word = function (h) { return h.replace(/^0x/, "").toLowerCase().padStart(64, "0"); };
    var num = function (d) { return BigInt(d).toString(16).padStart(64, "0"); };
    var sig = signature.replace(/^0x/, "");
    var v = parseInt(sig.slice(128, 130), 16);
    if (v < 27) v += 27;
    return a.call.selector + word(m.from) + word(m.to) + num(m.value) + num(m.validAfter) + num(m.validBefore) +
      word(m.nonce) + num(v) + sig.slice(0, 64) + sig.slice(64, 128);
  }
  /// Pays by EIP-3009 authorization (its nonce names this checkout): the wallet signs the typed
  /// data; the service submits it where it offers to (no network fee for the customer), else
  /// (or when its relayer cannot now) the wallet sends the call. Answers the hash to report, ""
  /// when the service submits it (it reports it itself), or null when the wallet cannot sign
  /// typed data (the plain transfer then). The customer declining is an answer, never a fallback.
  async function payByAuthorization(eth, account, a) {
    var signature;
    try {
      say("Sign the payment in your wallet…");
      signature = await eth.request({ method: "eth_signTypedData_v4", params: [account, JSON.stringify(a.typedData)] });
    } catch (e) {
      if (e && e.code === 4001) throw e;
      return null;
    }
    if (a.relayUrl && await relay(a, signature)) return "";
    say("Confirm the transaction in your wallet…");
    return eth.request({ method: "eth_sendTransaction",
      params: [{ from: account, to: a.call.to, data: authorizedCall(a, signature), value: "0x0" }] });
  }
  /// Hands the signed authorization to the service; answers whether it took it (false: the
  /// relayer cannot now, the wallet sends it instead).
  async function relay(a, signature) {
    say("Sending your payment (the network fee is on us)…");
    var sent = await post(a.relayUrl, { nonce: a.typedData.message.nonce, signature: signature });
    if (sent.ok) { followRelay(sent.answer.data.url); return true; }
    var e = refused(sent.answer, "the service could not send the payment");
    if (e.code === "FEATURE_UNAVAILABLE") return false;
    if (e.code === "AUTHORIZATION_USED") { window.location.reload(); return true; }
    // Another payment of this checkout is being sent (another tab): follow that one.
    if (e.details.reason === "payment_being_sent") {
      followRelay(a.relayUrl + "/" + e.details.relayedAuthorizationId);
      return true;
    }
    throw e;
  }
  /// Follows a submission until its transaction is mined (kept for this tab, so a reload goes
  /// on following it instead of offering to pay again).
  function followRelay(url) {
    try { sessionStorage.setItem(relayKey, url); } catch (e) {}
    pay.disabled = true;
    var check = function () {
      fetch(url, { headers: { Accept: "application/json" }, cache: "no-store" })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (body) {
          var d = body && body.data;
          if (!d) { setTimeout(check, 3000); return; }
          if (d.status === "queued" || d.status === "sent") {
            say(d.status === "sent" ? "Sent. Waiting for Polygon to include it…" : "Sending your payment…");
            setTimeout(check, 1500);
            return;
          }
          try { sessionStorage.removeItem(relayKey); } catch (e) {}
          if (d.status === "confirmed" || d.status === "front_run") { window.location.reload(); return; }
          pay.disabled = false;
          say("Not paid: " + (d.detail || d.status) + ". Try again.");
          report("error_shown", d.status);
        })
        .catch(function () { setTimeout(check, 3000); });
    };
    check();
  }
  async function payWithWallet() {
    var eth = window.ethereum;
    pay.disabled = true;
    say("Connecting to your wallet…");
    var accounts = await eth.request({ method: "eth_requestAccounts" });
    if (!accounts || !accounts.length) throw new Error("no account");
    var transfer = await transferFor(eth, accounts[0]);
    var tx = transfer.transaction;
    var hash = transfer.authorization ? await payByAuthorization(eth, tx.from, transfer.authorization) : null;
    if (hash === "") { report("transfer_sent"); return; }
    if (!hash) {
      say("Confirm the transfer in your wallet…");
      hash = await eth.request({ method: "eth_sendTransaction",
        params: [{ from: tx.from, to: tx.to, data: tx.data, value: tx.value }] });
    }
    report("transfer_sent");
    say("Sent. Verifying on Polygon…");
    var sent = await post(transfer.submitUrl, { transactionHash: hash });
    if (!sent.ok) throw refused(sent.answer, "the service did not accept the hash " + hash);
    window.location.reload();
  }
})();
