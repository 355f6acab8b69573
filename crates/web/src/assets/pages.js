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

  // Live status: reload when the checkout's phase or its latest payment changes.
  function refresh() {
    if (!card) return;
    fetch(card.getAttribute("data-status-url"), { headers: { Accept: "application/json" }, cache: "no-store" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (body) {
        if (!body || !body.data) return;
        var d = body.data;
        var payment = d.latestPayment ? d.latestPayment.status : "";
        if (d.phase !== card.getAttribute("data-phase") || payment !== card.getAttribute("data-payment")) {
          window.location.reload();
        }
      })
      .catch(function () {});
  }
  var live = card && ["pay", "validating", "underpaid", "failed"].indexOf(card.getAttribute("data-phase")) >= 0;
  if (live) setInterval(refresh, 3000);

  // After payment, back to the merchant.
  var redirect = document.querySelector("[data-redirect]");
  if (redirect) setTimeout(function () { window.location.assign(redirect.getAttribute("data-redirect")); }, 4000);

  // Pay with a browser wallet (EIP-1193): switch to the checkout's chain, send the ERC-20
  // transfer of the exact amount, then report its hash for verification.
  var pay = document.getElementById("wallet-pay");
  var status = document.getElementById("wallet-status");
  if (pay && window.ethereum) {
    pay.hidden = false;
    status.textContent = "Your wallet will ask you to confirm the transfer.";
    pay.addEventListener("click", function () { payWithWallet().catch(fail); });
  }
  function say(text) { status.textContent = text; }
  function fail(err) {
    pay.disabled = false;
    say((err && err.message) ? "Not sent: " + err.message : "Not sent.");
  }
  function hex(n) { return "0x" + Number(n).toString(16); }
  function word(hexDigits) { return hexDigits.replace(/^0x/, "").toLowerCase().padStart(64, "0"); }
  function unitsHex(decimal) { return BigInt(decimal).toString(16); }
  async function payWithWallet() {
    var eth = window.ethereum;
    var chain = parseInt(pay.getAttribute("data-chain-id"), 10);
    pay.disabled = true;
    say("Connecting to your wallet…");
    var accounts = await eth.request({ method: "eth_requestAccounts" });
    if (!accounts || !accounts.length) throw new Error("no account");
    var current = parseInt(await eth.request({ method: "eth_chainId" }), 16);
    if (current !== chain) {
      say("Switching your wallet to Polygon…");
      try {
        await eth.request({ method: "wallet_switchEthereumChain", params: [{ chainId: hex(chain) }] });
      } catch (e) {
        if (e && e.code === 4902) {
          await eth.request({ method: "wallet_addEthereumChain", params: [{ chainId: hex(chain), chainName: "Polygon",
            nativeCurrency: { name: "POL", symbol: "POL", decimals: 18 }, rpcUrls: ["https://polygon-rpc.com"],
            blockExplorerUrls: ["https://polygonscan.com"] }] });
        } else { throw e; }
      }
    }
    var data = "0xa9059cbb" + word(pay.getAttribute("data-to")) + word(unitsHex(pay.getAttribute("data-units")));
    say("Confirm the transfer in your wallet…");
    var hash = await eth.request({ method: "eth_sendTransaction",
      params: [{ from: accounts[0], to: pay.getAttribute("data-token"), data: data, value: "0x0" }] });
    say("Sent. Verifying on Polygon…");
    var r = await fetch(pay.getAttribute("data-submit"), { method: "POST",
      headers: { "Content-Type": "application/json" }, body: JSON.stringify({ transactionHash: hash }) });
    if (!r.ok) {
      var body = await r.json().catch(function () { return null; });
      throw new Error(body && body.error ? body.error.message : "the service did not accept the hash " + hash);
    }
    window.location.reload();
  }
})();
