// Appended to a report page by tests/browser.rs: after layout, checks from
// the boxes the browser drew that every chart keeps its marks and labels
// inside, that no two labels of a chart overlap and that the page does not
// scroll sideways; writes what it found as JSON into <pre id="browser-check">.
// Generic: any svg.chart, any .mark, any .label.
(function () {
  function box(r) {
    return [r.left, r.top, r.right, r.bottom].map(function (v) { return Math.round(v * 10) / 10; });
  }
  function name(el) {
    var t = el.querySelector(':scope > title');
    var text = t ? t.textContent : (el.textContent || '');
    return '<' + el.tagName + ' class="' + el.getAttribute('class') + '"> ' + text.slice(0, 120);
  }
  function check() {
    var violations = [];
    var marks = 0, labels = 0;
    var charts = document.querySelectorAll('svg.chart');
    charts.forEach(function (svg, i) {
      var t = svg.querySelector(':scope > title');
      var chart = t ? t.textContent : 'chart #' + i;
      var b = svg.getBoundingClientRect();
      var inside = function (r) {
        return r.left >= b.left - 1 && r.right <= b.right + 1 && r.top >= b.top - 1 && r.bottom <= b.bottom + 1;
      };
      svg.querySelectorAll('.mark').forEach(function (m) {
        marks++;
        var r = m.getBoundingClientRect();
        if (!inside(r)) {
          violations.push({ kind: 'mark outside its chart', chart: chart, element: name(m), box: box(r), chart_box: box(b) });
        }
        if (!m.querySelector(':scope > title')) {
          violations.push({ kind: 'mark without a title', chart: chart, element: name(m), box: box(r) });
        }
      });
      var texts = Array.prototype.slice.call(svg.querySelectorAll('.label'));
      var rects = texts.map(function (l) { return l.getBoundingClientRect(); });
      labels += texts.length;
      texts.forEach(function (l, k) {
        if (!inside(rects[k])) {
          violations.push({ kind: 'label outside its chart', chart: chart, element: name(l), box: box(rects[k]), chart_box: box(b) });
        }
        for (var j = 0; j < k; j++) {
          var p = rects[j], q = rects[k];
          var w = Math.min(p.right, q.right) - Math.max(p.left, q.left);
          var h = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
          if (w > 0 && h > 0 && w * h > 1) {
            violations.push({ kind: 'labels overlap', chart: chart, element: name(texts[j]) + ' | ' + name(l), box: box(p), other_box: box(q) });
          }
        }
      });
    });
    var page = document.documentElement.scrollWidth;
    if (page > window.innerWidth) {
      // The outermost elements reaching past the window's right edge.
      var wide = [];
      document.querySelectorAll('body *').forEach(function (el) {
        var r = el.getBoundingClientRect();
        if (r.right > window.innerWidth + 1 && !(el.parentElement && el.parentElement.getBoundingClientRect().right > window.innerWidth + 1)) {
          wide.push('<' + el.tagName.toLowerCase() + (el.getAttribute('class') ? ' class="' + el.getAttribute('class') + '"' : '') + '> right edge ' + Math.round(r.right));
        }
      });
      violations.push({ kind: 'page overflows', chart: '', element: 'scrollWidth ' + page + ' > innerWidth ' + window.innerWidth + ': ' + wide.slice(0, 8).join(', '), box: [] });
    }
    var result = JSON.stringify({
      width: window.innerWidth,
      height: document.documentElement.scrollHeight,
      charts: charts.length,
      marks: marks,
      labels: labels,
      violations: violations
    });
    if (window.parent !== window) {
      // In the test's frame of a phone's width: the outer page shows it.
      window.parent.postMessage(result, '*');
    } else {
      var out = document.createElement('pre');
      out.id = 'browser-check';
      out.style.whiteSpace = 'pre-wrap';
      out.style.wordBreak = 'break-all';
      out.textContent = result;
      document.body.appendChild(out);
    }
  }
  if (document.readyState === 'complete') {
    check();
  } else {
    window.addEventListener('load', check);
  }
})();
