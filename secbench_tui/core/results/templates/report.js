"use strict";
// Filters for the per-case section. Reads only the page's own elements and attributes,
// writes only `hidden`, `open` and data attributes: no HTML is ever built from strings.
// The state is also read from the URL fragment (#failures=1&app=NAME&model=NAME), so a
// filtered view can be shared as a link; #cN opens case N.
(function () {
  var body = document.body;
  var cases = Array.prototype.slice.call(document.querySelectorAll("details.case"));
  var appBox = document.getElementById("f-app");
  var modelBox = document.getElementById("f-model");
  var failBox = document.getElementById("f-failures");
  var shown = document.getElementById("f-shown");
  if (!appBox || !modelBox || !failBox || !shown) {
    body.dataset.filterReady = "1";
    return;
  }

  function hasOption(select, value) {
    for (var i = 0; i < select.options.length; i++) {
      if (select.options[i].value === value) return true;
    }
    return false;
  }

  function apply() {
    var app = appBox.value, model = modelBox.value, failures = failBox.checked;
    var visible = 0;
    cases.forEach(function (item) {
      var rows = item.querySelectorAll("tr[data-model]");
      var hasModel = model === "", failed = false;
      for (var i = 0; i < rows.length; i++) {
        var row = rows[i];
        var mine = model === "" || row.dataset.model === model;
        row.hidden = !mine;
        if (mine && model !== "") hasModel = true;
        if (mine && model !== "" && row.dataset.pass === "0") failed = true;
      }
      if (model === "") failed = item.dataset.failed === "1";
      var show = (app === "" || item.dataset.app === app) && hasModel && (!failures || failed);
      item.hidden = !show;
      if (show) visible++;
    });
    shown.textContent = String(visible);
    body.dataset.visibleCases = String(visible);
    body.dataset.filter = JSON.stringify({ app: app, model: model, failures: failures });
  }

  function fromFragment() {
    var fragment = location.hash.replace(/^#/, "");
    if (/^c\d+$/.test(fragment)) {
      var target = document.getElementById(fragment);
      if (target && target.tagName === "DETAILS") {
        target.hidden = false;
        target.open = true;
      }
      return;
    }
    var params = new URLSearchParams(fragment);
    var app = params.get("app"), model = params.get("model");
    if (app !== null && hasOption(appBox, app)) appBox.value = app;
    if (model !== null && hasOption(modelBox, model)) modelBox.value = model;
    if (params.has("failures")) failBox.checked = params.get("failures") === "1";
    if (params.get("open") === "1") cases.forEach(function (item) { item.open = true; });
    apply();
  }

  appBox.addEventListener("change", apply);
  modelBox.addEventListener("change", apply);
  failBox.addEventListener("change", apply);
  document.getElementById("f-open").addEventListener("click", function () {
    cases.forEach(function (item) { if (!item.hidden) item.open = true; });
  });
  document.getElementById("f-close").addEventListener("click", function () {
    cases.forEach(function (item) { item.open = false; });
  });
  window.addEventListener("hashchange", fromFragment);
  apply();
  fromFragment();
  body.dataset.filterReady = "1";
})();
