"""ONNX's backend node tests through `tg onnx test` on the default device (CLANG): every test folder of the
onnx package's onnx/backend/test/data/node. Prints passed / failed / unsupported per operator and in all;
fails when a test's result differs from node_expected.txt (unlisted tests must pass).
Usage: test_node_suite.py TG EXPECTED OUTDIR [--update] (--update rewrites EXPECTED from this run)."""
import collections, pathlib, subprocess, sys

def main():
  tg, expected, outdir = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
  try:
    import onnx
  except ImportError:
    print("skipped: the onnx package is not in the test venv (tools/setup-testenv)"); return 77
  suite = pathlib.Path(onnx.__file__).parent / "backend/test/data/node"
  report = outdir / "onnx_node_report.txt"
  args = [tg, "onnx", "test", "--suite", str(suite), "--report", str(report)]
  if "--update" not in sys.argv: args += ["--expect", str(expected)]
  rc = subprocess.run(args).returncode
  rows = [line.rstrip("\n").split(" ", 2) for line in report.read_text().splitlines()] if report.exists() else []
  if rc != 0 and (not rows or len(rows[-1]) < 2):
    print(f"tg onnx test stopped (exit status {rc}) before it finished the report; see its output above")
    return rc
  per_op = collections.defaultdict(collections.Counter)
  for name, status, *_ in rows:
    model = onnx.load(str(suite / name / "model.onnx"), load_external_data=False)
    ops = {n.op_type for n in model.graph.node}
    op = ops.pop() if len(ops) == 1 else "(expanded functions)"
    per_op[op][status] += 1
  print(f"{'operator':28} pass fail unsupported")
  for op in sorted(per_op):
    c = per_op[op]
    print(f"{op:28} {c['PASS']:4} {c['FAIL']:4} {c['UNSUPPORTED']:4}")
  total = collections.Counter(status for _, status, *_ in rows)
  print(f"onnx {onnx.__version__} node suite on CLANG: {total['PASS']} passed, {total['FAIL']} failed, "
        f"{total['UNSUPPORTED']} unsupported of {len(rows)} tests")
  if "--update" in sys.argv:
    lines = ["# ONNX backend node tests (onnx package, onnx/backend/test/data/node) that do not pass, with the reason.",
             "# `tg onnx test --expect` fails when a result differs from this list; unlisted tests must pass.",
             "# Regenerate with: test_node_suite.py TG node_expected.txt OUTDIR --update"]
    lines += [f"{name} {status} {rest[0] if rest else ''}".rstrip() for name, status, *rest in rows if status != "PASS"]
    expected.write_text("\n".join(lines) + "\n")
    return 0
  return rc

if __name__ == "__main__":
  sys.exit(main())
