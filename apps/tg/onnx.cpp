// `tg onnx`: describe a model (info), run it on .npy inputs (run), or run ONNX's backend node tests (test).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>

#include "apps/tg/commands.hpp"
#include "apps/tg/flags.hpp"
#include "base/error.hpp"
#include "onnx/npy.hpp"
#include "onnx/runner.hpp"

namespace tg::cli {
namespace {

namespace fs = std::filesystem;
constexpr std::string_view kOnnxCmd = "onnx";

std::string shape_str(const Tensor& t) {
  std::vector<int64_t> dims;
  for (const auto& d : t.shape()) dims.push_back(static_cast<int64_t>(d));
  return fmt::format("({})", fmt::join(dims, ","));
}

int info(const fs::path& path) {
  onnx::Model m = onnx::load_model(path);
  fmt::print("{}: ir_version {}, opset {}, producer '{}', {} nodes, {} initializers\n", path.string(),
             m.ir_version, m.opset(), m.producer, m.graph.nodes.size(), m.graph.initializers.size());
  for (const auto& i : m.graph.inputs) fmt::print("  input  {}: {}\n", i.name, onnx::describe(i));
  for (const auto& o : m.graph.outputs) fmt::print("  output {}: {}\n", o.name, onnx::describe(o));
  std::map<std::string, int> ops;
  for (const auto& n : m.graph.nodes) ops[n.domain.empty() ? n.op_type : n.domain + ":" + n.op_type]++;
  std::vector<std::string> parts;
  for (const auto& [op, n] : ops) parts.push_back(fmt::format("{} x{}", op, n));
  fmt::print("  operators: {}\n", fmt::join(parts, ", "));
  auto missing = onnx::Runner::unsupported_ops(m);
  if (missing.empty()) {
    fmt::print("  every operator is supported\n");
    return 0;
  }
  std::vector<std::string> miss;
  for (const auto& [op, n] : missing) miss.push_back(op);
  fmt::print("  unsupported: {}\n", fmt::join(miss, ", "));
  return 1;
}

// --inputs a.npy,b.npy (in the graph's input order) or name=a.npy,name2=b.npy.
std::map<std::string, onnx::Value> read_inputs(const onnx::Runner& r, const std::string& spec) {
  std::map<std::string, onnx::Value> feeds;
  size_t at = 0, index = 0;
  while (!spec.empty() && at <= spec.size()) {
    size_t end = spec.find(',', at);
    std::string item = spec.substr(at, end == std::string::npos ? std::string::npos : end - at);
    std::string name, file = item;
    if (size_t eq = item.find('='); eq != std::string::npos) {
      name = item.substr(0, eq);
      file = item.substr(eq + 1);
    } else {
      if (index >= r.inputs().size())
        throw ValueError(
            std::string(kOnnxCmd),
            fmt::format("--inputs gives {} files; the model has {} inputs", index + 1, r.inputs().size()));
      name = r.inputs()[index].name;
    }
    index++;
    feeds[name] = onnx::npy_load(file, r.device());
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return feeds;
}

int run(const fs::path& path, const Flags& f) {
  onnx::Runner r = onnx::Runner::load(path, f.get("device", ""));
  auto feeds = read_inputs(r, f.get("inputs", ""));
  auto outs = r.run(feeds);
  fs::path out_dir = f.get("out", "");
  if (!out_dir.empty()) fs::create_directories(out_dir);
  for (const auto& o : r.outputs()) {
    const Tensor* t = std::get_if<Tensor>(&outs.at(o.name));
    if (!t) {
      fmt::print("{}: (not a tensor)\n", o.name);
      continue;
    }
    Tensor v = t->cast(dtypes::float64);
    std::vector<double> vals = v.reshape({-1}).to_vector<double>();
    vals.resize(std::min<size_t>(vals.size(), 8));
    fmt::print("{}: {} {} [{}{}]\n", o.name, t->dtype().name(), shape_str(*t), fmt::join(vals, ", "),
               static_cast<int64_t>(t->numel()) > 8 ? ", ..." : "");
    if (!out_dir.empty()) {
      std::string file = o.name;
      for (char& c : file)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') c = '_';
      onnx::npy_save(*t, out_dir / (file + ".npy"));
    }
  }
  return 0;
}

std::vector<std::byte> file_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::vector<char> data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(data.size());
  std::memcpy(out.data(), data.data(), data.size());
  return out;
}

// ONNX's backend checks: same dtype and shape, values within rtol 1e-3 and atol 1e-7, NaN equal to NaN.
std::string compare(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype())
    return fmt::format("dtype {} where {} is expected", got.dtype().name(), want.dtype().name());
  if (got.shape() != want.shape())
    return fmt::format("shape {} where {} is expected", shape_str(got), shape_str(want));
  std::vector<double> g = got.cast(dtypes::float64).reshape({-1}).to_vector<double>();
  std::vector<double> w = want.cast(dtypes::float64).reshape({-1}).to_vector<double>();
  for (size_t i = 0; i < g.size(); i++) {
    if (std::isnan(g[i]) && std::isnan(w[i])) continue;
    if (g[i] == w[i]) continue;
    if (!(std::abs(g[i] - w[i]) <= 1e-7 + 1e-3 * std::abs(w[i])))
      return fmt::format("element {} is {} where {} is expected", i, g[i], w[i]);
  }
  return {};
}

std::string compare(const onnx::Value& got, const onnx::Value& want) {
  if (want.index() != got.index()) return "a value of the wrong kind (tensor, sequence or none)";
  if (const Tensor* w = std::get_if<Tensor>(&want)) return compare(std::get<Tensor>(got), *w);
  if (const auto* ws = std::get_if<onnx::Sequence>(&want)) {
    const auto& gs = std::get<onnx::Sequence>(got);
    if (gs.size() != ws->size())
      return fmt::format("a sequence of {} where {} are expected", gs.size(), ws->size());
    for (size_t i = 0; i < gs.size(); i++)
      if (auto e = compare(gs[i], (*ws)[i]); !e.empty()) return fmt::format("sequence item {}: {}", i, e);
  }
  return {};
}

// ONNX's test data stores bfloat16 tensors as UINT16 bits; the graph's declared type says what they are.
onnx::Value as_declared(onnx::Value v, const onnx::ValueInfo& info) {
  if (auto* t = std::get_if<Tensor>(&v);
      t && info.elem_type == onnx::dtype_to_onnx(dtypes::bfloat16) && t->dtype() == dtypes::uint16)
    *t = t->bitcast(dtypes::bfloat16);
  return v;
}

// One backend test folder: model.onnx and test_data_set_N/{input,output}_M.pb.
std::pair<std::string, std::string> run_case(const fs::path& dir) {
  try {
    onnx::Runner r = onnx::Runner::load(dir / "model.onnx");
    for (int set = 0; fs::exists(dir / fmt::format("test_data_set_{}", set)); set++) {
      fs::path data = dir / fmt::format("test_data_set_{}", set);
      std::map<std::string, onnx::Value> feeds;
      for (size_t i = 0; fs::exists(data / fmt::format("input_{}.pb", i)); i++) {
        if (i >= r.inputs().size()) return {"FAIL", "more input files than graph inputs"};
        feeds[r.inputs()[i].name] =
            as_declared(onnx::parse_value(file_bytes(data / fmt::format("input_{}.pb", i)), r.inputs()[i]),
                        r.inputs()[i]);
      }
      auto outs = r.run(feeds);
      for (size_t i = 0; i < r.outputs().size(); i++) {
        fs::path file = data / fmt::format("output_{}.pb", i);
        if (!fs::exists(file)) continue;
        onnx::Value want = as_declared(onnx::parse_value(file_bytes(file), r.outputs()[i]), r.outputs()[i]);
        if (auto e = compare(outs.at(r.outputs()[i].name), want); !e.empty())
          return {"FAIL", fmt::format("output {}: {}", i, e)};
      }
    }
    return {"PASS", ""};
  } catch (const NotSupportedError& e) {
    return {"UNSUPPORTED", e.what()};
  } catch (const std::exception& e) {
    return {"FAIL", e.what()};
  }
}

// Expected results: "test_name STATUS reason" per line ('#' starts a comment); unlisted tests must pass.
std::map<std::string, std::string> read_expected(const fs::path& p) {
  std::map<std::string, std::string> out;
  if (p.empty()) return out;
  std::ifstream f(p);
  if (!f) throw ValueError(std::string(kOnnxCmd), fmt::format("cannot read --expect '{}'", p.string()));
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream is(line);
    std::string name, status;
    if (!(is >> name) || name[0] == '#') continue;
    is >> status;
    out[name] = status;
  }
  return out;
}

