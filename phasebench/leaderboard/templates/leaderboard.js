// phasebench leaderboard: sorting, filtering and toggles. No network, no dependencies.
(function () {
  "use strict";
  var table = document.getElementById("leaderboard");
  if (!table) { return; }
  var body = table.tBodies[0];
  var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);

  function cellValue(row, index, type) {
    var v = row.cells[index].getAttribute("data-v");
    if (v === null || v === "" || v === "None") { return null; }
    return type === "num" ? parseFloat(v) : v.toLowerCase();
  }

  function sortBy(index, descending) {
    var type = headers[index].getAttribute("data-type");
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = cellValue(a, index, type), y = cellValue(b, index, type);
      if (x === null && y === null) {
        return parseInt(a.getAttribute("data-order"), 10) - parseInt(b.getAttribute("data-order"), 10);
      }
      if (x === null) { return 1; }   // missing values always last
      if (y === null) { return -1; }
      var c = x < y ? -1 : (x > y ? 1 : 0);
      if (c === 0) {  // ties keep the published order (rank, then worst phase)
        return parseInt(a.getAttribute("data-order"), 10) - parseInt(b.getAttribute("data-order"), 10);
      }
      return descending ? -c : c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    headers.forEach(function (h) { h.classList.remove("sorted-asc", "sorted-desc"); });
    headers[index].classList.add(descending ? "sorted-desc" : "sorted-asc");
    headers[index].setAttribute("data-desc", descending ? "1" : "0");
  }

  headers.forEach(function (th, index) {
    th.addEventListener("click", function () {
      var was = th.getAttribute("data-desc");
      var numeric = th.getAttribute("data-type") === "num" && th.getAttribute("data-key") !== "rank";
      var descending = was === null ? numeric : was !== "1";
      sortBy(index, descending);
    });
  });

  var boardFilter = document.getElementById("board-filter");
  var textFilter = document.getElementById("text-filter");
  var showReported = document.getElementById("show-reported");
  function applyFilters() {
    var board = boardFilter.value, text = textFilter.value.toLowerCase();
    Array.prototype.forEach.call(body.rows, function (row) {
      var ok = (!board || row.getAttribute("data-board") === board) &&
        (!text || row.textContent.toLowerCase().indexOf(text) !== -1) &&
        (showReported.checked || !row.classList.contains("reported"));
      row.hidden = !ok;
    });
  }
  boardFilter.addEventListener("change", applyFilters);
  textFilter.addEventListener("input", applyFilters);
  showReported.addEventListener("change", applyFilters);

  document.getElementById("show-phases").addEventListener("change", function (e) {
    table.classList.toggle("show-phases", e.target.checked);
  });

  Array.prototype.forEach.call(document.querySelectorAll("input[name=rank-by]"), function (radio) {
    radio.addEventListener("change", function () {
      var by = radio.value;
      Array.prototype.forEach.call(body.querySelectorAll("td.rank"), function (cell) {
        var v = cell.getAttribute("data-" + by);
        cell.setAttribute("data-v", v);
        cell.textContent = v ? v : "\u2014";
      });
      sortBy(0, false);
    });
  });
})();
