/* The dashboard's overview keeps itself fresh without reloading: every few seconds it
   fetches the page again and swaps in each part marked data-live whose content changed,
   except a part where the admin is typing (a focused field, or a reason typed and not
   sent yet): a half-typed breaker reason is never wiped. */
(function () {
  "use strict";
  var root = document.querySelector("[data-refresh-s]");
  if (!root || !window.fetch || !window.DOMParser) return;
  var every = 1000 * Number(root.getAttribute("data-refresh-s"));
  function isBusy(part) {
    if (part.contains(document.activeElement) && document.activeElement !== document.body) {
      return true;
    }
    var fields = part.querySelectorAll("input[type=text], input:not([type]), textarea");
    for (var i = 0; i < fields.length; i++) {
      if (fields[i].value) return true;
    }
    var boxes = part.querySelectorAll("input[type=checkbox]");
    for (var j = 0; j < boxes.length; j++) {
      if (boxes[j].checked) return true;
    }
    return false;
  }
  function refresh() {
    fetch(window.location.href, { credentials: "same-origin", cache: "no-store" })
      .then(function (response) { return response.ok ? response.text() : ""; })
      .then(function (html) {
        if (html) {
          var fresh = new DOMParser().parseFromString(html, "text/html");
          var parts = document.querySelectorAll("[data-live]");
          for (var i = 0; i < parts.length; i++) {
            var name = parts[i].getAttribute("data-live");
            var next = fresh.querySelector('[data-live="' + name + '"]');
            if (next && next.innerHTML !== parts[i].innerHTML && !isBusy(parts[i])) {
              parts[i].innerHTML = next.innerHTML;
            }
          }
          root.setAttribute("data-refreshed", String(Date.now()));
        }
        window.setTimeout(refresh, every);
      })
      .catch(function () { window.setTimeout(refresh, every); });
  }
  window.setTimeout(refresh, every);
})();
