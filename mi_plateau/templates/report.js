// The report's scripts (mi_plateau.report.script fills them in and wraps each in <script>).
// Each block starts after a line "// block: NAME"; $name is a value, written as script-safe JSON.
//   errors     collects the page's script errors (in <head>, before plotly.js loads)
//   status     after load, writes what rendered into a hidden #render-status div, read by the
//              headless-browser test; with #selftest it first moves every control and slider once
//   attention  the attention viewer: redraws one heat map from the checkpoint, head and example
//              controls ($data: steps, heads, labels, patterns, title; $id: the figure's div)
// block: errors
window.__reportErrors=[];
window.addEventListener('error',function(e){window.__reportErrors.push(String(e.message||e))});
window.addEventListener('unhandledrejection',function(e){window.__reportErrors.push('unhandled rejection: '+String(e.reason))});
// block: status
window.addEventListener('load',function(){
var loadms=performance.now();
if(location.hash==='#selftest'){  // exercise every control and slider once, so their errors surface too
 document.querySelectorAll('.controls input,.controls select').forEach(function(c){
  if(c.tagName==='SELECT'){c.selectedIndex=c.options.length-1}else{c.value=c.min}c.dispatchEvent(new Event('input'));});
 document.querySelectorAll('.js-plotly-plot').forEach(function(gd){var sl=(gd.layout.sliders||[])[0];
  if(sl&&sl.steps.length){var a=sl.steps[sl.steps.length-1].args;Plotly.animate(gd,a[0],a[1]);}});}
setTimeout(function(){
var plots=document.querySelectorAll('.js-plotly-plot');var svgs=0;
plots.forEach(function(p){if(p.querySelector('.main-svg'))svgs++;});
var d=document.createElement('div');d.id='render-status';d.hidden=true;
d.setAttribute('data-errors',JSON.stringify(window.__reportErrors));d.setAttribute('data-plots',String(plots.length));
d.setAttribute('data-svgs',String(svgs));d.setAttribute('data-loadms',String(Math.round(loadms)));d.setAttribute('data-expected',String($expected));document.body.appendChild(d);},500);});
// block: attention
(function(){var D=$data;var id=$id;
var g=function(s){return document.getElementById(id+'-'+s)};
function draw(){var s=+g('step').value,h=+g('head').value,e=+g('ex').value;
 g('steplabel').textContent=D.steps[s];
 Plotly.restyle(id,{z:[D.patterns[s][h][e]]},[0]);
 Plotly.relayout(id,{'title.text':D.title+' '+D.heads[h]+', step '+D.steps[s],
  'xaxis.ticktext':D.labels[e],'yaxis.ticktext':D.labels[e]});}
['step','head','ex'].forEach(function(k){g(k).addEventListener('input',draw);g(k).addEventListener('change',draw);});
})();