int test(const Flags& f) {
  fs::path suite = f.get("suite", "");
  if (suite.empty() || !fs::is_directory(suite))
    throw ValueError(std::string(kOnnxCmd), "test needs --suite DIR (onnx/backend/test/data/node)");
  std::regex filter(f.get("filter", ".*"));
  auto expected = read_expected(f.get("expect", ""));
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(suite))
    if (fs::exists(e.path() / "model.onnx") && std::regex_search(e.path().filename().string(), filter))
      dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  std::ofstream report;
  if (std::string rp = f.get("report", ""); !rp.empty()) report.open(rp);
  std::map<std::string, int> totals;
  std::vector<std::string> regressions, fixed;
  for (const auto& dir : dirs) {
    std::string name = dir.filename().string();
    auto [status, why] = run_case(dir);
    totals[status]++;
    std::string one_line = why.substr(0, why.find('\n'));
    if (report.is_open()) report << name << ' ' << status << ' ' << one_line << '\n';
    auto it = expected.find(name);
    std::string want = it == expected.end() ? "PASS" : it->second;
    if (status != want) {
      (status == "PASS" ? fixed : regressions)
          .push_back(fmt::format("{}: {} (listed as {}) {}", name, status, want, one_line));
    }
  }
  for (const auto& r : regressions) fmt::print("regression: {}\n", r);
  for (const auto& r : fixed) fmt::print("now passes, remove it from the list: {}\n", r);
  fmt::print("onnx node tests: {} passed, {} failed, {} unsupported of {}\n", totals["PASS"], totals["FAIL"],
             totals["UNSUPPORTED"], dirs.size());
  return regressions.empty() && fixed.empty() ? 0 : 1;
}

}  // namespace

int onnx(Args args) {
  if (args.empty())
    throw ValueError(std::string(kOnnxCmd),
                     "usage: tg onnx info MODEL | run MODEL [--inputs a.npy,...] [--out DIR] | "
                     "test --suite DIR [--expect FILE] [--report FILE] [--filter REGEX]");
  std::string_view sub = args[0];
  if (sub == "test") return test(parse(kOnnxCmd, args.subspan(1), {"suite", "expect", "report", "filter"}));
  if (args.size() < 2) throw ValueError(std::string(kOnnxCmd), fmt::format("{} needs a model file", sub));
  fs::path model(args[1]);
  if (sub == "info") return info(model);
  if (sub == "run") return run(model, parse(kOnnxCmd, args.subspan(2), {"inputs", "out", "device"}));
  throw ValueError(std::string(kOnnxCmd), fmt::format("unknown subcommand '{}' (info, run, test)", sub));
}

}  // namespace tg::cli
