// htmx swaps nothing when a request fails; say so instead of leaving a button that seems dead.
(function () {
  function say(text) {
    var flash = document.getElementById("flash");
    if (!flash) return;
    flash.textContent = text;
    flash.hidden = false;
  }
  document.addEventListener("htmx:responseError", function (event) {
    var status = event.detail.xhr.status;
    say(status === 403
      ? "You may not do that (403). Operators can."
      : "The server could not answer (" + status + "). Reload the page and try again.");
  });
  document.addEventListener("htmx:sendError", function () {
    say("The server cannot be reached. Check the connection and try again.");
  });
  document.addEventListener("htmx:beforeRequest", function () {
    var flash = document.getElementById("flash");
    if (flash) flash.hidden = true;
  });
})();

// The request form books devices or whole nodes: show and send only the fields of the choice made.
// Without JavaScript both sets show, and the services say which field a whole-node lease may not have.
(function () {
  function sync() {
    document.querySelectorAll("form").forEach(function (form) {
      var checked = form.querySelector("input[name=binding]:checked");
      if (!checked) return;
      form.querySelectorAll("fieldset[data-binding]").forEach(function (set) {
        var off = set.getAttribute("data-binding") !== checked.value;
        set.disabled = off;  // a disabled fieldset's inputs are not submitted
        set.hidden = off;
      });
    });
  }
  document.addEventListener("change", function (event) {
    if (event.target.name === "binding") sync();
  });
  document.addEventListener("DOMContentLoaded", sync);
  document.addEventListener("htmx:afterSwap", sync);
})();
