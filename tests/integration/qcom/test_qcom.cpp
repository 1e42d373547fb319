// The QCOM device on the OpenCL ICD QCOM_ICD names (PoCL here): probe reasons, the image rules (whole RGBA
// texels, the 64-byte row pitch) and a small CNN whose weights are read from images, against PyTorch.
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

// A kernel source whose image line is `image`; the compile error, or "" when accepted.
std::string compile_with_image(const std::string& image) {
  std::string src = "// tg-qcom image " + image +
                    "\n__kernel void k(__global float* data0, read_only image2d_t data1) { data0[0] = 1.0f; }\n";
  tg::sdk::Blob bin;
  tg::sdk::Status s = tg::device("QCOM").compiler().compile(src, bin);
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

BOOST_AUTO_TEST_CASE(a_small_cnn_reads_its_weights_from_images_and_matches_torch) {
  json ref;
  std::ifstream(TG_QCOM_CNN_REFERENCE) >> ref;
  tg::Tensor x = tensor_of(ref["x"]), w1 = tensor_of(ref["w1"]), b1 = tensor_of(ref["b1"]),
             w2 = tensor_of(ref["w2"]), b2 = tensor_of(ref["b2"]), w3 = tensor_of(ref["w3"]), b3 = tensor_of(ref["b3"]);
  tg::Tensor h = x.conv2d(w1, b1, 1, 1).relu();
  h = h.conv2d(w2, b2, 2, 1).relu();
  tg::Tensor y = h.flatten(1).matmul(w3.transpose(0, 1)) + b3;
  // The kernels as QCOM renders them: every weight is read from an image.
  int kernels = 0, with_images = 0;
  for (const tg::ScheduleItemView& si : y.schedule()) {
    if (si.ast->op() != tg::Ops::SINK) continue;
    tg::LinearProgram p = tg::lower_kernel(si.ast, tg::device("QCOM").caps());
    tg::sdk::Blob src;
    tg::check(tg::device("QCOM").renderer().render(p.name, p.view(), src), "render", p.name);
    kernels++;
    if (src.text().find("read_only image2d_t") != std::string_view::npos) with_images++;
  }
  BOOST_TEST_MESSAGE(with_images << " of " << kernels << " kernels read images");
  BOOST_TEST(with_images >= 1);
  std::vector<double> got = y.to_vector<double>(), want = ref["y"]["data"].get<std::vector<double>>();
  BOOST_REQUIRE_EQUAL(got.size(), want.size());
  for (size_t i = 0; i < got.size(); i++) BOOST_TEST(std::abs(got[i] - want[i]) <= 1e-4 * std::max(1.0, std::abs(want[i])), i << ": " << got[i] << " vs " << want[i]);
}
