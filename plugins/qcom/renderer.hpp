#pragma once
// Adreno's OpenCL C: the OpenCL renderer (plugins/cl) plus tinygrad's IMAGE mode. Every float or half
// buffer a kernel only reads is passed as a read_only image2d_t and read with read_imagef / read_imageh
// through a nearest/clamp sampler (the texture path on Adreno); every float buffer it only writes, with
// whole float4 texels at indices known to be multiples of 4, is a write_only image2d_t written with
// write_imagef. The decision is the renderer's, over the linear program: the kernel's first lines list its
// images ("// tg-qcom image ..."), and the runtime makes them from the buffers.
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

// Images of more than one row have rows of a multiple of this many texels (64-byte pitch for float and half).
inline constexpr int64_t kRowQuantum = 1024;

// One buffer argument as an RGBA image of width x height texels (4 elements each), rows packed.
struct ImageLayout {
  int64_t arg = 0;
  bool half = false;   // CL_HALF_FLOAT texels, else CL_FLOAT
  bool write = false;  // a write_only image the kernel fills with write_imagef (copied back after it)
  int64_t elements = 0, width = 0, height = 0;
  int64_t row_pitch() const { return width * 4 * (half ? 2 : 4); }
  int64_t bytes() const { return row_pitch() * height; }
  // "// tg-qcom image arg=1 format=float elements=64 width=16 height=1" (+ " access=write" for an output)
  std::string line() const;
};

// The layout of `elements` values as an image: one row of ceil(elements / 4) texels when it fits, else rows
// of a multiple of kRowQuantum texels (the last values padded up to whole rows). Its bytes may exceed the
// values' (up to one texel, or up to kRowQuantum texels past one row): the allocator pads every buffer so
// (padded_bytes), and what lies past the values is never used. Throws tg::ValueError ("[QCOM image] ...")
// when no layout fits the arch's limits.
ImageLayout image_layout(int64_t arg, bool half, int64_t elements, const QcomArch& arch);
// The bytes to allocate for a buffer of nbytes, so that its values, as float or as half, can be an image.
size_t padded_bytes(size_t nbytes, const QcomArch& arch);
// Throws tg::ValueError when a layout breaks the arch's rules (texels short of the values, more texels
// than the padded buffer holds, unaligned pitch, too large); what the runtime checks before it makes an
// image.
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
  std::string render_store(const UOp& buf, const std::string& b, const std::string& off, const std::string& x,
                           DType value) const override;
  std::string render_kernel(const tg::sdk::CKernel& k) const override;

 private:
  QcomArch arch_;
  bool images_on_;
  std::mutex mu_;                           // one render at a time: images_ belongs to it
  std::map<int64_t, ImageLayout> images_;   // by buffer argument, for the kernel being rendered
};

}  // namespace tg::qcom
