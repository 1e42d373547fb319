#include "plugins/qcom/renderer.hpp"

#include <charconv>
#include <set>

#include <fmt/format.h>

#include "base/error.hpp"
#include "uop/uop.hpp"

namespace tg::qcom {

namespace {

constexpr std::string_view kImageLine = "// tg-qcom image ";

const UOp* buffer_root(const UOp* u) {
  while ((u->op() == Ops::INDEX || u->op() == Ops::AFTER) && !u->src().empty()) u = u->src(0).get();
  return u;
}

}  // namespace

std::string ImageLayout::line() const {
  return fmt::format("{}arg={} format={} elements={} width={} height={}\n", kImageLine, arg, half ? "half" : "float",
                     elements, width, height);
}

void check_image(const ImageLayout& img, const QcomArch& arch) {
  if (img.elements % 4 != 0 || img.width * img.height * 4 != img.elements)
    throw ValueError("QCOM image", fmt::format("buffer {}: {} values are not {} x {} RGBA texels; an image's rows "
                                               "must hold a multiple of 4 channels",
                                               img.arg, img.elements, img.width, img.height));
  if (img.width < 1 || img.height < 1 || img.width > arch.max_width || img.height > arch.max_height)
    throw ValueError("QCOM image", fmt::format("buffer {}: {} x {} texels exceed the {} x {} image limit", img.arg,
                                               img.width, img.height, arch.max_width, arch.max_height));
  if (img.height > 1 && img.row_pitch() % arch.pitch_align != 0)
    throw ValueError("QCOM image", fmt::format("buffer {}: a row pitch of {} bytes is not a multiple of the "
                                               "{}-byte alignment the target needs",
                                               img.arg, img.row_pitch(), arch.pitch_align));
}

ImageLayout image_layout(int64_t arg, bool half, int64_t elements, const QcomArch& arch) {
  ImageLayout img{arg, half, elements, 0, 0};
  if (elements % 4 != 0 || elements == 0)
    throw ValueError("QCOM image", fmt::format("buffer {}: {} values do not fill whole RGBA texels (a multiple of 4 "
                                               "channels is needed)",
                                               arg, elements));
  int64_t texels = elements / 4;
  int64_t texel_bytes = half ? 8 : 16;
  for (int64_t w = std::min<int64_t>(texels, arch.max_width); w >= 1; w--) {
    if (texels % w != 0) continue;
    img.width = w, img.height = texels / w;
    if (img.height == 1 || (w * texel_bytes) % arch.pitch_align == 0) {
      check_image(img, arch);
      return img;
    }
  }
  img.width = texels, img.height = 1;
  check_image(img, arch);  // throws: too wide for one row, and no aligned pitch divides it
  return img;
}

std::map<int64_t, ImageLayout> parse_images(std::string_view source) {
  std::map<int64_t, ImageLayout> out;
  for (size_t at = source.find(kImageLine); at != std::string_view::npos; at = source.find(kImageLine, at + 1)) {
    std::string_view line = source.substr(at + kImageLine.size());
    line = line.substr(0, line.find('\n'));
    ImageLayout img;
    std::string format;
    int fields = 0;
    for (size_t p = 0; p < line.size();) {
      size_t end = std::min(line.find(' ', p), line.size());
      std::string_view kv = line.substr(p, end - p);
      p = end + 1;
      size_t eq = kv.find('=');
      if (eq == std::string_view::npos) continue;
      std::string_view k = kv.substr(0, eq), v = kv.substr(eq + 1);
      if (k == "format") {
        format = std::string(v), fields++;
        continue;
      }
      int64_t n = 0;
      if (std::from_chars(v.data(), v.data() + v.size(), n).ec != std::errc()) break;
      int64_t* dst = k == "arg" ? &img.arg : k == "elements" ? &img.elements : k == "width" ? &img.width
                                                           : k == "height"  ? &img.height
                                                                            : nullptr;
      if (dst != nullptr) *dst = n, fields++;
    }
    if (fields != 5 || (format != "float" && format != "half"))
      throw ValueError("QCOM image", fmt::format("malformed image line '{}'", line));
    img.half = format == "half";
    out[img.arg] = img;
  }
  return out;
}

QcomRenderer::QcomRenderer(const tg::sdk::RendererCaps& caps, QcomArch arch, bool images)
    : OpenCLRenderer(caps), arch_(arch), images_on_(images) {}

tg::sdk::Status QcomRenderer::render(std::string_view name, std::span<const UOp* const> uops,
                                     tg::sdk::Blob& source) noexcept {
  std::lock_guard lock(mu_);
  images_.clear();
  if (images_on_) {
    // Read-only float/half buffers whose every use is an element load become images.
    std::set<const UOp*> written, other;
    for (const UOp* u : uops) {
      if (u->op() == Ops::STORE) written.insert(buffer_root(u->src(0).get()));
      if (u->op() == Ops::LOAD && u->dtype().count() != 1) other.insert(buffer_root(u->src(0).get()));
    }
    for (const UOp* u : uops) {
      if (u->op() != Ops::DEFINE_GLOBAL || written.count(u) || other.count(u)) continue;
      DType e = u->dtype().base();
      if (e.count() != 1 || (e.scalar() != Scalar::FLOAT32 && e.scalar() != Scalar::FLOAT16)) continue;
      try {
        images_[u->arg_as<int64_t>()] =
            image_layout(u->arg_as<int64_t>(), e.scalar() == Scalar::FLOAT16, u->dtype().ptr_size(), arch_);
      } catch (const ValueError&) {
        // no image layout fits: the buffer stays a buffer
      }
    }
  }
  return OpenCLRenderer::render(name, uops, source);
}

std::string QcomRenderer::render_load(const UOp& buf, const std::string& b, const std::string& off,
                                      DType value) const {
  if (buf.op() != Ops::DEFINE_GLOBAL) return OpenCLRenderer::render_load(buf, b, off, value);
  auto it = images_.find(buf.arg_as<int64_t>());
  if (it == images_.end()) return OpenCLRenderer::render_load(buf, b, off, value);
  // The texel holding element off, then its channel.
  bool half_read = it->second.half && has_dtype(caps_, static_cast<unsigned>(Scalar::FLOAT16));
  std::string texel = fmt::format("{}({}, tg_smp, tg_xy((int)({}), {}))", half_read ? "read_imageh" : "read_imagef",
                                  b, off, it->second.width);
  std::string chan = fmt::format("{}({}, (int)({}))", half_read ? "tg_chan_h" : "tg_chan_f", texel, off);
  return value.scalar() == Scalar::FLOAT16 && !half_read ? fmt::format("((half){})", chan) : chan;
}

std::string QcomRenderer::render_kernel(const tg::sdk::CKernel& k) const {
  std::string src = OpenCLRenderer::render_kernel(k);
  if (images_.empty()) return src;
  std::string head;
  for (const auto& [arg, img] : images_) {
    head += img.line();
    std::string t = img.half ? "half" : "float";
    std::string param = fmt::format("__global const {}* data{}", t, arg), image = fmt::format("read_only image2d_t data{}", arg);
    for (const char* end : {",", ")"})  // data1 must not match data10
      if (size_t at = src.find(param + end); at != std::string::npos) src.replace(at, param.size(), image);
  }
  std::string helpers =
      "__constant sampler_t tg_smp = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP | CLK_FILTER_NEAREST;\n"
      "inline int2 tg_xy(int i, int w) { return (int2)((i >> 2) % w, (i >> 2) / w); }\n"
      "inline float tg_chan_f(float4 t, int i) { i &= 3; return i == 0 ? t.x : i == 1 ? t.y : i == 2 ? t.z : t.w; }\n";
  if (has_dtype(caps_, static_cast<unsigned>(Scalar::FLOAT16)))
    helpers += "inline half tg_chan_h(half4 t, int i) { i &= 3; return i == 0 ? t.x : i == 1 ? t.y : i == 2 ? t.z : t.w; }\n";
  // The helpers go after the pragmas (which enable half) and before the kernel.
  size_t at = src.find("__kernel ");
  src.insert(at, helpers);
  return head + src;
}

}  // namespace tg::qcom
