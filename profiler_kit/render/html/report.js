/* Draws the report's charts with Plotly from the JSON embedded in the page. */
(function () {
  "use strict";
  var charts = JSON.parse(document.getElementById("profkit-charts").textContent);
  var scheme = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;

  function css(name) {
    return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  }

  function merge(target, source) {
    Object.keys(source).forEach(function (k) {
      var v = source[k];
      if (v && typeof v === "object" && !Array.isArray(v)) {
        target[k] = merge(target[k] && typeof target[k] === "object" ? target[k] : {}, v);
      } else {
        target[k] = v;
      }
    });
    return target;
  }

  /* Colours from the page's theme; paper is always printed dark on light. */
  function themeLayout(layout, forPrint) {
    var fg = forPrint ? "#000000" : css("--fg");
    var grid = forPrint ? "#dddddd" : css("--grid");
    var muted = forPrint ? "#444444" : css("--muted");
    var t = {
      paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)",
      font: { color: fg, family: getComputedStyle(document.body).fontFamily, size: 12 },
      legend: { font: { color: fg } },
      hoverlabel: { font: { family: getComputedStyle(document.body).fontFamily } },
      margin: { t: 24, r: 16, b: 48, l: 64 }
    };
    Object.keys(layout).concat(["xaxis", "yaxis"]).forEach(function (k) {
      if (/^[xy]axis\d*$/.test(k)) {
        t[k] = { gridcolor: grid, zerolinecolor: grid, linecolor: muted,
                 tickfont: { color: fg }, title: { font: { color: fg } } };
      }
    });
    return t;
  }

  function duration(ns) {
    var units = [["s", 1e9], ["ms", 1e6], ["µs", 1e3]];
    for (var i = 0; i < units.length; i++) {
      if (Math.abs(ns) >= units[i][1]) return (ns / units[i][1]).toPrecision(3) + " " + units[i][0];
    }
    return ns + " ns";
  }

  /* A compact mini trace view becomes one line trace per class: each interval is a
     thick horizontal segment on its lane's row; gaps (null) separate segments. */
  function timelineFigure(t, layout) {
    var byClass = {};
    for (var i = 0; i < t.row.length; i++) {
      var k = t.klass[i], tr = byClass[k];
      if (!tr) tr = byClass[k] = { x: [], y: [], text: [] };
      var x0 = t.offset_ns[i] / 1e6, x1 = (t.offset_ns[i] + t.dur_ns[i]) / 1e6;
      var label = t.names[t.name[i]] + "<br>" + duration(t.dur_ns[i]) + " at " + x0.toPrecision(4) + " ms";
      tr.x.push(x0, x1, null); tr.y.push(t.row[i], t.row[i], null); tr.text.push(label, label, null);
    }
    var width = Math.max(3, Math.min(14, 560 / Math.max(t.rows, 1)));
    var data = Object.keys(byClass).map(Number).sort(function (a, b) { return a - b; }).map(function (k) {
      var tr = byClass[k];
      return { type: "scatter", mode: "lines", name: t.classes[k], x: tr.x, y: tr.y, text: tr.text,
               line: { color: t.colors[k], width: width }, connectgaps: false,
               hovertemplate: "%{text}<extra>" + t.classes[k] + "</extra>" };
    });
    var shapes = t.lanes.slice(1).map(function (lane) {
      return { type: "line", xref: "paper", x0: 0, x1: 1, y0: lane.row - 0.5, y1: lane.row - 0.5,
               line: { color: css("--border"), width: 1 } };
    });
    var out = merge({}, layout);
    merge(out, {
      height: Math.max(260, t.rows * (width + 5) + 110), shapes: shapes, hovermode: "closest",
      yaxis: { tickvals: t.lanes.map(function (l) { return l.row + (l.rows - 1) / 2; }),
               ticktext: t.lanes.map(function (l) { return l.label; }),
               range: [t.rows - 0.5, -0.5], showgrid: false, zeroline: false, fixedrange: true }
    });
    return { data: data, layout: out };
  }

  var drawn = 0;
  function draw(c) {
    var el = document.getElementById(c.id);
    var data = c.data, layout = c.layout;
    if (c.kind === "timeline") {
      var fig = timelineFigure(c.timeline, layout);
      data = fig.data; layout = fig.layout;
    }
    layout = merge(merge({ height: 420 }, layout), themeLayout(layout));
    return Plotly.newPlot(el, data, layout, {
      responsive: true, displaylogo: false, scrollZoom: false,
      toImageButtonOptions: { filename: c.id }
    }).then(function () { drawn += 1; });
  }

  /* {a: {b: 1}} -> {"a.b": 1}: relayout replaces whole objects, dotted keys only leaves. */
  function flatten(obj, prefix, out) {
    out = out || {};
    Object.keys(obj).forEach(function (k) {
      var v = obj[k], key = prefix ? prefix + "." + k : k;
      if (v && typeof v === "object" && !Array.isArray(v)) flatten(v, key, out);
      else out[key] = v;
    });
    return out;
  }

  function retheme(forPrint) {
    charts.forEach(function (c) {
      var el = document.getElementById(c.id);
      if (el && el.layout) {
        Plotly.relayout(el, flatten(themeLayout(el.layout, forPrint === true)));
      }
    });
  }

  Promise.all(charts.map(draw)).then(function () {
    document.body.setAttribute("data-charts-drawn", String(drawn));
  });
  if (scheme && scheme.addEventListener) {
    scheme.addEventListener("change", function () { retheme(false); });
  }
  window.addEventListener("beforeprint", function () {
    retheme(true);
    charts.forEach(function (c) { Plotly.Plots.resize(document.getElementById(c.id)); });
  });
  window.addEventListener("afterprint", function () { retheme(false); });
})();
