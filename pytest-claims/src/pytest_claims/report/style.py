"""The verdict report's inline stylesheet and script (the page loads nothing from elsewhere), its badges and the
escaping of every value that reaches its HTML."""

from __future__ import annotations

import html
from typing import Any


# Shown as text, not acted on: C0 and C1 controls but tab and line breaks (a NUL, ESC), and the bidirectional
# overrides and isolates, with which a value from a file would reorder what the page shows around it (U+202E makes
# "deifirev" read "verified").
_INVISIBLE = {
    code: f"\\x{code:02x}" if code < 256 else f"\\u{code:04x}"
    for code in [*range(9), 11, 12, *range(14, 32), *range(127, 160), *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
}


def esc(value: Any) -> str:
    """`value` as HTML text: markup characters escaped, controls and bidirectional overrides shown as \\xNN, \\uNNNN."""
    return html.escape(str(value).translate(_INVISIBLE))


def badge(text: str, colour: str) -> str:
    return (
        f'<span style="background:{colour};color:#fff;border-radius:4px;padding:1px 6px;'
        f'white-space:nowrap;font-weight:600">{esc(text)}</span>'
    )


STYLE = """
<style>
.claims-verdicts table{border-collapse:collapse;width:100%;margin-bottom:1em}
.claims-verdicts td,.claims-verdicts th{border:1px solid #d0d7de;padding:4px 6px;vertical-align:top;font-size:13px}
.claims-verdicts th{background:#f6f8fa;text-align:left}
.claims-verdicts details{margin:2px 0}
.claims-verdicts summary{cursor:pointer}
.claims-verdicts .ev td{font-size:12px;padding:2px 4px}
.claims-verdicts .ev td:first-child{width:28%}
.claims-verdicts img.thumb{max-width:100%;max-height:120px;border:1px solid #d0d7de;cursor:zoom-in}
.claims-verdicts img.figure{max-width:640px;cursor:zoom-in}
.claims-verdicts img.full{position:fixed;inset:2%;max-width:96%;max-height:96%;margin:auto;z-index:10;
  background:#fff;border:2px solid #57606a;box-shadow:0 0 0 100vmax rgba(0,0,0,.45);cursor:zoom-out}
.claims-verdicts details.run-details{margin-top:1.5em}
.claims-verdicts .changes{background:#fff8c5;border:1px solid #d4a72c;padding:6px 10px;margin:8px 0}
.claims-verdicts .claim-text{margin:4px 0;font-size:13px}
.claims-verdicts .more>td{border-top:none;background:#fcfcfd}
.claims-verdicts a.permalink{color:#8c959f;text-decoration:none;margin-left:4px}
.claims-verdicts a.permalink:hover{color:#0969da}
.claims-verdicts .refutation{border-left:3px solid #cf222e;padding-left:6px}
.claims-verdicts .family-differ{display:block;border-left:3px solid #d4a72c;padding-left:6px}
.claims-verdicts .claims-filters{background:#f6f8fa;border:1px solid #d0d7de;padding:6px 10px;margin:8px 0}
.claims-verdicts .claims-filters{font-size:13px}
.claims-verdicts .claims-filters label{margin-right:10px;white-space:nowrap}
.claims-verdicts .claims-filters select{max-width:360px}
.claims-verdicts table.claims{table-layout:fixed}
.claims-verdicts table.claims td{overflow-wrap:anywhere}
.claims-verdicts pre.json{font-size:11px;max-height:400px;overflow:auto;background:#f6f8fa;padding:4px}
.claims-verdicts pre.json{white-space:pre-wrap;overflow-wrap:anywhere}
td.col-result[data-claims-result]{font-size:0}
td.col-result[data-claims-result]::after{content:attr(data-claims-result);font-size:13px}
</style>
"""

# Inline (the page stays self-contained): the filters hide claim rows, paper sections and family rows; opening a
# '#id' link unfolds every details element around its target.
SCRIPT = """
<script type="text/javascript">
(function(){
function claimsFilter(){
  var root=document.querySelector('.claims-verdicts');if(!root)return;
  var verdicts={};root.querySelectorAll('.claims-filters input[data-verdict]').forEach(function(b){
    verdicts[b.dataset.verdict]=b.checked;});
  var paper=root.querySelector('.claims-filters select[name=paper]').value;
  var tier=root.querySelector('.claims-filters select[name=tier]').value;
  root.querySelectorAll('section[data-paper]').forEach(function(s){s.hidden=!!paper&&s.dataset.paper!==paper;});
  root.querySelectorAll('tr[data-verdict]').forEach(function(r){
    var tiers=(r.dataset.tiers||'').split(' ');
    r.hidden=!verdicts[r.dataset.verdict]||(!!tier&&tiers.indexOf(tier)<0)||
      (!!paper&&r.dataset.paper!==undefined&&r.dataset.paper!==paper);});
}
function claimsOpen(){
  var id=decodeURIComponent(location.hash.slice(1));if(!id)return;var el=document.getElementById(id);if(!el)return;
  for(var n=el;n;n=n.parentElement){if(n.tagName==='DETAILS')n.open=true;if(n.tagName==='TR')n.hidden=false;}
  if(el.tagName==='TR'&&el.nextElementSibling){var d=el.nextElementSibling.querySelector('details');if(d)d.open=true;}
  el.scrollIntoView();
}
document.addEventListener('change',function(e){if(e.target.closest('.claims-filters'))claimsFilter();});
// a figure opens full size on a click (Enter too) and closes on the next; Escape closes it
function claimsZoom(img){var open=img.classList.contains('full');
  document.querySelectorAll('.claims-verdicts img.full').forEach(function(i){i.classList.remove('full');});
  if(!open)img.classList.add('full');}
document.addEventListener('click',function(e){
  var img=e.target.closest('.claims-verdicts img.thumb,.claims-verdicts img.figure');if(img)claimsZoom(img);});
document.addEventListener('keydown',function(e){var img=e.target.closest&&e.target.closest('.claims-verdicts img');
  if(e.key==='Escape')document.querySelectorAll('.claims-verdicts img.full').forEach(function(i){
    i.classList.remove('full');});
  else if(img&&e.key==='Enter')claimsZoom(img);});
// pytest-html's environment table, folded below the verdicts (a reader comes for the verdicts first)
function claimsFoldEnvironment(){
  var env=document.getElementById('environment');var root=document.querySelector('.claims-verdicts');
  if(!env||!root||env.closest('details'))return;var d=document.createElement('details');
  d.innerHTML='<summary><b>Environment (pytest-html)</b></summary>';
  var head=document.getElementById('environment-header')||env.previousElementSibling;  // pytest-html 4: its h2
  if(head&&(head.id==='environment-header'||/^H[1-6]$/.test(head.tagName)))head.remove();
  d.appendChild(env);root.appendChild(d);}
document.addEventListener('DOMContentLoaded',claimsFoldEnvironment);
if(document.readyState!=='loading')claimsFoldEnvironment();
window.addEventListener('hashchange',claimsOpen);
document.addEventListener('DOMContentLoaded',claimsOpen);
if(document.readyState!=='loading')claimsOpen();
})();
</script>
"""
