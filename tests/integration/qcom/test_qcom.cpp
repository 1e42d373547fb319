// The QCOM device on the OpenCL ICD QCOM_ICD names (PoCL here): probe reasons, the image rules (whole RGBA
// texels, the 64-byte row pitch), outputs written as float4 texels (write_imagef), what stays a buffer, and a
// small CNN that reads its weights from images and writes its activations to images, against PyTorch.
#define BOOST_TEST_MODULE qcom
#include <boost/test/unit_test.hpp>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "codegen/lower.hpp"
#include "common/test_support.hpp"
#include "runtime/check.hpp"
#include "runtime/registry.hpp"
#include "tensor/realize.hpp"
#include "tensor/tensor.hpp"

namespace {

using tg::test::run_command;
using tg::test::shell_quote;
using json = nlohmann::json;

std::string devices(const std::string& env) {
  return run_command(fmt::format("env TG_PLUGIN_PATH={} {} {} devices 2>&1", shell_quote(TG_QCOM_PLUGIN), env,
                                 shell_quote(TG_CLI)))
      .out;
}

tg::Tensor tensor_of(const json& t) {
  return tg::Tensor(t.at("data").get<std::vector<double>>(), t.at("shape").get<tg::Shape>(), tg::dtypes::float32,
                    "QCOM");
}

// The QCOM source of each kernel t's schedule runs (the renderer decides the images there).
std::vector<std::string> sources(const tg::Tensor& t) {
  std::vector<std::string> out;
  for (const tg::engine::ScheduleItemView& si : t.schedule()) {
    if (si.ast->op() != tg::Ops::SINK) continue;
    tg::codegen::LinearProgram p = tg::codegen::lower_kernel(si.ast, tg::runtime::device("QCOM").caps());
    tg::sdk::Blob src;
    tg::runtime::check(tg::runtime::device("QCOM").renderer().render(p.name, p.view(), src), "render",
                       p.name);
    out.emplace_back(src.text());
  }
  return out;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// n values i * 0.5 - 7 and i % 7 - 3 (exact in float, as are 2a + b).
std::vector<double> ramp(int64_t n) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; i++) v.push_back(static_cast<double>(i) * 0.5 - 7);
  return v;
}
std::vector<double> steps(int64_t n) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; i++) v.push_back(static_cast<double>(i % 7 - 3));
  return v;
}

// A kernel source whose image line is `image`; the compile error, or "" when accepted.
std::string compile_with_image(const std::string& image) {
  std::string src = "// tg-qcom image " + image +
                    "\n__kernel void k(__global float* data0, read_only image2d_t data1) { data0[0] = 1.0f; }\n";
  tg::sdk::Blob bin;
  tg::sdk::Status s = tg::runtime::device("QCOM").compiler().compile(src, bin);
  return s.ok() ? "" : std::string(s.message());
}

}  // namespace

