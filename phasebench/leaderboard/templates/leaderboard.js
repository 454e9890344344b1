// phasebench leaderboard, one board per page: sorting, filters, rank mode, per-phase columns,
// top-N with "show all", a live count, and the chart beside the table following all of them.
// The state lives in the URL (?sort=gap&dir=desc&rank=average&kv=...&q=...&phases=1&all=1), so
// any view can be shared. No network, no dependencies. Sort headers are buttons, so Tab reaches
// them and Enter or Space sorts; the sorted header carries aria-sort.
(function () {
  "use strict";
  var table = document.getElementById("leaderboard");
  if (!table) { return; }
  var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var top = parseInt(table.getAttribute("data-top"), 10) || rows.length;
  var kvFilter = document.getElementById("kv-filter");
  var textFilter = document.getElementById("text-filter");
  var showPhases = document.getElementById("show-phases");
  var showAll = document.getElementById("show-all");
  var count = document.getElementById("count");
  var noMatch = document.getElementById("no-match");
  var title = document.getElementById("board-title");
  var rankRadios = Array.prototype.slice.call(document.querySelectorAll("input[name=rank-by]"));
  var points = {};
  Array.prototype.forEach.call(document.querySelectorAll("#scatter .pt"), function (g) {
    points[g.getAttribute("data-i")] = g;
  });
  var RANKED = { worst: "worst phase (cross-fitted)", average: "average" };
  var kvIndex = keyIndex("kv_cache");
  var state = { sort: "rank", dir: "asc", rank: "worst", kv: "", q: "", phases: false, all: false };

  function keyIndex(key) {
    for (var i = 0; i < headers.length; i++) {
      if (headers[i].getAttribute("data-key") === key) { return i; }
    }
    return -1;
  }

  // A cell's sort key is its data-v, or its text when it has none.
  function cellValue(row, index, type) {
    var cell = row.cells[index];
    var v = cell ? (cell.hasAttribute("data-v") ? cell.getAttribute("data-v") : cell.textContent) : null;
    if (v === null || v === "" || v === "None") { return null; }
    return type === "num" ? parseFloat(v) : v.toLowerCase();
  }

  function order(row) { return parseInt(row.getAttribute("data-order"), 10); }

  function sortRows() {
    var index = keyIndex(state.sort);
    if (index < 0) { state.sort = "rank"; index = 0; }
    var type = headers[index].getAttribute("data-type");
    var descending = state.dir === "desc";
    // entries sharing a rank are ordered by the ranked statistic (high first), then as published
    var tie = state.sort === "rank" ? keyIndex(table.getAttribute("data-rank-" + state.rank)) : -1;
    var keyed = rows.map(function (r) {
      return [cellValue(r, index, type), order(r), r, tie < 0 ? null : cellValue(r, tie, "num")];
    });
    keyed.sort(function (a, b) {
      var x = a[0], y = b[0];
      if (x === null && y === null) { return a[1] - b[1]; }
      if (x === null) { return 1; }   // missing values always last
      if (y === null) { return -1; }
      var c = x < y ? -1 : (x > y ? 1 : 0);
      if (c === 0 && a[3] !== null && b[3] !== null && a[3] !== b[3]) { return b[3] - a[3]; }
      if (c === 0) { return a[1] - b[1]; }  // ties keep the published order
      return descending ? -c : c;
    });
    rows = keyed.map(function (k) { return k[2]; });
    var fragment = document.createDocumentFragment();
    rows.forEach(function (r) { fragment.appendChild(r); });
    body.appendChild(fragment);
    headers.forEach(function (h) { h.removeAttribute("aria-sort"); });
    headers[index].setAttribute("aria-sort", descending ? "descending" : "ascending");
  }

  var shownRank = "worst";
  function setRankMode() {
    if (shownRank !== state.rank) {  // rewrite the rank cells only when the mode changes
      shownRank = state.rank;
      rows.forEach(function (row) {
        var cell = row.cells[0];
        var v = cell.getAttribute("data-" + state.rank);
        var range = cell.getAttribute("data-" + state.rank + "-range");
        cell.setAttribute("data-v", v);
        cell.querySelector(".rk").textContent = v ? v : "\u2014";
        var small = cell.querySelector(".rki");
        if (small) { small.textContent = range || ""; }
      });
    }
    rankRadios.forEach(function (r) { r.checked = r.value === state.rank; });
    var ranked = "ranked by " + RANKED[state.rank];
    title.querySelector(".ranked-by").textContent = ranked;
    table.caption.textContent = title.getAttribute("data-board") + ", " + ranked;
    document.title = title.getAttribute("data-board") + ", " + ranked + " \u00b7 phasebench leaderboard";
  }

  var texts = {};
  function rowText(row) {
    var key = row.getAttribute("data-order");
    if (!(key in texts)) { texts[key] = row.textContent.toLowerCase(); }
    return texts[key];
  }

  function applyFilters() {
    var text = state.q.toLowerCase(), matching = 0, shown = 0, labelled = 0;
    rows.forEach(function (row) {
      var ok = (!state.kv || row.cells[kvIndex].getAttribute("data-v") === state.kv) &&
        (!text || rowText(row).indexOf(text) !== -1);
      if (ok) { matching += 1; }
      var visible = ok && (state.all || matching <= top);
      if (row.hidden === visible) { row.hidden = !visible; }  // touch the DOM only on a change
      if (visible) { shown += 1; }
      // place numbers follow the rows as shown, and so do the chart's numbers
      var place = String(matching);
      var placeLink = row.querySelector(".place");
      if (placeLink && placeLink.textContent !== place) { placeLink.textContent = place; }
      var point = points[row.getAttribute("data-order")];
      if (point) {
        var label = point.querySelector("text");
        if (label && label.textContent !== place) { label.textContent = place; }
        var lead = visible && labelled < 3;
        if (lead) { labelled += 1; }
        if (point.classList.contains("off") === visible) { point.classList.toggle("off", !visible); }
        if (point.classList.contains("hl") !== lead) { point.classList.toggle("hl", lead); }
      }
    });
    count.textContent = shown + " of " + rows.length + " entries shown" +
      (matching < rows.length ? " (" + matching + " match the filters)" : "");
    noMatch.hidden = matching !== 0;
  }

  function writeUrl() {
    var params = new URLSearchParams();
    if (state.sort !== "rank" || state.dir !== "asc") { params.set("sort", state.sort); params.set("dir", state.dir); }
    if (state.rank !== "worst") { params.set("rank", state.rank); }
    if (state.kv) { params.set("kv", state.kv); }
    if (state.q) { params.set("q", state.q); }
    if (state.phases) { params.set("phases", "1"); }
    if (state.all) { params.set("all", "1"); }
    var query = params.toString();
    history.replaceState(null, "", location.pathname + (query ? "?" + query : "") + location.hash);
  }

  function render() {
    setRankMode();
    sortRows();
    table.classList.toggle("show-phases", state.phases);
    applyFilters();
    writeUrl();
  }

  function readUrl() {
    var params = new URLSearchParams(location.search);
    if (params.get("sort") && keyIndex(params.get("sort")) >= 0) { state.sort = params.get("sort"); }
    if (params.get("dir") === "desc") { state.dir = "desc"; }
    if (params.get("rank") === "average") { state.rank = "average"; }
    var kv = params.get("kv") || "";
    if (kv && Array.prototype.some.call(kvFilter.options, function (o) { return o.value === kv; })) {
      state.kv = kv;
    }
    state.q = params.get("q") || "";
    state.phases = params.get("phases") === "1";
    state.all = params.get("all") === "1";
    kvFilter.value = state.kv;
    textFilter.value = state.q;
    showPhases.checked = state.phases;
    if (showAll) { showAll.checked = state.all; }
  }

  headers.forEach(function (th) {
    var button = th.querySelector("button");
    if (!button) { return; }
    button.addEventListener("click", function () {
      var key = th.getAttribute("data-key");
      var numeric = th.getAttribute("data-type") === "num" && key !== "rank";
      if (state.sort === key) {
        state.dir = state.dir === "desc" ? "asc" : "desc";
      } else {
        // first click: numbers high to low (rank low to high), text A to Z; then alternate
        state.sort = key;
        state.dir = numeric ? "desc" : "asc";
      }
      render();
    });
  });
  kvFilter.addEventListener("change", function () { state.kv = kvFilter.value; render(); });
  textFilter.addEventListener("input", function () { state.q = textFilter.value; render(); });
  showPhases.addEventListener("change", function () { state.phases = showPhases.checked; render(); });
  if (showAll) { showAll.addEventListener("change", function () { state.all = showAll.checked; render(); }); }
  rankRadios.forEach(function (radio) {
    radio.addEventListener("change", function () {
      state.rank = radio.value;
      state.sort = "rank";
      state.dir = "asc";
      render();
    });
  });

  // Pointing at a row or a point labels that point and marks the row.
  function mark(index, on) {
    var point = points[index];
    if (point) { point.classList.toggle("focus", on); }
    rows.forEach(function (r) {
      if (r.getAttribute("data-order") === index) { r.classList.toggle("focus", on); }
    });
  }
  rows.forEach(function (row) {
    var index = row.getAttribute("data-order");
    row.addEventListener("mouseenter", function () { mark(index, true); });
    row.addEventListener("mouseleave", function () { mark(index, false); });
    row.addEventListener("focusin", function () { mark(index, true); });
    row.addEventListener("focusout", function () { mark(index, false); });
  });
  Object.keys(points).forEach(function (index) {
    points[index].addEventListener("mouseenter", function () { mark(index, true); });
    points[index].addEventListener("mouseleave", function () { mark(index, false); });
  });

  readUrl();
  render();
})();
