// phasebench leaderboard, compare page: two entries of one board side by side and, where both
// are runs of one split, the paired difference the build computed. Every value arrives as text
// (written by the build); this script only places it (textContent, never markup). The two
// entries live in the address (?a=<row anchor>&b=<row anchor>).
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("compare-data").textContent);
  var pickA = document.getElementById("pick-a");
  var pickB = document.getElementById("pick-b");
  var anchors = Object.keys(data.entries);
  var order = Array.prototype.map.call(pickA.options, function (o) { return o.value; });

  function cell(tag, text) {
    var c = document.createElement(tag);
    c.textContent = text;
    if (tag === "th") { c.setAttribute("scope", "row"); }
    return c;
  }

  function link(entry) {
    var a = document.createElement("a");
    a.href = "../" + entry.page;
    a.textContent = entry.label + (entry.preliminary ? " (preliminary)" : "");
    return a;
  }

  function show() {
    var a = data.entries[pickA.value], b = data.entries[pickB.value];
    var headA = document.getElementById("head-a"), headB = document.getElementById("head-b");
    headA.textContent = "A: "; headA.appendChild(link(a));
    headB.textContent = "B: "; headB.appendChild(link(b));
    var body = document.querySelector("#side-by-side tbody");
    body.textContent = "";
    a.stats.forEach(function (line, i) {
      var tr = document.createElement("tr");
      tr.appendChild(cell("th", line[0]));
      tr.appendChild(cell("td", line[1]));
      tr.appendChild(cell("td", b.stats[i] ? b.stats[i][1] : ""));
      body.appendChild(tr);
    });
    var first = order.indexOf(pickA.value) <= order.indexOf(pickB.value) ? pickA.value : pickB.value;
    var second = first === pickA.value ? pickB.value : pickA.value;
    var pair = data.pairs[first + "|" + second];
    var paired = document.querySelector("#paired tbody");
    paired.textContent = "";
    document.getElementById("paired-none").hidden = !!pair || first === second;
    document.getElementById("paired").hidden = !pair;
    var note = document.getElementById("paired-note");
    note.textContent = "";
    if (pair) {
      pair.lines.forEach(function (line) {
        var tr = document.createElement("tr");
        tr.appendChild(cell("th", line.label));
        ["before", "after", "difference", "ci", "p"].forEach(function (k) {
          tr.appendChild(cell("td", line[k]));
        });
        paired.appendChild(tr);
      });
      note.textContent = "Earlier: " + data.entries[first].label + "; later: " +
        data.entries[second].label + "; " + pair.n_base + " shared base items.";
    }
    var params = new URLSearchParams();
    params.set("a", pickA.value);
    params.set("b", pickB.value);
    history.replaceState(null, "", location.pathname + "?" + params.toString());
  }

  var params = new URLSearchParams(location.search);
  pickA.value = anchors.indexOf(params.get("a")) >= 0 ? params.get("a") : order[0];
  pickB.value = anchors.indexOf(params.get("b")) >= 0 ? params.get("b") : order[Math.min(1, order.length - 1)];
  pickA.addEventListener("change", show);
  pickB.addEventListener("change", show);
  show();
})();
