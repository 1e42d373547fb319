#include "plugins/qcom/renderer.hpp"

#include <charconv>
#include <cstdlib>
#include <numeric>
#include <vector>

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

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Texels an image of `elements` values spans: whole texels in one row, else whole rows of kRowQuantum.
int64_t layout_texels(int64_t elements, const QcomArch& arch) {
  int64_t t = ceil_div(elements, 4);
  return t <= arch.max_width ? t : ceil_div(t, kRowQuantum) * kRowQuantum;
}

// A number the integer expression e is known to be a multiple of (0: e is 0); 1 when nothing is known.
int64_t known_multiple(const UOp* e) {
  auto k = [](const UOpRef& s) { return known_multiple(s.get()); };
  if (e->is_const() && e->dtype().is_int()) return std::abs(std::get<int64_t>(*e->const_value()));
  switch (e->op()) {
    case Ops::ADD:
      return std::gcd(k(e->src(0)), k(e->src(1)));
    case Ops::MUL:
      return std::min<int64_t>(k(e->src(0)) * k(e->src(1)), int64_t{1} << 30);
    case Ops::SHL:
      if (e->src(1)->is_const() && std::get<int64_t>(*e->src(1)->const_value()) < 30)
        return std::min<int64_t>(k(e->src(0)) << std::get<int64_t>(*e->src(1)->const_value()),
                                 int64_t{1} << 30);
      return 1;
    case Ops::CAST:
      return e->dtype().is_int() && e->src(0)->dtype().is_int() ? k(e->src(0)) : 1;
    default:
      return 1;
  }
}

}  // namespace

std::string ImageLayout::line() const {
  return fmt::format("{}arg={} format={} elements={} width={} height={}{}\n", kImageLine, arg,
                     half ? "half" : "float", elements, width, height, write ? " access=write" : "");
}

void check_image(const ImageLayout& img, const QcomArch& arch) {
  if (img.width < 1 || img.height < 1 || img.width * img.height * 4 < img.elements)
    throw ValueError(
        "QCOM image",
        fmt::format("buffer {}: {} values do not fit {} x {} RGBA texels; an image's rows must hold "
                    "a multiple of 4 channels, the values rounded up to whole texels",
                    img.arg, img.elements, img.width, img.height));
  if (img.width * img.height > layout_texels(img.elements, arch))
    throw ValueError(
        "QCOM image",
        fmt::format("buffer {}: {} x {} texels are more than the {} a buffer of {} values is padded to",
                    img.arg, img.width, img.height, layout_texels(img.elements, arch), img.elements));
  if (img.width > arch.max_width || img.height > arch.max_height)
    throw ValueError("QCOM image", fmt::format("buffer {}: {} x {} texels exceed the {} x {} image limit", img.arg,
                                               img.width, img.height, arch.max_width, arch.max_height));
  if (img.height > 1 && img.row_pitch() % arch.pitch_align != 0)
    throw ValueError("QCOM image", fmt::format("buffer {}: a row pitch of {} bytes is not a multiple of the "
                                               "{}-byte alignment the target needs",
                                               img.arg, img.row_pitch(), arch.pitch_align));
}

ImageLayout image_layout(int64_t arg, bool half, int64_t elements, const QcomArch& arch) {
  ImageLayout img{arg, half, false, elements, 0, 0};
  if (elements <= 0)
    throw ValueError("QCOM image", fmt::format("buffer {}: an image of {} values", arg, elements));
  int64_t texels = layout_texels(elements, arch);
  img.width = texels, img.height = 1;
  if (texels > arch.max_width) {  // the widest rows of whole quanta that divide the texels
    img.width = kRowQuantum, img.height = texels / kRowQuantum;
    for (int64_t d = arch.max_width / kRowQuantum; d > 1; d--)
      if ((texels / kRowQuantum) % d == 0) {
        img.width = d * kRowQuantum, img.height = texels / img.width;
        break;
      }
  }
  check_image(img, arch);
  return img;
}

