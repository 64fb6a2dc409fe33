"""The script a flame graph's SVG embeds: hover (the details line), click
to zoom, search (Ctrl-F), as the module docstring of the package says."""

# The embedded script.  Plain ES5, no dependency; works when the SVG is
# opened on its own and when it is inlined in an HTML page.
SCRIPT = r"""
(function () {
  "use strict";
  var svg = document.currentScript ? document.currentScript.ownerSVGElement ||
      document.currentScript.closest("svg") : null;
  if (!svg) { var all = document.getElementsByTagName("svg"); svg = all[all.length - 1]; }
  var NS = "http://www.w3.org/2000/svg";
  var plotw = parseFloat(svg.getAttribute("data-plotw"));
  var xpad = parseFloat(svg.getAttribute("data-xpad"));
  var fontsize = parseFloat(svg.getAttribute("data-fontsize"));
  var fontwidth = parseFloat(svg.getAttribute("data-fontwidth"));
  var total = parseFloat(svg.getAttribute("data-total"));
  var frames = svg.querySelector("#frames");
  var details = svg.querySelector("#details");
  var unzoomBtn = svg.querySelector("#unzoom");
  var searchBtn = svg.querySelector("#search");
  var resetSearchBtn = svg.querySelector("#resetsearch");
  var matchedText = svg.querySelector("#matched");
  var nodes = frames ? Array.prototype.slice.call(frames.children) : [];
  var currentSearch = null;

  function rectOf(g) { return g.querySelector("rect"); }
  function textOf(g) { return g.querySelector("text"); }
  function label(name, w) {
    var chars = Math.floor((w - 6) / (fontsize * fontwidth));
    if (chars < 3) return "";
    if (name.length <= chars) return name;
    return name.substring(0, chars - 2) + "..";
  }
  function place(g, x, w) {
    var r = rectOf(g), t = textOf(g);
    r.setAttribute("x", x.toFixed(2));
    r.setAttribute("width", w.toFixed(2));
    t.setAttribute("x", (x + 3).toFixed(2));
    t.textContent = label(g.getAttribute("data-name"), w);
  }
  function show(g, on) {
    if (on) g.classList.remove("hide"); else g.classList.add("hide");
  }
  function zoom(g) {
    var zr = rectOf(g);
    var zx = parseFloat(zr.getAttribute("data-ox"));
    var zw = parseFloat(zr.getAttribute("data-ow"));
    var zd = parseInt(g.getAttribute("data-d"), 10);
    var ratio = plotw / zw;
    var eps = 0.0001;
    for (var i = 0; i < nodes.length; i++) {
      var n = nodes[i], r = rectOf(n);
      var x = parseFloat(r.getAttribute("data-ox"));
      var w = parseFloat(r.getAttribute("data-ow"));
      var d = parseInt(n.getAttribute("data-d"), 10);
      if (d <= zd) {
        var holds = x <= zx + eps && x + w >= zx + zw - eps;
        show(n, holds);
        if (holds) place(n, xpad, plotw);
      } else {
        var inside = x >= zx - eps && x + w <= zx + zw + eps;
        show(n, inside);
        if (inside) place(n, xpad + (x - zx) * ratio, w * ratio);
      }
    }
    unzoomBtn.classList.remove("hide");
    svg.setAttribute("data-zoomed", g.getAttribute("data-name"));
    if (currentSearch !== null) search(currentSearch);
  }
  function unzoom() {
    for (var i = 0; i < nodes.length; i++) {
      var n = nodes[i], r = rectOf(n);
      show(n, true);
      place(n, parseFloat(r.getAttribute("data-ox")), parseFloat(r.getAttribute("data-ow")));
    }
    unzoomBtn.classList.add("hide");
    svg.removeAttribute("data-zoomed");
    if (currentSearch !== null) search(currentSearch);
  }
  function search(term) {
    var re;
    try { re = new RegExp(term); } catch (e) { matchedText.textContent = "bad regex"; return 0; }
    currentSearch = term;
    var spans = [];
    for (var i = 0; i < nodes.length; i++) {
      var n = nodes[i], r = rectOf(n);
      if (!r.hasAttribute("data-fill")) r.setAttribute("data-fill", r.getAttribute("fill"));
      var hit = re.test(n.getAttribute("data-name"));
      r.setAttribute("fill", hit ? "rgb(230,0,230)" : r.getAttribute("data-fill"));
      if (hit) n.setAttribute("data-match", "1"); else n.removeAttribute("data-match");
      if (hit && !n.classList.contains("hide"))
        spans.push([parseFloat(r.getAttribute("data-ox")), parseFloat(r.getAttribute("data-ow"))]);
    }
    // Share covered by matches, nested matches counted once.
    spans.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });
    var covered = 0, end = -1;
    for (var j = 0; j < spans.length; j++) {
      var s = spans[j][0], e = s + spans[j][1];
      if (s >= end) { covered += e - s; end = e; }
      else if (e > end) { covered += e - end; end = e; }
    }
    var base = plotw;
    var zoomed = svg.getAttribute("data-zoomed");
    if (zoomed !== null) {
      for (var k = 0; k < nodes.length; k++) {
        if (nodes[k].getAttribute("data-name") === zoomed && !nodes[k].classList.contains("hide")) {
          base = Math.min(base, parseFloat(rectOf(nodes[k]).getAttribute("data-ow")));
        }
      }
    }
    var pct = spans.length ? 100 * Math.min(covered, base) / base : 0;
    matchedText.textContent = "Matched: " + pct.toFixed(1) + "%";
    svg.setAttribute("data-matched", pct.toFixed(2));
    resetSearchBtn.classList.remove("hide");
    return pct;
  }
  function resetSearch() {
    for (var i = 0; i < nodes.length; i++) {
      var r = rectOf(nodes[i]);
      if (r.hasAttribute("data-fill")) r.setAttribute("fill", r.getAttribute("data-fill"));
      nodes[i].removeAttribute("data-match");
    }
    currentSearch = null;
    matchedText.textContent = " ";
    svg.removeAttribute("data-matched");
    resetSearchBtn.classList.add("hide");
  }
  function searchPrompt() {
    var term = window.prompt("Search for (regular expression):", currentSearch || "");
    if (term === null) return;
    if (term === "") resetSearch(); else search(term);
  }
  function frameOf(el) {
    while (el && el !== svg) {
      if (el.parentNode === frames) return el;
      el = el.parentNode;
    }
    return null;
  }
  if (frames) {
    frames.addEventListener("click", function (ev) {
      var g = frameOf(ev.target);
      if (g) zoom(g);
    });
    frames.addEventListener("mouseover", function (ev) {
      var g = frameOf(ev.target);
      if (!g) return;
      details.textContent = g.getAttribute("data-info");
      details.classList.remove("hint");
    });
    frames.addEventListener("mouseout", function (ev) {
      if (!frameOf(ev.target)) return;
      details.textContent = details.getAttribute("data-hint") || " ";
      details.classList.add("hint");
    });
  }
  unzoomBtn.addEventListener("click", unzoom);
  searchBtn.addEventListener("click", searchPrompt);
  resetSearchBtn.addEventListener("click", resetSearch);
  window.addEventListener("keydown", function (ev) {
    if ((ev.ctrlKey || ev.metaKey) && (ev.key === "f" || ev.key === "F")) {
      ev.preventDefault();
      searchPrompt();
    } else if (ev.key === "Escape") {
      unzoom(); resetSearch();
    }
  });
  // For scripted use (and tests): flamegraph.zoom(g), .unzoom(), .search(re).
  svg.flamegraph = { zoom: zoom, unzoom: unzoom, search: search, resetSearch: resetSearch };
  // --flame, the SVG opened on its own: the root is at the bottom of a page
  // that may be taller than the window; open it scrolled there.  (Inlined in
  // a page, the page's scrolling is the page's.)
  if (svg.getAttribute("data-orientation") === "flame" && document.documentElement === svg) {
    var toRoot = function () {
      window.scrollTo(0, Math.max(0, svg.getBoundingClientRect().height - window.innerHeight));
      svg.setAttribute("data-scrolled", String(Math.round(window.scrollY)));
    };
    if (document.readyState === "complete") toRoot(); else window.addEventListener("load", toRoot);
  }
  svg.setAttribute("data-ready", "1");
})();
"""
