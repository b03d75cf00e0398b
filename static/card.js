/* Card entry through the provider's own script (Stripe.js, or braintree-web's hosted
   fields): the card number, expiry and CVC go from this browser to the provider; the
   form posts only the provider's token (a PaymentMethod id, a nonce).
   One tokenization per page: a double click waits for the first one. */
(function () {
  "use strict";
  var stripeMount = document.querySelector("[data-card-element]");
  var braintreeMount = document.querySelector("[data-braintree-fields]");
  var mount = stripeMount || braintreeMount;
  if (!mount) return;
  var form = mount.closest("form");
  var field = form.querySelector("input[name=payment_method]");
  var button = form.querySelector("button[type=submit]");
  var message = form.querySelector("[data-card-error]");
  var busy = false;

  function unavailable() {
    message.textContent = "The card form could not load. Please reload the page.";
    button.disabled = true;
  }

  function fail(text) {
    message.textContent = text;
    busy = false;
    button.disabled = false;
  }

  // tokenize() -> a promise of the provider's token, or a rejection with a message
  var tokenize;
  if (stripeMount) {
    if (typeof window.Stripe !== "function") return unavailable();
    var stripe = window.Stripe(mount.getAttribute("data-publishable-key"));
    var card = stripe.elements().create("card");
    card.mount(mount);
    tokenize = function () {
      return stripe.createPaymentMethod({ type: "card", card: card }).then(function (result) {
        if (result.error) throw new Error(result.error.message || "Check your card details.");
        return result.paymentMethod.id;
      });
    };
  } else {
    if (!window.braintree || !window.braintree.client) return unavailable();
    var fields = window.braintree.client
      .create({ authorization: mount.getAttribute("data-tokenization-key") })
      .then(function (client) {
        return window.braintree.hostedFields.create({
          client: client,
          fields: {
            number: { container: "#bt-number" },
            expirationDate: { container: "#bt-expiry" },
            cvv: { container: "#bt-cvv" },
          },
        });
      });
    tokenize = function () {
      return fields.then(function (hosted) {
        return hosted.tokenize().then(
          function (payload) {
            return payload.nonce;
          },
          function (error) {
            throw new Error((error && error.message) || "Check your card details.");
          }
        );
      });
    };
  }

  form.addEventListener("submit", function (event) {
    if (field.value) return; // tokenized: this is the real submission
    event.preventDefault();
    if (busy) return;
    busy = true;
    button.disabled = true;
    message.textContent = "";
    tokenize().then(
      function (token) {
        field.value = token;
        form.submit();
      },
      function (error) {
        fail(
          error && error.message && error.message !== "Failed to fetch"
            ? error.message
            : "Could not reach the card processor. Please try again."
        );
      }
    );
  });
})();