BOOST_AUTO_TEST_CASE(probe_reasons_name_what_is_missing) {
  std::string none = devices("QCOM_ICD=");
  BOOST_TEST(none.find("unavailable: no Adreno GPU (/dev/kgsl-3d0 not found); set QCOM_ICD=") != std::string::npos,
             none);
  std::string missing = devices("QCOM_ICD=/nonexistent/libOpenCL.so");
  BOOST_TEST(missing.find("the OpenCL ICD /nonexistent/libOpenCL.so cannot be loaded") != std::string::npos, missing);
  std::string ok = devices("");  // QCOM_ICD from the test's environment
  BOOST_TEST(ok.find("QCOM") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(images_need_whole_texels_and_an_aligned_pitch) {
  BOOST_TEST(compile_with_image("arg=1 format=float elements=64 width=16 height=1") == "");
  BOOST_TEST(compile_with_image("arg=1 format=float elements=6 width=1 height=1").find("multiple of 4 channels") !=
             std::string::npos);
  // 3 float texels a row are 48 bytes: not a multiple of Adreno's 64.
  BOOST_TEST(compile_with_image("arg=1 format=float elements=24 width=3 height=2")
                 .find("a row pitch of 48 bytes is not a multiple of the 64-byte alignment") != std::string::npos);
  BOOST_TEST(compile_with_image("arg=1 format=half elements=64 width=8 height=2") == "");  // 64-byte half rows
  BOOST_TEST(compile_with_image("arg=1 format=float elements=64").find("malformed image line") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(float4_outputs_are_written_as_image_texels) {
  tg::Tensor a(ramp(120), {3, 40}, tg::dtypes::float32, "QCOM"),
      b(steps(120), {3, 40}, tg::dtypes::float32, "QCOM");
  tg::Tensor y = a * 2.0 + b;
  std::vector<std::string> src = sources(y);
  BOOST_TEST_REQUIRE(src.size() == 1u);
  // Each work item stores one texel: 120 values, 30 float texels in one row.
  BOOST_TEST(has(src[0], "// tg-qcom image arg=0 format=float elements=120 width=30 height=1 access=write"),
             src[0]);
  BOOST_TEST(has(src[0], "write_only image2d_t data0"), src[0]);
  BOOST_TEST(has(src[0], "write_imagef(data0, tg_xy("), src[0]);
  BOOST_TEST(has(src[0], "read_only image2d_t data1"), src[0]);
  std::vector<double> got = y.to_vector<double>(), x = ramp(120), z = steps(120);
  BOOST_REQUIRE_EQUAL(got.size(), 120u);
  for (size_t i = 0; i < got.size(); i++) BOOST_TEST(got[i] == 2 * x[i] + z[i], i);
}

// The loader's DEBUG=2 line counts the kernel's output image (the test above, run again with DEBUG=2).
BOOST_AUTO_TEST_CASE(debug_line_counts_written_images) {
  const auto& suite = boost::unit_test::framework::master_test_suite();
  std::string out =
      run_command(fmt::format("env DEBUG=2 {} --run_test=float4_outputs_are_written_as_image_texels 2>&1",
                              shell_quote(suite.argv[0])))
          .out;
  BOOST_TEST(
      has(out,
          ": 3 image argument(s), 2 read, 1 written; of 1 kernels loaded so far 1 read images, 1 write "
          "images"),
      out);
  BOOST_TEST(has(out, "No errors detected"), out);
}

// Outputs stay buffers when a store is not a whole texel: scalar stores (11 values a row) or a float4 at an
// index not known to be a multiple of 4. Inputs of any size are images (buffers are padded to whole texels).
BOOST_AUTO_TEST_CASE(partial_texel_stores_keep_a_buffer) {
  tg::Tensor a(ramp(33), {3, 11}, tg::dtypes::float32, "QCOM"),
      b(steps(33), {3, 11}, tg::dtypes::float32, "QCOM");
  tg::Tensor y = a * 2.0 + b;
  std::vector<std::string> src = sources(y);
  BOOST_TEST_REQUIRE(src.size() == 1u);
  BOOST_TEST(!has(src[0], "write_only"), src[0]);
  BOOST_TEST(has(src[0], "__global float* data0"), src[0]);
  // 33 values: 9 texels, the last with one value and three of padding.
  BOOST_TEST(has(src[0], "// tg-qcom image arg=1 format=float elements=33 width=9 height=1"), src[0]);
  std::vector<double> got = y.to_vector<double>(), x = ramp(33), z = steps(33);
  BOOST_REQUIRE_EQUAL(got.size(), 33u);
  for (size_t i = 0; i < got.size(); i++) BOOST_TEST(got[i] == 2 * x[i] + z[i], i);

  // out[i + 1] = x[i] for i < 64 with float4 stores at 4k + 1: a buffer, vstore4.
  using tg::UOp, tg::UOpRef, tg::Ops;
  namespace dtypes = tg::dtypes;
  auto glob = [](int64_t arg, int64_t n) {
    return UOp::make(Ops::DEFINE_GLOBAL, dtypes::float32.ptr(tg::AddrSpace::GLOBAL, n), {}, arg);
  };
  auto c = [](int64_t v) { return UOp::const_(dtypes::index, tg::ConstValue{v}); };
  UOpRef r = UOp::range(c(64), 0, tg::AxisType::LOOP), out = glob(0, 68), in = glob(1, 64);
  UOpRef v = UOp::make(Ops::LOAD, dtypes::float32, {UOp::make(Ops::INDEX, in->dtype(), {in, r})});
  UOpRef st = UOp::make(Ops::STORE, dtypes::void_, {UOp::make(Ops::INDEX, out->dtype(), {out, r + c(1)}), v});
  UOpRef ast = UOp::sink({UOp::make(Ops::END, dtypes::void_, {st, r})});
  tg::codegen::LinearProgram p =
      tg::codegen::lower_kernel(ast, tg::runtime::device("QCOM").caps(),
                                {.opts = std::vector<tg::codegen::Opt>{{tg::codegen::OptOps::UPCAST, 0, 4}}});
  tg::sdk::Blob shifted;
  tg::runtime::check(tg::runtime::device("QCOM").renderer().render(p.name, p.view(), shifted), "render",
                     p.name);
  std::string text(shifted.text());
  BOOST_TEST(has(text, "vstore4("), text);
  BOOST_TEST(!has(text, "write_only"), text);
  BOOST_TEST(has(text, "tg_read4f(data1"), text);  // the input: one texel per float4
}

// Past one row (16384 texels) an image has rows of whole 1024-texel quanta: 65540 values are 16385 texels,
// padded to 17 rows of 1024; the allocator padded both buffers to that, and the result is still exact.
BOOST_AUTO_TEST_CASE(images_past_one_row_are_padded_to_whole_rows) {
  tg::Tensor a(ramp(65540), {65540}, tg::dtypes::float32, "QCOM");
  tg::Tensor y = a * 2.0;
  std::vector<std::string> src = sources(y);
  BOOST_TEST_REQUIRE(src.size() == 1u);
  BOOST_TEST(
      has(src[0], "// tg-qcom image arg=0 format=float elements=65540 width=1024 height=17 access=write"),
      src[0]);
  BOOST_TEST(has(src[0], "// tg-qcom image arg=1 format=float elements=65540 width=1024 height=17"), src[0]);
  std::vector<double> got = y.to_vector<double>(), x = ramp(65540);
  BOOST_REQUIRE_EQUAL(got.size(), 65540u);
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); i++) bad += got[i] != 2 * x[i];
  BOOST_TEST(bad == 0u);
}

BOOST_AUTO_TEST_CASE(a_small_cnn_reads_its_weights_from_images_and_matches_torch) {
  json ref;
  std::ifstream(TG_QCOM_CNN_REFERENCE) >> ref;
  tg::Tensor x = tensor_of(ref["x"]), w1 = tensor_of(ref["w1"]), b1 = tensor_of(ref["b1"]),
             w2 = tensor_of(ref["w2"]), b2 = tensor_of(ref["b2"]), w3 = tensor_of(ref["w3"]), b3 = tensor_of(ref["b3"]);
  tg::Tensor h = x.conv2d(w1, b1, 1, 1).relu();
  h = h.conv2d(w2, b2, 2, 1).relu();
  tg::Tensor y = h.flatten(1).matmul(w3.transpose(0, 1)) + b3;
  // The kernels as QCOM renders them: every weight is read from an image, the convs' outputs (and their
  // padded copies) are written to images.
  int kernels = 0, reading = 0, writing = 0;
  for (const std::string& src : sources(y)) {
    kernels++;
    reading += has(src, "read_only image2d_t");
    writing += has(src, "write_only image2d_t") && has(src, "write_imagef(");
  }
  BOOST_TEST_MESSAGE(reading << " of " << kernels << " kernels read images, " << writing << " write them");
  BOOST_TEST(reading == kernels);
  BOOST_TEST(writing == 5);  // all but the last matmul (10 outputs a row: scalar stores)
  std::vector<double> got = y.to_vector<double>(), want = ref["y"]["data"].get<std::vector<double>>();
  BOOST_REQUIRE_EQUAL(got.size(), want.size());
  for (size_t i = 0; i < got.size(); i++) BOOST_TEST(std::abs(got[i] - want[i]) <= 1e-4 * std::max(1.0, std::abs(want[i])), i << ": " << got[i] << " vs " << want[i]);
}
