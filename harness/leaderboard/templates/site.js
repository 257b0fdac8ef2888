document.querySelectorAll('table.sortable').forEach(function (t) {
  t.querySelectorAll('thead th button').forEach(function (btn) {
    btn.addEventListener('click', function () {
      var col = +btn.dataset.col, body = t.tBodies[0];
      var dir = btn.dataset.dir === 'desc' ? 'asc' : 'desc';
      t.querySelectorAll('thead th').forEach(function (th) { th.removeAttribute('aria-sort'); });
      btn.dataset.dir = dir;
      btn.parentElement.setAttribute('aria-sort', dir === 'asc' ? 'ascending' : 'descending');
      var key = function (r) {
        var c = r.cells[col], v = c.dataset.value, text = c.textContent.trim();
        if (v !== undefined) return parseFloat(v);
        if (/^[-+]?[0-9.]/.test(text) && !isNaN(parseFloat(text))) return parseFloat(text);
        return text.toLowerCase();
      };
      var rows = Array.prototype.slice.call(body.rows).sort(function (a, b) {
        var x = key(a), y = key(b);
        return (x < y ? -1 : x > y ? 1 : 0) * (dir === 'asc' ? 1 : -1);
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
var filter = document.getElementById('filter');
if (filter) {
  filter.hidden = false;
  filter.addEventListener('input', function () {
    var q = filter.value.toLowerCase();
    document.querySelectorAll('#board tbody tr').forEach(function (r) {
      r.hidden = r.textContent.toLowerCase().indexOf(q) < 0;
    });
  });
}
