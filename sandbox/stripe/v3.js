/* A stand-in for https://js.stripe.com/v3, served by the sandbox: the subset the
   checkout page uses. Stripe(publishableKey) -> elements().create('card').mount(sel);
   createPaymentMethod({type: 'card', card: element}) -> {paymentMethod} or {error}.
   The card number goes from the browser to the provider only, never to the shop. */
(function () {
  var script = document.currentScript;
  var base = script ? new URL(script.src).origin : "";

  function CardElement() {
    this.inputs = {};
  }
  CardElement.prototype.mount = function (target) {
    var node = typeof target === "string" ? document.querySelector(target) : target;
    var fields = [
      ["number", "Card number", "4242 4242 4242 4242", "cc-number"],
      ["expiry", "MM / YY", "12 / 34", "cc-exp"],
      ["cvc", "CVC", "123", "cc-csc"],
    ];
    var self = this;
    fields.forEach(function (field) {
      var input = document.createElement("input");
      input.setAttribute("data-stripe", field[0]);
      input.setAttribute("aria-label", field[1]);
      input.setAttribute("placeholder", field[2]);
      input.setAttribute("autocomplete", field[3]);
      input.setAttribute("inputmode", "numeric");
      // No name attribute: a surrounding form can never post the card data.
      node.appendChild(input);
      self.inputs[field[0]] = input;
    });
  };

  function Stripe(publishableKey) {
    if (!(this instanceof Stripe)) return new Stripe(publishableKey);
    this.key = publishableKey;
  }
  Stripe.prototype.elements = function () {
    return {
      create: function (type) {
        if (type !== "card") throw new Error("the sandbox's Stripe.js only has 'card'");
        return new CardElement();
      },
    };
  };
  Stripe.prototype.createPaymentMethod = function (options) {
    var element = options.card;
    var expiry = (element.inputs.expiry.value || "").split("/");
    var body = new URLSearchParams({
      type: "card",
      "card[number]": (element.inputs.number.value || "").replace(/\s+/g, ""),
      "card[exp_month]": (expiry[0] || "").trim(),
      "card[exp_year]": (expiry[1] || "").trim(),
      "card[cvc]": element.inputs.cvc.value || "",
    });
    return fetch(base + "/v1/payment_methods", {
      method: "POST",
      headers: { Authorization: "Bearer " + this.key },
      body: body,
    })
      .then(function (response) {
        return response.json();
      })
      .then(function (json) {
        return json.error ? { error: json.error } : { paymentMethod: json };
      });
  };
  window.Stripe = Stripe;
})();
