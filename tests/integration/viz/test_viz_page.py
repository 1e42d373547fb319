#!/usr/bin/env python3
"""VIZ end to end, against what `tg demo` itself prints (its kernels, ASTs and sources), never against the
viewer's own JSON: usage test_viz_page.py TG_BINARY OUT_DIR (the screenshot goes to OUT_DIR)."""
import html, json, os, re, shutil, signal, socket, subprocess, sys, tempfile, time, urllib.request

TG, OUT = sys.argv[1], sys.argv[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def chromium(args, url, profile):
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           "--no-first-run", f"--user-data-dir={profile}", "--virtual-time-budget=20000"] + args + [url]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def text_of(fragment):
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


if CHROMIUM is None:
    print("FAIL chromium not found: install it with tools/setup-deps")
    sys.exit(1)

tmp = tempfile.mkdtemp(prefix="tg-viz-test-")
env = dict(os.environ, DEV="CLANG", TG_CACHE_DIR=os.path.join(tmp, "cache"), DEBUG="0")
env.pop("VIZ", None)

# What the demo says about its own kernels: names, AST trees (one "UOp(" per node) and sources.
plain = subprocess.run([TG, "demo"], env=env, capture_output=True, text=True, timeout=120)
check(plain.returncode == 0, "tg demo runs")
names = re.findall(r"^--- generated source of (\S+) for", plain.stdout, re.M)
# Chunk i ends with kernel i's schedule item (its AST tree, one "UOp(" per node); chunk i+1 starts with its
# source, up to the next schedule item ("NAME" then "  buf 0:") or the result.
chunks = re.split(r"^--- generated source of [^\n]*\n", plain.stdout, flags=re.M)
ast_nodes = [c.count("UOp(") for c in chunks[:-1]]
sources = [re.split(r"^\S+\n  buf 0:|^result \(realized", c, flags=re.M)[0] for c in chunks[1:]]
check(len(names) >= 2 and len(names) == len(sources), f"the demo prints its kernels: {names}")

port = free_port()
viz_env = dict(env, VIZ="1", VIZ_PORT=str(port))
server = subprocess.Popen(["timeout", "200", TG, "demo"], env=viz_env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
url_line = ""
deadline = time.time() + 120
while time.time() < deadline and not url_line:
    line = server.stderr.readline()
    if not line:
        break
    if "http://127.0.0.1:" in line:
        url_line = line.strip()
check(f"http://127.0.0.1:{port}" in url_line, f"VIZ=1 tg demo prints its URL: {url_line!r}")
base = f"http://127.0.0.1:{port}/"

try:
    profile = os.path.join(tmp, "profile")
    dom = chromium(["--dump-dom"], base + "#kernel=0", profile).stdout
    listed = [text_of(m[1]) for m in re.findall(r'<li class="kernel( sel)?"[^>]*>(.*?)</li>', dom)]
    check(listed == names, f"the page lists the demo's kernels in order: {listed}")
    check('data-ready="kernel 0"' in dom, "kernel 0 was shown")
    drawn = len(re.findall(r'<g id="[^"]*" class="node"', dom))
    check(drawn == ast_nodes[0] and drawn > 5,
          f"kernel {names[0]}'s graph has one node per AST node: drawn {drawn}, AST {ast_nodes[0]}")
    m = re.search(r'<code id="source"[^>]*>(.*?)</code>', dom, re.S)
    shown = text_of(m.group(1)) if m else ""
    check(sources[0].strip() in shown, f"the source view shows {names[0]}'s source")
    check("hljs" in (m.group(0) if m else ""), "the source is highlighted by highlight.js")
    check(len(re.findall(r'<rect class="run"', dom)) >= len(names), "the timeline has a bar per kernel run")
    check(len(re.findall(r'<li class="rewrite nested"', dom)) > 0, "each kernel lists the rewrites that lowered it")

    check(len(re.findall(r'<li class="rewrite"', dom)) > 0, "the scheduler's passes are listed before the kernels")
    # A rewrite step (the first pass where a rule fired): the drawing marks the matched node in red.
    with urllib.request.urlopen(base + "api/summary", timeout=30) as f:
        entries = json.load(f)["entries"]
    fired = [e["index"] for e in entries if e["kind"] == "rewrite" and e["steps"] > 0]
    check(len(fired) > 0, "some pass before codegen fired a rule")
    if fired:
        rdom = chromium(["--dump-dom"], base + f"#rewrite={fired[0]}&step=1", profile).stdout
        check(f'data-ready="rewrite {fired[0]} step 1"' in rdom and "#d62728" in rdom,
              "stepping into a rewrite shows the matched node highlighted")

    shot = os.path.join(OUT, "viz-demo.png")
    if os.path.exists(shot):
        os.remove(shot)
    chromium([f"--screenshot={shot}", "--window-size=1500,1100"], base + "#kernel=0", profile)
    check(os.path.getsize(shot) > 10000 if os.path.exists(shot) else False, f"screenshot saved: {shot}")
finally:
    server.send_signal(signal.SIGINT)  # timeout passes it on; the server stops at the signal
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
check(server.returncode is not None, "the server stops when interrupted")

# A saved trace, served later; a damaged one and a port in use are clear errors.
saved = os.path.join(tmp, "trace.json")
r = subprocess.run([TG, "demo"], env=dict(env, VIZ="1", VIZ_OUT=saved), capture_output=True, text=True, timeout=120)
check(r.returncode == 0 and os.path.exists(saved), "VIZ_OUT writes the trace")
with open(saved) as f:
    trace = json.load(f)
check([trace["kernels"][e["index"]]["name"] for e in trace["order"] if e["kind"] == "kernel"] == names,
      "the saved trace holds the demo's kernels")
bad = os.path.join(tmp, "bad.json")
with open(bad, "w") as f:
    f.write('{"tinygrad_cpp_viz": 1, "nodes": [')
r = subprocess.run([TG, "viz", bad], env=env, capture_output=True, text=True, timeout=30)
check(r.returncode == 1 and "[viz]" in r.stderr and "not JSON" in r.stderr and bad in r.stderr,
      f"a damaged trace is a clear error: {r.stderr.strip()!r}")
with socket.socket() as busy:
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    busy_port = busy.getsockname()[1]
    r = subprocess.run(["timeout", "30", TG, "viz", saved], env=dict(env, VIZ_PORT=str(busy_port)),
                       capture_output=True, text=True, timeout=40)
check(r.returncode == 1 and f"127.0.0.1:{busy_port}" in r.stderr and "in use" in r.stderr,
      f"a port in use is a clear error: {r.stderr.strip()!r}")

shutil.rmtree(tmp, ignore_errors=True)
print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
