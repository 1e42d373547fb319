// clCreateBuffer / sub-buffers and blocking copies on the device's in-order queue.
#include "plugins/cl/allocator.hpp"

#include <fmt/format.h>

namespace tg::cldev {

using tg::sdk::Code;
using tg::sdk::Handle;
using tg::sdk::Status;

namespace {
cl_mem mem(Handle h) { return static_cast<cl_mem>(h); }
}  // namespace

Status ClAllocator::alloc(size_t nbytes, const tg::sdk::AllocOptions& opts, Handle* out) noexcept {
  (void)opts;
  return tg::sdk::guard([&]() -> Status {
    const DeviceInfo& info = ctx_->info();
    if (nbytes > info.max_mem_alloc_size)
      return {Code::out_of_memory,
              fmt::format("[CL alloc] cannot allocate {} bytes: the device allows at most {} "
                          "bytes in one buffer",
                          nbytes, info.max_mem_alloc_size)};
    cl_int err = CL_SUCCESS;
    // OpenCL has no empty buffers; a zero-size one gets one alignment unit so its handle is still distinct.
    size_t n = nbytes == 0 ? alignment() : nbytes;
    cl_mem m = ctx_->cl().clCreateBuffer(ctx_->context(), CL_MEM_READ_WRITE, n, nullptr, &err);
    if (m == nullptr) {
      Status s = cl_status(err, fmt::format("[CL alloc] cannot allocate {} bytes", nbytes));
      return s.code() == Code::out_of_memory || err == CL_INVALID_BUFFER_SIZE
                 ? Status{Code::out_of_memory, s.message()}
                 : std::move(s);
    }
    *out = m;
    return {};
  });
}

void ClAllocator::free(Handle buf, size_t nbytes, const tg::sdk::AllocOptions& opts) noexcept {
  (void)nbytes, (void)opts;
  if (buf != nullptr) ctx_->cl().clReleaseMemObject(mem(buf));  // deferred by OpenCL while a kernel uses it
}

Status ClAllocator::copyin(Handle dst, std::span<const std::byte> src) noexcept {
  if (src.empty()) return {};
  cl_int err = ctx_->cl().clEnqueueWriteBuffer(ctx_->queue(), mem(dst), CL_TRUE, 0, src.size(), src.data(), 0,
                                               nullptr, nullptr);
  return err == CL_SUCCESS ? Status{} : cl_status(err, fmt::format("[CL copyin] {} bytes", src.size()));
}

Status ClAllocator::copyout(std::span<std::byte> dst, Handle src) noexcept {
  if (dst.empty()) return {};
  // Blocking read on the in-order queue: every kernel launched before it has finished.
  cl_int err = ctx_->cl().clEnqueueReadBuffer(ctx_->queue(), mem(src), CL_TRUE, 0, dst.size(), dst.data(), 0,
                                              nullptr, nullptr);
  return err == CL_SUCCESS ? Status{} : cl_status(err, fmt::format("[CL copyout] {} bytes", dst.size()));
}

Status ClAllocator::offset(Handle buf, size_t offset, size_t size, Handle* out) noexcept {
  return tg::sdk::guard([&]() -> Status {
    View v{mem(buf), 0};
    {
      std::lock_guard lock(mu_);
      if (auto it = views_.find(mem(buf)); it != views_.end()) v = it->second;
    }
    v.origin += offset;
    if (v.origin % alignment() != 0)
      return tg::sdk::unsupported(
          fmt::format("[CL offset] a view at byte {} of its buffer: OpenCL sub-buffers start at multiples of "
                      "CL_DEVICE_MEM_BASE_ADDR_ALIGN ({} bytes)",
                      v.origin, alignment()));
    cl_buffer_region region{v.origin, size == 0 ? 1 : size};
    cl_int err = CL_SUCCESS;
    cl_mem m =
        ctx_->cl().clCreateSubBuffer(v.root, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
    if (m == nullptr)
      return cl_status(err, fmt::format("[CL offset] view of {} bytes at byte {}", size, v.origin));
    std::lock_guard lock(mu_);
    views_[m] = v;
    *out = m;
    return {};
  });
}

void ClAllocator::free_view(Handle view) noexcept {
  {
    std::lock_guard lock(mu_);
    views_.erase(mem(view));
  }
  ctx_->cl().clReleaseMemObject(mem(view));
}

Status ClAllocator::transfer(Handle dst, Handle src, size_t nbytes) noexcept {
  if (nbytes == 0) return {};
  cl_int err =
      ctx_->cl().clEnqueueCopyBuffer(ctx_->queue(), mem(src), mem(dst), 0, 0, nbytes, 0, nullptr, nullptr);
  return err == CL_SUCCESS ? Status{} : cl_status(err, fmt::format("[CL transfer] {} bytes", nbytes));
}

}  // namespace tg::cldev
