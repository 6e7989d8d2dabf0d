// MathJax 2 for the formulas pymdownx.arithmatex marks (mkdocs.yml): \( … \) inline and
// \[ … \] displayed, inside <span|div class="arithmatex"> only. MathJax itself is served from
// the site (javascripts/mathjax/, copied from the jupyter-server-mathjax package by
// docs/_mkdocs/hooks.py), so the formulas typeset offline too.
window.MathJax = {
  config: ["TeX-AMS-MML_HTMLorMML-full.js"],
  tex2jax: {
    inlineMath: [["\\(", "\\)"]],
    displayMath: [["\\[", "\\]"]],
    processEscapes: true,
    processEnvironments: true,
    ignoreClass: ".*|",
    processClass: "arithmatex"
  },
  showMathMenu: false,
  messageStyle: "none",
  "HTML-CSS": { availableFonts: ["STIX-Web"], preferredFont: "STIX-Web", webFont: "STIX-Web", imageFont: null },
  CommonHTML: { linebreaks: { automatic: true } }
};
