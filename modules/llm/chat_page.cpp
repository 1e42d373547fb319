// The chat page of `tg llm serve`: plain HTML and JavaScript, streaming from /v1/chat/completions.
// A link like /#ask=Hello&ask=More sends those messages on load, one turn each.
#include "llm/server.hpp"

namespace tg::llm {

const char* const kChatPage = R"HTML(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>tg llm</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body { font: 15px/1.45 system-ui, sans-serif; margin: 0; display: flex; flex-direction: column; height: 100vh; }
header { padding: 8px 16px; background: #222; color: #eee; }
#messages { flex: 1; overflow-y: auto; padding: 16px; }
.msg { max-width: 48em; margin: 0 0 12px; padding: 8px 12px; border-radius: 8px; white-space: pre-wrap; }
.user { background: #dbeafe; margin-left: auto; }
.assistant { background: #f3f4f6; }
.error { background: #fee2e2; }
form { display: flex; gap: 8px; padding: 12px 16px; border-top: 1px solid #ddd; }
textarea { flex: 1; resize: none; font: inherit; padding: 6px; }
</style></head>
<body data-state="idle">
<header>tg llm &middot; <span id="model">model</span> &middot; <a href="#" id="reset" style="color:#9cf">new chat</a></header>
<div id="messages"></div>
<form id="form"><textarea id="input" rows="2" placeholder="Message (Enter sends, Shift+Enter breaks the line)"></textarea>
<button id="send" type="submit">Send</button></form>
<script>
const history = [];
const box = document.getElementById("messages"), input = document.getElementById("input");
function bubble(cls, text) {
  const d = document.createElement("div");
  d.className = "msg " + cls;
  d.textContent = text;
  box.appendChild(d);
  box.scrollTop = box.scrollHeight;
  return d;
}
async function send(text) {
  if (!text.trim() || document.body.dataset.state === "busy") return;
  document.body.dataset.state = "busy";
  history.push({role: "user", content: text});
  bubble("user", text);
  const out = bubble("assistant", "");
  let reply = "";
  try {
    const res = await fetch("/v1/chat/completions", {method: "POST", headers: {"Content-Type": "application/json"},
                                                      body: JSON.stringify({messages: history, stream: true})});
    if (!res.ok) throw new Error((await res.json()).error.message);
    const reader = res.body.getReader(), dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const {value, done} = await reader.read();
      if (done) break;
      buf += dec.decode(value, {stream: true});
      let at;
      while ((at = buf.indexOf("\n\n")) >= 0) {
        const line = buf.slice(0, at); buf = buf.slice(at + 2);
        if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
        const ev = JSON.parse(line.slice(6));
        if (ev.error) throw new Error(ev.error.message);
        reply += ev.choices[0].delta.content || "";
        out.textContent = reply;
      }
    }
    history.push({role: "assistant", content: reply});
    out.dataset.done = "1";
  } catch (e) {
    out.className = "msg error";
    out.textContent = "error: " + e.message;
    history.pop();
  }
  document.body.dataset.state = "done";
}
document.getElementById("form").onsubmit = e => { e.preventDefault(); const t = input.value; input.value = ""; send(t); };
input.onkeydown = e => { if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); document.getElementById("send").click(); } };
document.getElementById("reset").onclick = e => { e.preventDefault(); history.length = 0; box.innerHTML = ""; };
fetch("/v1/models").then(r => r.json()).then(j => { document.getElementById("model").textContent = j.data[0].id; });
(async () => { for (const ask of new URLSearchParams(location.hash.slice(1)).getAll("ask")) await send(ask); })();
</script></body></html>
)HTML";

}  // namespace tg::llm
