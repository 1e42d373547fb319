// The viewer page: plain HTML, CSS and JS (no framework); graphs arrive as SVG drawn by graphviz on the
// server, source highlighting comes from Debian's highlight.js when it is installed.
#include "viz/server.hpp"

namespace tg::viz {

const char* const kPage = R"VIZPAGE(<!doctype html>
<html><head><meta charset="utf-8"><title>tinygrad.cpp VIZ</title>
<link rel="stylesheet" href="/lib/styles/github.css">
<script src="/lib/highlight.min.js"></script>
<style>
body { margin: 0; font: 13px Helvetica, Arial, sans-serif; display: grid; height: 100vh;
       grid-template-columns: 300px 1fr; grid-template-rows: 1fr 190px; }
#side { grid-row: 1 / 3; overflow: auto; border-right: 1px solid #ccc; background: #fafafa; }
#side h3 { margin: 8px; font-size: 13px; color: #555; }
#side ul { list-style: none; margin: 0; padding: 0 0 0 8px; }
#side li { padding: 2px 6px; cursor: pointer; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
#side li.kernel { font-weight: bold; margin-top: 4px; }
#side li.rewrite { color: #333; }
#side li.nested { padding-left: 18px; font-weight: normal; }
#side li.sel { background: #cfe3ff; }
#main { overflow: auto; padding: 8px; }
#title { font-size: 15px; font-weight: bold; margin-bottom: 4px; }
#info { color: #555; margin-bottom: 6px; white-space: pre-wrap; }
#stepbar { margin: 4px 0; display: none; }
#stepinfo { font-family: monospace; white-space: pre-wrap; background: #f4f4f4; padding: 4px; }
#graph { border: 1px solid #ddd; overflow: auto; max-height: 60vh; }
#graph svg { max-width: none; }
#code { display: grid; grid-template-columns: 1fr 1fr; gap: 8px; margin-top: 8px; }
#code pre { margin: 0; max-height: 40vh; overflow: auto; border: 1px solid #ddd; padding: 4px; font-size: 12px; }
#timeline { grid-column: 2; border-top: 1px solid #ccc; overflow: auto; padding: 4px 8px; }
#runs { border-collapse: collapse; font-size: 12px; }
#runs td, #runs th { padding: 1px 8px; text-align: right; }
#runs td:first-child, #runs th:first-child { text-align: left; }
.legend span { display: inline-block; padding: 0 6px; margin-right: 4px; border: 1px solid #aaa; }
</style></head>
<body>
<div id="side"><h3>kernels and rewrites, in pipeline order</h3><ul id="list"></ul></div>
<div id="main">
  <div id="title">select a kernel or a rewrite</div>
  <div id="info"></div>
  <div class="legend"><span style="background:#ffe9a8">alu</span><span style="background:#f6c3a0">movement</span><span
    style="background:#a9d3f5">memory</span><span style="background:#cdbff5">loop</span><span
    style="background:#e3e3e3">const</span><span style="background:#b9e6b0">sink</span>
    <span style="border-color:#d62728">matched</span><span style="border-color:#2ca02c">new</span></div>
  <div id="stepbar"><button id="prev">&larr; prev</button> <input id="slider" type="range" min="0" value="0">
    <button id="next">next &rarr;</button> <span id="stepno"></span><div id="stepinfo"></div></div>
  <div id="graph"></div>
  <div id="code"><div><b>source</b><pre><code id="source" class="language-c"></code></pre></div>
    <div><b>linear uops</b><pre id="uops"></pre></div>
    <div style="grid-column: 1 / 3"><b>disassembly</b><pre id="disasm"></pre></div></div>
</div>
<div id="timeline"><b>kernel runs</b> <span id="memory"></span><div id="bars"></div>
  <table id="runs"><thead><tr><th>kernel</th><th>start us</th><th>time us</th><th>GFLOPS</th><th>GB/s</th></tr></thead>
  <tbody></tbody></table></div>
<script>
"use strict";
const $ = (id) => document.getElementById(id);
let summary = null, current = null;

async function get(url) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(await r.text());
  return url.endsWith(".svg") ? r.text() : r.json();
}
function item(cls, text, hash) {
  const li = document.createElement("li");
  li.className = cls; li.textContent = text; li.dataset.hash = hash;
  li.onclick = () => { location.hash = hash; };
  return li;
}
async function drawGraph(url) {
  $("graph").innerHTML = "drawing...";
  try { $("graph").innerHTML = await get(url); } catch (e) { $("graph").textContent = String(e.message); }
}
function clearCode() { $("source").textContent = ""; $("uops").textContent = ""; $("disasm").textContent = ""; }

async function showKernel(i) {
  const k = await get("/api/kernel/" + i);
  $("title").textContent = "kernel " + k.name + (k.device ? " on " + k.device : "");
  $("info").textContent = "opts " + (k.opts || "[]") + "   AST nodes " + k.ast_nodes + "   est. " + k.ops +
      " ops, " + k.bytes + " bytes per launch   " + k.rewrites.length + " rewrites lowered it";
  $("stepbar").style.display = "none";
  const src = $("source");
  src.textContent = k.source || "(not compiled in this process)";
  src.removeAttribute("data-highlighted"); src.className = "language-c";
  if (window.hljs) (hljs.highlightElement || hljs.highlightBlock)(src);
  $("uops").textContent = k.uops; $("disasm").textContent = k.disasm || "(none)";
  await drawGraph("/api/graph/" + k.ast + ".svg");
  document.body.dataset.ready = "kernel " + i;
}

async function showRewrite(i, step) {
  const r = await get("/api/rewrite/" + i);
  current = r;
  $("title").textContent = "rewrite: " + r.name + (r.kernel >= 0 ? "  (kernel " + summary.kernels[r.kernel].name + ")" : "");
  $("info").textContent = r.steps.length + " rules fired, " + r.ms.toFixed(3) + " ms; input " + r.before_nodes +
      " nodes, output " + r.after_nodes + " nodes";
  clearCode();
  const last = r.steps.length + 1;
  $("stepbar").style.display = "block"; $("slider").max = last;
  step = Math.max(0, Math.min(step, last)); $("slider").value = step;
  $("stepno").textContent = "step " + step + " of " + last;
  let url;
  if (step == 0) { $("stepinfo").textContent = "the input graph"; url = "/api/graph/" + r.before + ".svg"; }
  else if (step == last) { $("stepinfo").textContent = "the output graph"; url = "/api/graph/" + r.after + ".svg"; }
  else {
    const s = r.steps[step - 1];
    $("stepinfo").textContent = s.loc + "\n" + s.code + "\n" + s.from_op + " -> " + s.to_op;
    url = "/api/step/" + i + "/" + (step - 1) + ".svg";
  }
  await drawGraph(url);
  document.body.dataset.ready = "rewrite " + i + " step " + step;
}

function parseHash() {
  const p = {};
  for (const kv of location.hash.slice(1).split("&")) { const [k, v] = kv.split("="); if (k) p[k] = Number(v); }
  return p;
}
async function route() {
  const p = parseHash();
  for (const li of document.querySelectorAll("#list li"))
    li.classList.toggle("sel", li.dataset.hash == location.hash.slice(1).split("&step")[0]);
  try {
    if ("kernel" in p) await showKernel(p.kernel);
    else if ("rewrite" in p) await showRewrite(p.rewrite, p.step || 0);
  } catch (e) { $("graph").textContent = String(e.message); }
}
function stepTo(s) { const p = parseHash(); if ("rewrite" in p) location.hash = "rewrite=" + p.rewrite + "&step=" + s; }
$("prev").onclick = () => stepTo(Number($("slider").value) - 1);
$("next").onclick = () => stepTo(Number($("slider").value) + 1);
$("slider").oninput = () => stepTo(Number($("slider").value));
document.onkeydown = (e) => {
  if (e.key == "ArrowRight") stepTo(Number($("slider").value) + 1);
  if (e.key == "ArrowLeft") stepTo(Number($("slider").value) - 1);
};

function timeline() {
  const runs = summary.runs, kernels = summary.kernels;
  if (!runs.length) { $("bars").textContent = "no kernel ran"; return; }
  const end = Math.max(...runs.map(r => r.start_us + r.us)), w = Math.max(600, $("timeline").clientWidth - 30);
  let svg = '<svg width="' + w + '" height="26">';
  runs.forEach((r, n) => {
    const x = r.start_us / end * w, bw = Math.max(2, r.us / end * w), hue = (r.kernel * 67) % 360;
    svg += '<rect class="run" x="' + x + '" y="2" width="' + bw + '" height="20" fill="hsl(' + hue +
        ',60%,60%)"><title>' + kernels[r.kernel].name + " " + r.us.toFixed(1) + ' us</title></rect>';
  });
  $("bars").innerHTML = svg + "</svg>";
  const body = document.querySelector("#runs tbody");
  for (const r of runs) {
    const k = kernels[r.kernel], s = Math.max(r.us, 1e-3) * 1e-6;
    const tr = document.createElement("tr");
    for (const v of [k.name, r.start_us.toFixed(1), r.us.toFixed(2), (k.ops / s * 1e-9).toFixed(3),
                     (k.bytes / s * 1e-9).toFixed(3)]) {
      const td = document.createElement("td"); td.textContent = v; tr.appendChild(td);
    }
    tr.onclick = () => { location.hash = "kernel=" + r.kernel; };
    body.appendChild(tr);
  }
  $("memory").textContent = summary.memory.map(m => "memory plan: " + m.bytes_before + " -> " + m.bytes_after +
      " bytes (" + m.shared + " buffers placed)").join("; ");
}

async function main() {
  summary = await get("/api/summary");
  const list = $("list");
  for (const e of summary.entries) {
    if (e.kind == "kernel") {
      list.appendChild(item("kernel", e.name, "kernel=" + e.index));
      for (const r of e.rewrites)
        list.appendChild(item("rewrite nested", r.name + " (" + r.steps + ")", "rewrite=" + r.index));
    } else list.appendChild(item("rewrite", e.name + " (" + e.steps + ")", "rewrite=" + e.index));
  }
  timeline();
  window.onhashchange = route;
  await route();
  if (!document.body.dataset.ready) document.body.dataset.ready = "list";
}
main();
</script></body></html>
)VIZPAGE";

}  // namespace tg::viz
