/* The payment status page updates itself while the payment is not final: it asks for the
   page again every few seconds and reloads when the payment's status changed (no meta
   refresh: screen readers and keyboards keep their place until something happened). */
(function () {
  "use strict";
  var card = document.querySelector("[data-refresh-s]");
  if (!card || !window.fetch || !window.DOMParser) return;
  var every = 1000 * Number(card.getAttribute("data-refresh-s"));
  var shown = card.getAttribute("data-status");
  function ask() {
    fetch(window.location.href, { credentials: "same-origin", cache: "no-store" })
      .then(function (response) { return response.ok ? response.text() : ""; })
      .then(function (html) {
        var page = new DOMParser().parseFromString(html, "text/html");
        var now = page.querySelector("[data-status]");
        if (now && now.getAttribute("data-status") !== shown) {
          window.location.reload();
        } else {
          window.setTimeout(ask, every);
        }
      })
      .catch(function () { window.setTimeout(ask, every); });
  }
  window.setTimeout(ask, every);
})();
