// phasebench leaderboard: sorting (within each board), filtering and toggles.
// No network, no dependencies. Sort headers are buttons, so Tab reaches them and Enter or Space
// sorts; the sorted header carries aria-sort.
(function () {
  "use strict";
  var table = document.getElementById("leaderboard");
  if (!table) { return; }
  var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);
  var groups = Array.prototype.slice.call(table.tBodies);

  function dataRows(group) {
    return Array.prototype.filter.call(group.rows, function (r) {
      return !r.classList.contains("board-head");
    });
  }

  function cellValue(row, index, type) {
    var cell = row.cells[index];
    var v = cell ? cell.getAttribute("data-v") : null;
    if (v === null || v === "" || v === "None") { return null; }
    return type === "num" ? parseFloat(v) : v.toLowerCase();
  }

  function order(row) { return parseInt(row.getAttribute("data-order"), 10); }

  // Rows never leave their board: each tbody (one task at one length, or the published
  // figures) is sorted on its own, under its own heading row.
  function sortBy(index, descending) {
    var type = headers[index].getAttribute("data-type");
    groups.forEach(function (group) {
      var rows = dataRows(group);
      rows.sort(function (a, b) {
        var x = cellValue(a, index, type), y = cellValue(b, index, type);
        if (x === null && y === null) { return order(a) - order(b); }
        if (x === null) { return 1; }   // missing values always last
        if (y === null) { return -1; }
        var c = x < y ? -1 : (x > y ? 1 : 0);
        if (c === 0) { return order(a) - order(b); }  // ties keep the published order
        return descending ? -c : c;
      });
      rows.forEach(function (r) { group.appendChild(r); });
    });
    headers.forEach(function (h) { h.removeAttribute("aria-sort"); });
    headers[index].setAttribute("aria-sort", descending ? "descending" : "ascending");
  }

  headers.forEach(function (th, index) {
    var button = th.querySelector("button");
    if (!button) { return; }
    button.addEventListener("click", function () {
      var was = th.getAttribute("aria-sort");
      var numeric = th.getAttribute("data-type") === "num" && th.getAttribute("data-key") !== "rank";
      // first click: numbers high to low (rank low to high), text A to Z; then alternate
      var descending = was === null ? numeric : was !== "descending";
      sortBy(index, descending);
    });
  });

  var boardFilter = document.getElementById("board-filter");
  var kvFilter = document.getElementById("kv-filter");
  var textFilter = document.getElementById("text-filter");
  var showReported = document.getElementById("show-reported");
  function applyFilters() {
    var board = boardFilter.value, kv = kvFilter.value, text = textFilter.value.toLowerCase();
    groups.forEach(function (group) {
      var any = false;
      dataRows(group).forEach(function (row) {
        var ok = (!board || row.getAttribute("data-board") === board) &&
          (!kv || row.getAttribute("data-kv") === kv) &&
          (!text || row.textContent.toLowerCase().indexOf(text) !== -1) &&
          (showReported.checked || !row.classList.contains("reported"));
        row.hidden = !ok;
        any = any || ok;
      });
      group.hidden = !any;
    });
  }
  boardFilter.addEventListener("change", applyFilters);
  kvFilter.addEventListener("change", applyFilters);
  textFilter.addEventListener("input", applyFilters);
  showReported.addEventListener("change", applyFilters);

  document.getElementById("show-phases").addEventListener("change", function (e) {
    table.classList.toggle("show-phases", e.target.checked);
  });

  Array.prototype.forEach.call(document.querySelectorAll("input[name=rank-by]"), function (radio) {
    radio.addEventListener("change", function () {
      var by = radio.value;
      Array.prototype.forEach.call(table.querySelectorAll("td.rank"), function (cell) {
        var v = cell.getAttribute("data-" + by);
        cell.setAttribute("data-v", v);
        cell.textContent = v ? v : "\u2014";
      });
      sortBy(0, false);
    });
  });
})();
