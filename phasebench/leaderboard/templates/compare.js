// phasebench leaderboard, compare page: two entries of one board side by side and, where both
// are runs of one split, the paired difference A - B the build computed, with its verdict
// sentence first. Every value arrives as text (written by the build); this script only places
// it (textContent, never markup). The two entries live in the address (?a=<row anchor>&b=<row
// anchor>); a missing or unknown one is said in a notice, and the address is kept as it was
// until the visitor picks.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("compare-data").textContent);
  var pickA = document.getElementById("pick-a");
  var pickB = document.getElementById("pick-b");
  function known(anchor) {
    return anchor !== null && Object.prototype.hasOwnProperty.call(data.entries, anchor);
  }
  var COLUMNS = ["statistic", "A", "B", "A − B", document.querySelector("#paired thead th:nth-child(5)").textContent, "p"];

  function cell(tag, text, label) {
    var c = document.createElement(tag);
    c.textContent = text;
    if (tag === "th") { c.setAttribute("scope", "row"); }
    if (label) { c.setAttribute("data-label", label); }
    return c;
  }

  function link(entry) {
    var a = document.createElement("a");
    a.href = "../" + entry.page;
    a.textContent = entry.label + (entry.preliminary ? " (preliminary)" : "");
    return a;
  }

  function missing(side, value) {
    if (value === null || value === "") { return "Entry " + side + " is missing from the address (?" + side.toLowerCase() + "=…)"; }
    return "Entry " + side + " (" + value + ") is not an entry of this board";
  }

  function show(fromAddress) {
    var a = known(pickA.value) ? data.entries[pickA.value] : null;
    var b = known(pickB.value) ? data.entries[pickB.value] : null;
    var notice = document.getElementById("notice");
    var problems = [];
    if (fromAddress) {
      var params = new URLSearchParams(location.search);
      if (!a) { problems.push(missing("A", params.get("a"))); }
      if (!b) { problems.push(missing("B", params.get("b"))); }
    } else {
      if (!a) { problems.push("Pick entry A"); }
      if (!b) { problems.push("Pick entry B"); }
    }
    notice.hidden = problems.length === 0;
    notice.textContent = problems.length ? problems.join("; ") + ": pick two entries below." : "";
    ["a", "b"].forEach(function (side) {
      var entry = side === "a" ? a : b;
      var name = document.getElementById("name-" + side);
      name.textContent = entry ? side.toUpperCase() + ": " + entry.label : "";
    });
    var verdict = document.getElementById("verdict");
    var body = document.querySelector("#side-by-side tbody");
    var paired = document.querySelector("#paired tbody");
    body.textContent = "";
    paired.textContent = "";
    verdict.textContent = "";
    document.getElementById("paired-note").textContent = "";
    var headA = document.getElementById("head-a"), headB = document.getElementById("head-b");
    headA.textContent = "A"; headB.textContent = "B";
    document.getElementById("side-by-side").hidden = !(a && b);
    document.getElementById("paired").hidden = true;
    document.getElementById("paired-none").hidden = true;
    if (!(a && b)) { return; }
    headA.textContent = "A: "; headA.appendChild(link(a));
    headB.textContent = "B: "; headB.appendChild(link(b));
    a.stats.forEach(function (line, i) {
      var tr = document.createElement("tr");
      tr.appendChild(cell("th", line[0]));
      tr.appendChild(cell("td", line[1], "A"));
      tr.appendChild(cell("td", b.stats[i] ? b.stats[i][1] : "", "B"));
      body.appendChild(tr);
    });
    var key = pickA.value + "|" + pickB.value;
    var pair = Object.prototype.hasOwnProperty.call(data.pairs, key) ? data.pairs[key] : null;
    if (pickA.value === pickB.value) {
      verdict.textContent = "A and B are the same entry: pick two different ones.";
      return;
    }
    document.getElementById("paired-none").hidden = !!pair;
    document.getElementById("paired").hidden = !pair;
    if (!pair) {
      verdict.textContent = "A and B are not runs of one split: no paired comparison, their numbers side by side only.";
      return;
    }
    verdict.textContent = pair.verdict;
    pair.lines.forEach(function (line) {
      var tr = document.createElement("tr");
      tr.appendChild(cell("th", line.label));
      ["a", "b", "difference", "ci", "p"].forEach(function (k, i) {
        tr.appendChild(cell("td", line[k], COLUMNS[i + 1]));
      });
      paired.appendChild(tr);
    });
    document.getElementById("paired-note").textContent = "A: " + a.label + "; B: " + b.label +
      "; " + pair.n_base + " shared base items.";
  }

  function picked() {
    var params = new URLSearchParams();
    params.set("a", pickA.value);
    params.set("b", pickB.value);
    history.replaceState(null, "", location.pathname + "?" + params.toString());
    show(false);
  }

  var params = new URLSearchParams(location.search);
  pickA.value = known(params.get("a")) ? params.get("a") : "";
  pickB.value = known(params.get("b")) ? params.get("b") : "";
  pickA.addEventListener("change", picked);
  pickB.addEventListener("change", picked);
  show(true);
})();