size_t padded_bytes(size_t nbytes, const QcomArch& arch) {
  size_t out = std::max<size_t>(ceil_div(static_cast<int64_t>(nbytes), 16) * 16, 16);
  for (int64_t item : {2, 4}) {
    int64_t texels = layout_texels(ceil_div(static_cast<int64_t>(nbytes), item), arch);
    out = std::max(out, static_cast<size_t>(texels * 4 * item));
  }
  return out;
}

std::map<int64_t, ImageLayout> parse_images(std::string_view source) {
  std::map<int64_t, ImageLayout> out;
  for (size_t at = source.find(kImageLine); at != std::string_view::npos; at = source.find(kImageLine, at + 1)) {
    std::string_view line = source.substr(at + kImageLine.size());
    line = line.substr(0, line.find('\n'));
    ImageLayout img;
    std::string format, access = "read";
    int fields = 0;
    for (size_t p = 0; p < line.size();) {
      size_t end = std::min(line.find(' ', p), line.size());
      std::string_view kv = line.substr(p, end - p);
      p = end + 1;
      size_t eq = kv.find('=');
      if (eq == std::string_view::npos) continue;
      std::string_view k = kv.substr(0, eq), v = kv.substr(eq + 1);
      if (k == "format" || k == "access") {
        (k == "format" ? format : access) = std::string(v), fields += k == "format";
        continue;
      }
      int64_t n = 0;
      if (std::from_chars(v.data(), v.data() + v.size(), n).ec != std::errc()) break;
      int64_t* dst = k == "arg" ? &img.arg : k == "elements" ? &img.elements : k == "width" ? &img.width
                                                           : k == "height"  ? &img.height
                                                                            : nullptr;
      if (dst != nullptr) *dst = n, fields++;
    }
    if (fields != 5 || (format != "float" && format != "half") || (access != "read" && access != "write"))
      throw ValueError("QCOM image", fmt::format("malformed image line '{}'", line));
    img.half = format == "half", img.write = access == "write";
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
    // Float/half buffers the kernel only reads become read_only images; float buffers it only writes, each
    // store a whole texel (float4 at a multiple of 4), write_only images.
    struct Use {
      int loads = 0, stores = 0, texel_stores = 0;
    };
    std::map<const UOp*, Use> use;
    for (const UOp* u : uops) {
      if (u->op() == Ops::LOAD) use[buffer_root(u->src(0).get())].loads++;
      if (u->op() != Ops::STORE) continue;
      Use& b = use[buffer_root(u->src(0).get())];
      b.stores++;
      const UOp* idx = u->src(0).get();
      b.texel_stores += u->src(1)->dtype() == dtypes::float32.vec(4) && idx->op() == Ops::INDEX &&
                        known_multiple(idx->src(1).get()) % 4 == 0;
    }
    for (const UOp* u : uops) {
      if (u->op() != Ops::DEFINE_GLOBAL) continue;
      DType e = u->dtype().base();
      const Use& b = use[u];
      bool half = e == dtypes::float16;
      bool read = b.stores == 0 && (e == dtypes::float32 || half);
      bool write = b.loads == 0 && b.stores > 0 && b.texel_stores == b.stores && e == dtypes::float32;
      if (!read && !write) continue;
      try {
        ImageLayout img = image_layout(u->arg_as<int64_t>(), half, u->dtype().ptr_size(), arch_);
        img.write = write;
        images_[img.arg] = img;
      } catch (const ValueError&) {
        // no image layout fits: the buffer stays a buffer
      }
    }
  }
  return OpenCLRenderer::render(name, uops, source);
}

