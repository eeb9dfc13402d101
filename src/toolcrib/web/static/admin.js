// toolcrib admin console: confirmations for destructive forms, and the transport switch of the
// "add a connection" form. Loaded from /admin/static (the CSP allows no inline script).
"use strict";
document.addEventListener("submit", (event) => {
  const form = event.target;
  const question = form instanceof HTMLFormElement ? form.dataset.confirm : undefined;
  if (question && !window.confirm(question)) event.preventDefault();
});
document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("add-connection");
  if (!form) return;
  const show = () => {
    const chosen = form.querySelector('input[name="transport"]:checked');
    const transport = chosen ? chosen.value : "http";
    form.querySelectorAll("[data-transport]").forEach((label) => {
      label.hidden = label.dataset.transport !== transport;
    });
  };
  form.addEventListener("change", show);
  show();
});
