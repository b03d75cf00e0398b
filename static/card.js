/* Card entry through the provider's own script (Stripe.js): the card number, expiry and
   CVC go from this browser to the provider; the form posts only the PaymentMethod id.
   One tokenization per page: a double click waits for the first one. */
(function () {
  "use strict";
  var mount = document.querySelector("[data-card-element]");
  if (!mount) return;
  var form = mount.closest("form");
  var field = form.querySelector("input[name=payment_method]");
  var button = form.querySelector("button[type=submit]");
  var message = form.querySelector("[data-card-error]");
  if (typeof window.Stripe !== "function") {
    message.textContent = "The card form could not load. Please reload the page.";
    button.disabled = true;
    return;
  }
  var stripe = window.Stripe(mount.getAttribute("data-publishable-key"));
  var card = stripe.elements().create("card");
  card.mount(mount);
  var busy = false;

  function fail(text) {
    message.textContent = text;
    busy = false;
    button.disabled = false;
  }

  form.addEventListener("submit", function (event) {
    if (field.value) return; // tokenized: this is the real submission
    event.preventDefault();
    if (busy) return;
    busy = true;
    button.disabled = true;
    message.textContent = "";
    stripe.createPaymentMethod({ type: "card", card: card }).then(
      function (result) {
        if (result.error) return fail(result.error.message || "Check your card details.");
        field.value = result.paymentMethod.id;
        form.submit();
      },
      function () {
        fail("Could not reach the card processor. Please try again.");
      }
    );
  });
})();
