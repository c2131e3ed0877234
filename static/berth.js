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
