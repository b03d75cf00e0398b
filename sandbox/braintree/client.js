/* A stand-in for braintree-web (https://js.braintreegateway.com/web/3.x/js/client.min.js
   and hosted-fields.min.js), served by the sandbox: the subset the payment pages use.
   braintree.client.create({authorization: tokenizationKey}) -> client;
   braintree.hostedFields.create({client, fields: {number: {container}, expirationDate:
   {container}, cvv: {container}}}) -> hostedFields; hostedFields.tokenize() ->
   {nonce, details}. The card goes from the browser to Braintree's client API only. */
(function () {
  var script = document.currentScript;
  var base = script ? new URL(script.src).origin : "";

  function done(callback, error, value) {
    if (callback) return callback(error, value);
    return error ? Promise.reject(error) : Promise.resolve(value);
  }

  function Client(key) {
    this.key = key;
    this.merchantId = key.split("_").slice(2).join("_");
  }
  Client.prototype.request = function (options, callback) {
    var url = base + "/merchants/" + this.merchantId + "/client_api/v1/" + options.endpoint;
    var body = Object.assign({ tokenizationKey: this.key }, options.data || {});
    var result = fetch(url, {
      method: (options.method || "post").toUpperCase(),
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    }).then(function (response) {
      return response.json().then(function (json) {
        if (!response.ok) throw { code: "CLIENT_REQUEST_ERROR", message: json.error.message };
        return json;
      });
    });
    if (!callback) return result;
    result.then(
      function (json) { callback(null, json); },
      function (error) { callback(error); }
    );
  };

  var FIELDS = {
    number: ["Card number", "4111 1111 1111 1111", "cc-number"],
    expirationDate: ["MM / YY", "12 / 34", "cc-exp"],
    cvv: ["CVV", "123", "cc-csc"],
  };

  function HostedFields(client, fields) {
    this.client = client;
    this.inputs = {};
    var self = this;
    Object.keys(fields).forEach(function (name) {
      var node = document.querySelector(fields[name].container);
      var input = document.createElement("input");
      input.setAttribute("data-braintree-name", name);
      input.setAttribute("aria-label", FIELDS[name][0]);
      input.setAttribute("placeholder", FIELDS[name][1]);
      input.setAttribute("autocomplete", FIELDS[name][2]);
      input.setAttribute("inputmode", "numeric");
      // No name attribute: a surrounding form can never post the card data.
      node.appendChild(input);
      self.inputs[name] = input;
    });
  }
  HostedFields.prototype.tokenize = function (callback) {
    var value = function (input) { return input ? input.value : ""; };
    var expiry = value(this.inputs.expirationDate).split("/");
    var card = {
      number: value(this.inputs.number).replace(/\s+/g, ""),
      expirationMonth: (expiry[0] || "").trim(),
      expirationYear: (expiry[1] || "").trim(),
      cvv: value(this.inputs.cvv),
    };
    var result = this.client
      .request({ endpoint: "payment_methods/credit_cards", data: { creditCard: card } })
      .then(function (json) {
        var made = json.creditCards[0];
        return { nonce: made.nonce, details: made.details, type: made.type };
      });
    if (!callback) return result;
    result.then(
      function (payload) { callback(null, payload); },
      function (error) { callback(error); }
    );
  };

  window.braintree = {
    client: {
      create: function (options, callback) {
        return done(callback, null, new Client(options.authorization));
      },
    },
    hostedFields: {
      create: function (options, callback) {
        return done(callback, null, new HostedFields(options.client, options.fields));
      },
    },
  };
})();
