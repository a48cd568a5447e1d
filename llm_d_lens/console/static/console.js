// Lens console: keyboard tabs (WAI-ARIA tabs pattern) and range pickers that apply on change.
// Pages work without this file; it only saves a click.
(function () {
  "use strict";
  function tabs(list) {
    var items = Array.prototype.slice.call(list.querySelectorAll('[role="tab"]'));
    list.addEventListener("keydown", function (event) {
      var index = items.indexOf(document.activeElement);
      if (index < 0) { return; }
      var next = null;
      if (event.key === "ArrowRight" || event.key === "ArrowDown") { next = items[(index + 1) % items.length]; }
      else if (event.key === "ArrowLeft" || event.key === "ArrowUp") { next = items[(index - 1 + items.length) % items.length]; }
      else if (event.key === "Home") { next = items[0]; }
      else if (event.key === "End") { next = items[items.length - 1]; }
      else if (event.key === " ") { event.preventDefault(); document.activeElement.click(); return; }
      if (next) {
        event.preventDefault();
        items.forEach(function (item) { item.setAttribute("tabindex", item === next ? "0" : "-1"); });
        next.focus();
        next.click();  // a tab is a page: activating it loads that hardware's panel
      }
    });
  }
  function autoSubmit(select) {
    select.addEventListener("change", function () { if (select.form) { select.form.submit(); } });
  }
  document.addEventListener("DOMContentLoaded", function () {
    Array.prototype.forEach.call(document.querySelectorAll('[role="tablist"]'), tabs);
    Array.prototype.forEach.call(document.querySelectorAll("#telemetry select"), autoSubmit);
  });
})();
