#pragma once
// Adreno's OpenCL C: the OpenCL renderer (plugins/cl) plus tinygrad's IMAGE mode. Every buffer a kernel
// only reads, of float or half with a whole number of RGBA texels that fit the arch's image limits, is
// passed as a read_only image2d_t and read with read_imagef / read_imageh through a nearest/clamp sampler
// (the texture path on Adreno). The decision is the renderer's, over the linear program: the kernel's
// first lines list its images ("// tg-qcom image ..."), and the runtime makes them from the buffers.
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "plugins/cl/opencl_renderer.hpp"

namespace tg::qcom {

// Image limits of the target. Adreno: rows start at multiples of 64 bytes, 16384 texels a side.
struct QcomArch {
  uint32_t pitch_align = 64;  // bytes
  uint32_t max_width = 16384, max_height = 16384;
};

// One buffer argument as an RGBA image of width x height texels (4 elements each), rows packed.
struct ImageLayout {
  int64_t arg = 0;
  bool half = false;  // CL_HALF_FLOAT texels, else CL_FLOAT
  int64_t elements = 0, width = 0, height = 0;
  int64_t row_pitch() const { return width * 4 * (half ? 2 : 4); }
  std::string line() const;  // "// tg-qcom image arg=1 format=float elements=64 width=16 height=1"
};

// The layout of `elements` values as an image, widest rows first; throws tg::ValueError ("[QCOM image]
// ...") when the values do not fill whole RGBA texels or no width gives rows aligned to the pitch.
ImageLayout image_layout(int64_t arg, bool half, int64_t elements, const QcomArch& arch);
// Throws tg::ValueError when a layout breaks the arch's rules (width not whole texels, unaligned pitch,
// too large); what the runtime checks before it makes an image.
void check_image(const ImageLayout& img, const QcomArch& arch);
// The image lines at the start of a rendered kernel; throws tg::ValueError on a malformed line.
std::map<int64_t, ImageLayout> parse_images(std::string_view source);

class QcomRenderer final : public tg::opencl::OpenCLRenderer {
 public:
  QcomRenderer(const tg::sdk::RendererCaps& caps, QcomArch arch, bool images = true);
  tg::sdk::Status render(std::string_view name, std::span<const UOp* const> uops,
                         tg::sdk::Blob& source) noexcept override;

 protected:
  std::string render_load(const UOp& buf, const std::string& b, const std::string& off,
                          DType value) const override;
  std::string render_kernel(const tg::sdk::CKernel& k) const override;

 private:
  QcomArch arch_;
  bool images_on_;
  std::mutex mu_;                           // one render at a time: images_ belongs to it
  std::map<int64_t, ImageLayout> images_;   // by buffer argument, for the kernel being rendered
};

}  // namespace tg::qcom
