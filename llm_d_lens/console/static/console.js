// Lens console: keyboard tabs (WAI-ARIA tabs pattern), range pickers that apply on change, and live panels.
// Pages work without this file: it saves a click, says "12 s ago" where the page says "at 14:02:07 UTC", and
// re-reads the page every data-refresh seconds with If-None-Match (a 304 costs nothing; the ETag changes when
// the watch brings a new inventory or a new telemetry step), swapping in each [data-live] panel that changed.
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
  function age(seconds) {
    if (seconds < 60) { return Math.max(0, Math.round(seconds)) + " s ago"; }
    if (seconds < 3600) { return Math.round(seconds / 60) + " min ago"; }
    if (seconds < 172800) { return Math.round(seconds / 3600) + " h ago"; }
    return Math.round(seconds / 86400) + " days ago";
  }
  function ages() {
    Array.prototype.forEach.call(document.querySelectorAll("time[data-age]"), function (time) {
      var at = Date.parse(time.getAttribute("datetime"));
      if (!isNaN(at)) { time.textContent = "updated " + age((Date.now() - at) / 1000); }
    });
  }
  var etag = null;
  function refresh() {
    if (document.visibilityState === "hidden") { return; }
    var headers = etag ? { "If-None-Match": etag } : {};
    fetch(window.location.href, { headers: headers, cache: "no-store", credentials: "same-origin" }).then(function (answer) {
      document.body.setAttribute("data-checked", String(Date.now()));
      if (answer.status !== 200) { return null; }
      etag = answer.headers.get("ETag");
      return answer.text();
    }).then(function (text) {
      if (!text) { return; }
      var fresh = new DOMParser().parseFromString(text, "text/html");
      Array.prototype.forEach.call(document.querySelectorAll("[data-live][id]"), function (panel) {
        var next = fresh.getElementById(panel.id);
        if (!next || next.innerHTML === panel.innerHTML) { return; }
        if (panel.contains(document.activeElement)) { return; }  // never under a person's cursor
        panel.innerHTML = next.innerHTML;
        panel.setAttribute("data-updated", String(Date.now()));
        Array.prototype.forEach.call(panel.querySelectorAll("#telemetry select"), autoSubmit);
      });
      ages();
    }).catch(function () { /* the next round tries again; the page stays as it is */ });
  }
  document.addEventListener("DOMContentLoaded", function () {
    Array.prototype.forEach.call(document.querySelectorAll('[role="tablist"]'), tabs);
    Array.prototype.forEach.call(document.querySelectorAll("#telemetry select"), autoSubmit);
    ages();
    window.setInterval(ages, 1000);
    var seconds = parseInt(document.body.getAttribute("data-refresh") || "0", 10);
    if (seconds > 0 && document.querySelector("[data-live]")) { window.setInterval(refresh, seconds * 1000); }
  });
})();
