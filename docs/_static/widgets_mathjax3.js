// The ipywidgets embedder typesets widget labels with MathJax 2's
// MathJax.Hub.Queue whenever window.MathJax exists; this site runs MathJax 3
// (no Hub), so each drawn widget would log "reading 'Queue'" to the console.
// Loaded before the embedder (docs/conf.py, nb_ipywidgets_js), this listener
// runs first on "load" (when the embedder draws) and maps the call to
// MathJax 3's typesetPromise.
(function () {
  function shim() {
    var mj = window.MathJax;
    if (mj && !mj.Hub) {
      mj.Hub = {
        Queue: function (job) {
          var node = job && job[2];
          if (node && mj.typesetPromise) {
            mj.typesetPromise([node]).catch(function () {});
          }
        }
      };
    }
  }
  document.addEventListener("DOMContentLoaded", shim);
  window.addEventListener("load", shim);
})();
