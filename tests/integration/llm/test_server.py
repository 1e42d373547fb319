#!/usr/bin/env python3
"""`tg llm serve` end to end, against llama.cpp's own chat completion on the same file (llama-cpp-python renders
the file's chat template with jinja2 and decodes greedily): usage test_server.py TG_BINARY OUT_DIR.

A small qwen2-shaped model with random weights and qwen2's vocabulary and chat template (models.py) is served;
  - GET /v1/models names it; an unknown route is a 404 JSON error;
  - a chat completion's reply equals llama.cpp's for the same messages, also as streamed by curl (server-sent
    events: a role chunk, content chunks, a finish_reason chunk, [DONE]);
  - bad JSON, wrong field types, out-of-range values and a prompt past the context are 400s naming the field;
  - concurrent requests are queued: each gets what it gets alone;
  - the chat page at / holds a two-turn conversation typed into it in headless Chromium, each reply llama.cpp's.
"""
import json, os, shutil, socket, subprocess, sys, tempfile, threading, time, urllib.error, urllib.request
import base64, urllib.parse

import llama_cpp
import websocket  # websocket-client, for the DevTools protocol

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402

TG, OUT = sys.argv[1], sys.argv[2]
VOCAB = os.path.join(os.environ["TG_TESTENV"], "llama.cpp", "models", "ggml-vocab-qwen2.gguf")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
MAX_TOKENS, CONTEXT = 12, 160
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(base, path, body=None, raw=None):
    """(status, parsed JSON) of a GET, or of a POST of body as JSON (raw: these bytes instead)."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(base + path, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def page_chat(base, turns, shot):
    """Types each turn into the page at base in headless Chromium and waits for its reply; returns the message
    bubbles as [class, text] and the model name shown, and saves a screenshot."""
    dport = free_port()
    browser = subprocess.Popen([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                                "--no-first-run", f"--user-data-dir={os.path.join(tmp, 'profile')}",
                                f"--remote-debugging-port={dport}", "--remote-allow-origins=*", "--window-size=900,700",
                                "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 60
        while True:
            try:
                pages = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{dport}/json/list", timeout=5).read())
                target = next(t for t in pages if t["type"] == "page")
                break
            except (OSError, StopIteration):
                if time.time() > deadline:
                    raise
                time.sleep(0.3)
        ws = websocket.create_connection(target["webSocketDebuggerUrl"], timeout=120)
        ids = iter(range(1, 1 << 30))

        def cdp(method, **params):
            n = next(ids)
            ws.send(json.dumps({"id": n, "method": method, "params": params}))
            while True:
                msg = json.loads(ws.recv())
                if msg.get("id") == n:
                    if "error" in msg:
                        raise RuntimeError(f"{method}: {msg['error']}")
                    return msg["result"]

        def js(expr):
            return cdp("Runtime.evaluate", expression=expr, returnByValue=True)["result"].get("value")

        def wait_for(expr, seconds=120):
            end = time.time() + seconds
            while time.time() < end:
                if js(expr):
                    return True
                time.sleep(0.2)
            return False

        cdp("Page.navigate", url=base + "/")
        wait_for("document.readyState === 'complete' && document.getElementById('model').textContent !== 'model'")
        for text in turns:
            js(f"document.getElementById('input').value = {json.dumps(text)}; "
               "document.getElementById('send').click(); true")
            wait_for("document.body.dataset.state === 'done'")
        bubbles = js("[...document.querySelectorAll('#messages .msg')].map(d => [d.className, d.textContent])")
        name = js("document.getElementById('model').textContent")
        with open(shot, "wb") as f:
            f.write(base64.b64decode(cdp("Page.captureScreenshot", format="png")["data"]))
        ws.close()
        return bubbles, name
    finally:
        browser.terminate()
        browser.wait(timeout=30)


tmp = tempfile.mkdtemp(prefix="tg-llm-serve-")
path = os.path.join(tmp, "qwen2-Q8_0.gguf")
# small layer weights: the chain decides each token by a wide margin, so rounding cannot flip llama.cpp's
# greedy choice against ours (test_llm_reference.py compares the numerics themselves)
models.make(path, "qwen2", "Q8_0", VOCAB, chain=True, sigma=0.04)
peer = llama_cpp.Llama(model_path=path, n_ctx=CONTEXT, n_threads=2, verbose=False)


def theirs(messages, max_tokens=MAX_TOKENS, stop=None):
    out = peer.create_chat_completion(messages=messages, temperature=0.0, top_k=1, max_tokens=max_tokens, stop=stop)
    return out["choices"][0]["message"]["content"]


port = free_port()
base = f"http://127.0.0.1:{port}"
env = dict(os.environ, DEV=os.environ.get("DEV", "CLANG"))
server = subprocess.Popen(["timeout", "600", TG, "llm", "serve", "--model", path, "--port", str(port), "--name", "tiny",
                           "--max-tokens", str(MAX_TOKENS), "--context", str(CONTEXT)],
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
line, deadline = "", time.time() + 120
while time.time() < deadline and "serving" not in line:
    line = server.stderr.readline()
    if not line:
        break
check(f"http://127.0.0.1:{port}/" in line, f"tg llm serve prints its URL: {line.strip()!r}")

try:
    status, j = request(base, "/v1/models")
    check(status == 200 and [m["id"] for m in j["data"]] == ["tiny"], f"/v1/models lists the model: {j}")
    status, j = request(base, "/v1/nothing")
    check(status == 404 and "error" in j, f"an unknown route is a 404 JSON error: {status} {j}")

    hello = [{"role": "user", "content": "Hello! Who are you?"}]
    want = theirs(hello)
    status, j = request(base, "/v1/chat/completions", {"model": "tiny", "messages": hello})
    got = j["choices"][0]["message"]["content"] if status == 200 else None
    check(status == 200 and got == want, f"a chat reply equals llama.cpp's: {got!r} vs {want!r}")
    if status == 200:
        u = j["usage"]
        check(u["completion_tokens"] == MAX_TOKENS and u["total_tokens"] == u["prompt_tokens"] + MAX_TOKENS and
              j["choices"][0]["finish_reason"] == "length", f"usage and finish_reason: {u}, {j['choices'][0]['finish_reason']}")

    # Streaming, as curl shows it: one event per "data:" line.
    body = json.dumps({"messages": hello, "stream": True})
    r = subprocess.run(["curl", "-sN", "-H", "Content-Type: application/json", "-d", body,
                        base + "/v1/chat/completions"], capture_output=True, text=True, timeout=120)
    events = [l[6:] for l in r.stdout.split("\n") if l.startswith("data: ")]
    chunks = [json.loads(e) for e in events[:-1]] if events and events[-1] == "[DONE]" else []
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    check(len(chunks) >= 3 and chunks[0]["choices"][0]["delta"].get("role") == "assistant" and
          chunks[-1]["choices"][0]["finish_reason"] == "length" and all(c["object"] == "chat.completion.chunk" for c in chunks),
          f"curl gets server-sent events: role, content, finish_reason, [DONE] ({len(events)} events)")
    check(text == want, f"the streamed reply equals llama.cpp's: {text!r}")

    # Bad requests: a 400 whose error names the field.
    long_text = " ".join(["word"] * (CONTEXT * 2))
    for what, raw, param, code in [
            ("bad JSON", b'{"messages": [', None, "invalid_json"),
            ("not an object", b'[1, 2]', None, "invalid_type"),
            ("no messages", b'{"model": "tiny"}', "messages", "invalid_type"),
            ("a role of the wrong type", json.dumps({"messages": [{"role": 3, "content": "x"}]}).encode(),
             "messages[0].role", "invalid_type"),
            ("an unknown role", json.dumps({"messages": [{"role": "robot", "content": "x"}]}).encode(),
             "messages[0].role", "invalid_value"),
            ("temperature as a string", json.dumps({"messages": hello, "temperature": "hot"}).encode(),
             "temperature", "invalid_type"),
            ("top_p out of range", json.dumps({"messages": hello, "top_p": 2}).encode(), "top_p", "invalid_value"),
            ("max_tokens of 0", json.dumps({"messages": hello, "max_tokens": 0}).encode(), "max_tokens", "invalid_value"),
            ("stream as a string", json.dumps({"messages": hello, "stream": "yes"}).encode(), "stream", "invalid_type"),
            ("a prompt past the context", json.dumps({"messages": [{"role": "user", "content": long_text}]}).encode(),
             "messages", "context_length_exceeded")]:
        status, j = request(base, "/v1/chat/completions", raw=raw)
        e = j.get("error", {})
        check(status == 400 and e.get("param") == param and e.get("code") == code and e.get("message"),
              f"{what}: 400 {code} naming {param}: {status} {e}")

    # A stop string ends the reply before it, as llama.cpp's does.
    stop = want[len(want) // 2:len(want) // 2 + 2]
    status, j = request(base, "/v1/chat/completions", {"messages": hello, "stop": [stop]})
    got, stopped = (j["choices"][0]["message"]["content"], j["choices"][0]["finish_reason"]) if status == 200 else (None, None)
    check(got == theirs(hello, stop=[stop]) and stopped == "stop", f"stop={stop!r} cuts the reply as llama.cpp's: {got!r}")

    # Concurrent requests (every other one streamed) wait their turn and each gets what it gets alone.
    lengths = [3, 5, 8, 12]
    asks = [[{"role": "user", "content": f"Count to {n}."}] for n in lengths]
    wants = [theirs(a, max_tokens=n) for a, n in zip(asks, lengths)]
    results = [None] * len(asks)

    def ask(i):
        results[i] = request(base, "/v1/chat/completions", {"messages": asks[i], "max_tokens": lengths[i]})[1]

    def ask_stream(i):
        b = json.dumps({"messages": asks[i], "max_tokens": lengths[i], "stream": True})
        out = subprocess.run(["curl", "-sN", "-H", "Content-Type: application/json", "-d", b, base + "/v1/chat/completions"],
                             capture_output=True, text=True, timeout=300).stdout
        ev = [json.loads(l[6:]) for l in out.split("\n") if l.startswith("data: {")]
        text = "".join(c["choices"][0]["delta"].get("content", "") for c in ev)
        results[i] = {"choices": [{"message": {"content": text}}]}
    threads = [threading.Thread(target=ask_stream if i % 2 else ask, args=(i,)) for i in range(len(asks))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = [r["choices"][0]["message"]["content"] if r and "choices" in r else r for r in results]
    check(got == wants, f"4 concurrent requests (2 streamed) each get llama.cpp's reply: {got} vs {wants}")

    # The chat page in headless Chromium, driven over the DevTools protocol: two messages typed and sent as a
    # user would, each streamed reply waited for (virtual time would dump the page mid-stream).
    if CHROMIUM is None:
        check(False, "chromium not found: install it with tools/setup-deps")
    else:
        first, second = "Hi there", "Tell me more"
        want1 = theirs([{"role": "user", "content": first}])
        want2 = theirs([{"role": "user", "content": first}, {"role": "assistant", "content": want1},
                        {"role": "user", "content": second}])
        bubbles, name = page_chat(base, [first, second], os.path.join(OUT, "llm-chat.png"))
        check(bubbles == [["msg user", first], ["msg assistant", want1], ["msg user", second], ["msg assistant", want2]],
              f"the page holds a two-turn chat with llama.cpp's replies: {bubbles}")
        check(name == "tiny", f"the page shows the model's name: {name!r}")
finally:
    server.terminate()
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
shutil.rmtree(tmp, ignore_errors=True)
print(f"\n{len(failures)} failures" if failures else "\nall checks passed")
sys.exit(1 if failures else 0)