std::string QcomRenderer::render_load(const UOp& buf, const std::string& b, const std::string& off,
                                      DType value) const {
  auto it = buf.op() == Ops::DEFINE_GLOBAL ? images_.find(buf.arg_as<int64_t>()) : images_.end();
  if (it == images_.end() || it->second.write) return OpenCLRenderer::render_load(buf, b, off, value);
  int64_t w = it->second.width;
  if (value.count() == 4 && value.scalar() == Scalar::FLOAT32)
    return fmt::format("tg_read4f({}, (int)({}), {})", b, off, w);  // float: one texel if aligned
  if (value.count() > 1) {
    std::vector<std::string> lanes;
    for (int i = 0; i < value.count(); i++)
      lanes.push_back(
          fmt::format("(({})tg_readf({}, (int)({})+{}, {}))", type_name(value.scalar_type()), b, off, i, w));
    return render_vectorize(value, lanes);
  }
  // The texel holding element off, then its channel.
  bool half_read = it->second.half && has_dtype(caps_, static_cast<unsigned>(Scalar::FLOAT16));
  std::string chan = fmt::format("{}({}, (int)({}), {})", half_read ? "tg_readh" : "tg_readf", b, off, w);
  return value.scalar() == Scalar::FLOAT16 && !half_read ? fmt::format("((half){})", chan) : chan;
}

// Only whole float4 texels at multiples of 4 reach an output image (render() checks every store).
std::string QcomRenderer::render_store(const UOp& buf, const std::string& b, const std::string& off,
                                       const std::string& x, DType value) const {
  auto it = buf.op() == Ops::DEFINE_GLOBAL ? images_.find(buf.arg_as<int64_t>()) : images_.end();
  if (it == images_.end() || !it->second.write) return OpenCLRenderer::render_store(buf, b, off, x, value);
  return fmt::format("write_imagef({}, tg_xy((int)({}), {}), {});", b, off, it->second.width, x);
}

std::string QcomRenderer::render_kernel(const tg::sdk::CKernel& k) const {
  std::string src = OpenCLRenderer::render_kernel(k);
  if (images_.empty()) return src;
  std::string head;
  for (const auto& [arg, img] : images_) {
    head += img.line();
    std::string t = img.half ? "half" : "float";
    std::string param = fmt::format("__global {}{}* data{}", img.write ? "" : "const ", t, arg);
    std::string image = fmt::format("{} image2d_t data{}", img.write ? "write_only" : "read_only", arg);
    for (const char* end : {",", ")"})  // data1 must not match data10
      if (size_t at = src.find(param + end); at != std::string::npos) src.replace(at, param.size(), image);
  }
  // Element i of an image of width w: channel i % 4 of texel i / 4, at (texel % w, texel / w).
  std::string helpers =
      "__constant sampler_t tg_smp = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP | CLK_FILTER_NEAREST;\n"
      "inline int2 tg_xy(int i, int w) { return (int2)((i >> 2) % w, (i >> 2) / w); }\n"
      "inline float tg_chan_f(float4 t, int i) { i &= 3; return i == 0 ? t.x : i == 1 ? t.y : i == 2 ? t.z : "
      "t.w; }\n"
      "inline float tg_readf(read_only image2d_t im, int i, int w) { return tg_chan_f(read_imagef(im, "
      "tg_smp, "
      "tg_xy(i, w)), i); }\n"
      "inline float4 tg_read4f(read_only image2d_t im, int i, int w) {\n"
      "  if ((i & 3) == 0) return read_imagef(im, tg_smp, tg_xy(i, w));\n"
      "  return (float4)(tg_readf(im, i, w), tg_readf(im, i + 1, w), tg_readf(im, i + 2, w), tg_readf(im, i "
      "+ 3, w));\n"
      "}\n";
  if (has_dtype(caps_, static_cast<unsigned>(Scalar::FLOAT16)))
    helpers +=
        "inline half tg_chan_h(half4 t, int i) { i &= 3; return i == 0 ? t.x : i == 1 ? t.y : i == 2 ? t.z : "
        "t.w; }\n"
        "inline half tg_readh(read_only image2d_t im, int i, int w) { return tg_chan_h(read_imageh(im, "
        "tg_smp, "
        "tg_xy(i, w)), i); }\n";
  // The helpers go after the pragmas (which enable half) and before the kernel.
  size_t at = src.find("__kernel ");
  src.insert(at, helpers);
  return head + src;
}

}  // namespace tg::qcom
