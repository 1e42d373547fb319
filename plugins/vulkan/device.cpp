// VULKAN: compute through the Vulkan API. GLSL from the renderer, SPIR-V from shaderc, pipelines per
// workgroup size, one submission per launch, timestamp queries for the kernel time.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "base/env.hpp"
#include "base/error.hpp"
#include "plugins/vulkan/allocator.hpp"
#include "plugins/vulkan/compiler.hpp"
#include "plugins/vulkan/context.hpp"
#include "plugins/vulkan/renderer.hpp"
#include "tg/sdk/plugin.hpp"

// The variables this plugin reads (`tg env` lists them under VULKAN).
const tg::env::Declare kEnv{
    "VULKAN",
    {
        {"TG_VULKAN_STAGING", "0",
         "1 = VULKAN copies through staging buffers even when device memory is host-visible", true},
    }};

namespace tg::vulkan {

using tg::sdk::Code;
using tg::sdk::Status;

namespace {

constexpr uint32_t kSpirvMagic = 0x07230203;

// Workgroup size and count. Launches without local dims get up to kGroup invocations per workgroup (the
// shader skips those past the global size), so SIMD lanes are not left idle one invocation per group.
constexpr uint32_t kGroup = 64;
std::pair<std::array<uint32_t, 3>, std::array<uint32_t, 3>> workgroups(const tg::sdk::LaunchDims& d,
                                                                       const VkPhysicalDeviceLimits& lim) {
  if (d.local != std::array<uint32_t, 3>{1, 1, 1}) return {d.local, d.global};
  std::array<uint32_t, 3> local{1, 1, 1}, groups{};
  uint32_t budget = std::min(kGroup, lim.maxComputeWorkGroupInvocations);
  for (int i = 0; i < 3; i++) {
    while (local[i] * 2 <= std::min(budget, lim.maxComputeWorkGroupSize[i]) && local[i] < d.global[i]) local[i] *= 2;
    budget /= local[i];
    groups[i] = (d.global[i] + local[i] - 1) / local[i];
  }
  return {local, groups};
}

// A pipeline for one (workgroup size, buffer count, int argument count) of a shader module.
struct Pipeline {
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
};

class VulkanProgram final : public tg::sdk::Program {
 public:
  VulkanProgram(Context& ctx, VkShaderModule module, VkQueryPool timer) : ctx_(ctx), module_(module), timer_(timer) {}
  ~VulkanProgram() override {
    std::lock_guard lock(ctx_.mutex());
    try {
      ctx_.wait_all();
    } catch (...) {
    }
    const vk::DeviceFns& fn = ctx_.fn();
    for (auto& [key, p] : pipelines_) {
      fn.vkDestroyPipeline(ctx_.device(), p.pipeline, nullptr);
      fn.vkDestroyPipelineLayout(ctx_.device(), p.layout, nullptr);
      fn.vkDestroyDescriptorSetLayout(ctx_.device(), p.set_layout, nullptr);
    }
    fn.vkDestroyShaderModule(ctx_.device(), module_, nullptr);
  }

  Status launch(std::span<const tg::sdk::Handle> bufs, std::span<const int64_t> vals, const tg::sdk::LaunchDims& dims,
                bool wait, double* seconds) noexcept override {
    return tg::sdk::guard([&]() -> Status {
      const VkPhysicalDeviceLimits& lim = ctx_.props().limits;
      auto [local, groups] = workgroups(dims, lim);
      for (int i = 0; i < 3; i++)
        if (dims.global[i] == 0 || groups[i] > lim.maxComputeWorkGroupCount[i] || local[i] == 0 ||
            local[i] > lim.maxComputeWorkGroupSize[i])
          return {Code::invalid_argument,
                  fmt::format("[VULKAN launch] global ({},{},{}) local ({},{},{}) outside the device limits",
                              dims.global[0], dims.global[1], dims.global[2], dims.local[0], dims.local[1],
                              dims.local[2])};
      if (16 + vals.size() * 8 > lim.maxPushConstantsSize)
        return {Code::invalid_argument,
                fmt::format("[VULKAN launch] {} int arguments; push constants hold {}", vals.size(),
                            (lim.maxPushConstantsSize - 16) / 8)};
      for (tg::sdk::Handle h : bufs) {
        auto* b = static_cast<const VulkanBuffer*>(h);
        if (b->size > lim.maxStorageBufferRange)
          return tg::sdk::unsupported(fmt::format("[VULKAN launch] a {}-byte buffer exceeds maxStorageBufferRange ({})",
                                                  b->size, lim.maxStorageBufferRange));
      }
      std::lock_guard lock(ctx_.mutex());
      const Pipeline& p = pipeline(local, static_cast<uint32_t>(bufs.size()), static_cast<uint32_t>(vals.size()));
      const vk::DeviceFns& fn = ctx_.fn();
      VkDevice dev = ctx_.device();

      VkDescriptorPool pool = VK_NULL_HANDLE;
      VkDescriptorSet set = VK_NULL_HANDLE;
      if (!bufs.empty()) {
        VkDescriptorPoolSize ps{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, static_cast<uint32_t>(bufs.size())};
        VkDescriptorPoolCreateInfo pci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
        pci.maxSets = 1, pci.poolSizeCount = 1, pci.pPoolSizes = &ps;
        vk::check(fn.vkCreateDescriptorPool(dev, &pci, nullptr, &pool), "vkCreateDescriptorPool");
        VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
        ai.descriptorPool = pool, ai.descriptorSetCount = 1, ai.pSetLayouts = &p.set_layout;
        VkResult r = fn.vkAllocateDescriptorSets(dev, &ai, &set);
        if (r != VK_SUCCESS) fn.vkDestroyDescriptorPool(dev, pool, nullptr);
        vk::check(r, "vkAllocateDescriptorSets");
        std::vector<VkDescriptorBufferInfo> infos(bufs.size());
        std::vector<VkWriteDescriptorSet> writes(bufs.size());
        for (size_t i = 0; i < bufs.size(); i++) {
          auto* b = static_cast<const VulkanBuffer*>(bufs[i]);
          infos[i] = {b->buffer, b->offset, std::max<VkDeviceSize>(b->size, 4)};
          writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
          writes[i].dstSet = set, writes[i].dstBinding = static_cast<uint32_t>(i), writes[i].descriptorCount = 1;
          writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, writes[i].pBufferInfo = &infos[i];
        }
        fn.vkUpdateDescriptorSets(dev, static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);
      }
      VkCommandBuffer cmd = ctx_.begin();
      fn.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
      if (set != VK_NULL_HANDLE)
        fn.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set, 0, nullptr);
      // tg_grid, then each value in an 8-byte slot, little-endian: an int member reads the low half
      std::vector<uint32_t> push(4 + 2 * vals.size());
      std::memcpy(push.data(), dims.global.data(), 12);  // tg_grid; push[3] = 0.0f is tg_zero
      if (!vals.empty()) std::memcpy(push.data() + 4, vals.data(), vals.size() * 8);
      fn.vkCmdPushConstants(cmd, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, static_cast<uint32_t>(push.size() * 4),
                            push.data());
      const bool timed = wait && seconds != nullptr && timer_ != VK_NULL_HANDLE;
      if (timed) {
        fn.vkCmdResetQueryPool(cmd, timer_, 0, 2);
        fn.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, timer_, 0);
      }
      fn.vkCmdDispatch(cmd, groups[0], groups[1], groups[2]);
      if (timed) fn.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, timer_, 1);
      auto start = std::chrono::steady_clock::now();
      ctx_.submit(cmd, pool, wait);
      if (wait && seconds != nullptr) {
        double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        *seconds = wall;
        uint64_t ts[2] = {0, 0};
        if (timed && fn.vkGetQueryPoolResults(dev, timer_, 0, 2, sizeof ts, ts, sizeof(uint64_t),
                                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) == VK_SUCCESS) {
          uint64_t mask = ctx_.timestamp_bits() >= 64 ? ~uint64_t{0} : (uint64_t{1} << ctx_.timestamp_bits()) - 1;
          uint64_t ticks = ((ts[1] & mask) - (ts[0] & mask)) & mask;
          // a device clock too coarse to see the kernel keeps the host's wall time
          if (ticks > 0) *seconds = static_cast<double>(ticks) * ctx_.props().limits.timestampPeriod * 1e-9;
        }
      }
      return {};
    });
  }

 private:
  const Pipeline& pipeline(const std::array<uint32_t, 3>& local, uint32_t nbufs, uint32_t nvals) {
    auto key = std::make_tuple(local[0], local[1], local[2], nbufs, nvals);
    if (auto it = pipelines_.find(key); it != pipelines_.end()) return it->second;
    const vk::DeviceFns& fn = ctx_.fn();
    VkDevice dev = ctx_.device();
    Pipeline p;
    std::vector<VkDescriptorSetLayoutBinding> bindings(nbufs);
    for (uint32_t i = 0; i < nbufs; i++)
      bindings[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
    VkDescriptorSetLayoutCreateInfo dci{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    dci.bindingCount = nbufs, dci.pBindings = bindings.data();
    vk::check(fn.vkCreateDescriptorSetLayout(dev, &dci, nullptr, &p.set_layout), "vkCreateDescriptorSetLayout");
    VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, 16 + nvals * 8};
    VkPipelineLayoutCreateInfo lci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    lci.setLayoutCount = 1, lci.pSetLayouts = &p.set_layout;
    lci.pushConstantRangeCount = 1, lci.pPushConstantRanges = &range;
    VkResult r = fn.vkCreatePipelineLayout(dev, &lci, nullptr, &p.layout);
    if (r != VK_SUCCESS) fn.vkDestroyDescriptorSetLayout(dev, p.set_layout, nullptr);
    vk::check(r, "vkCreatePipelineLayout");
    // The workgroup size is specialization constants 0..2 (local_size_x_id...), set from the launch.
    VkSpecializationMapEntry entries[3] = {{0, 0, 4}, {1, 4, 4}, {2, 8, 4}};
    VkSpecializationInfo spec{3, entries, sizeof(uint32_t) * 3, local.data()};
    VkComputePipelineCreateInfo pci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    pci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    pci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT, pci.stage.module = module_, pci.stage.pName = "main";
    pci.stage.pSpecializationInfo = &spec;
    pci.layout = p.layout;
    r = fn.vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &pci, nullptr, &p.pipeline);
    if (r != VK_SUCCESS) {
      fn.vkDestroyPipelineLayout(dev, p.layout, nullptr);
      fn.vkDestroyDescriptorSetLayout(dev, p.set_layout, nullptr);
    }
    vk::check(r, "vkCreateComputePipelines");
    return pipelines_.emplace(key, p).first->second;
  }

  Context& ctx_;
  VkShaderModule module_;
  VkQueryPool timer_;
  std::map<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t, uint32_t>, Pipeline> pipelines_;
};

std::string device_key(const Context& ctx) {
  return fmt::format("{} driver 0x{:x}", ctx.props().deviceName, ctx.props().driverVersion);
}

class VulkanDevice final : public tg::sdk::Device {
 public:
  // Below CLANG (50): a Vulkan device may be a software rasterizer; DEV=VULKAN picks it explicitly.
  static constexpr int32_t priority = 45;
  static constexpr const char* version = TG_PLUGIN_VERSION;

  // Cheap: an instance is created to count devices and destroyed before returning.
  static Status probe() {
    std::string why;
    if (vk::loader_entry(&why) == nullptr) return tg::sdk::unavailable(why);
    try {
      vk::Instance inst;
      if (vk::compute_devices(inst).empty())
        return tg::sdk::unavailable("unavailable: no Vulkan device with a compute queue");
    } catch (const tg::Error& e) {
      return tg::sdk::unavailable(e.what_only());
    }
    return {};
  }

  explicit VulkanDevice(int32_t index)
      : ctx_(index),
        allocator_(ctx_),
        renderer_(glsl_caps(ctx_.features(), ctx_.limits()), ctx_.features()),
        compiler_(device_key(ctx_)) {
    description_ = ctx_.description();
    if (ctx_.timestamp_bits() > 0) {
      VkQueryPoolCreateInfo qci{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
      qci.queryType = VK_QUERY_TYPE_TIMESTAMP, qci.queryCount = 2;
      vk::check(ctx_.fn().vkCreateQueryPool(ctx_.device(), &qci, nullptr, &timer_), "vkCreateQueryPool");
    }
  }
  ~VulkanDevice() override {
    try {
      std::lock_guard lock(ctx_.mutex());
      ctx_.wait_all();
    } catch (...) {
    }
    if (timer_ != VK_NULL_HANDLE) ctx_.fn().vkDestroyQueryPool(ctx_.device(), timer_, nullptr);
  }

  tg::sdk::Allocator& allocator() noexcept override { return allocator_; }
  tg::sdk::Renderer& renderer() noexcept override { return renderer_; }
  tg::sdk::Compiler& compiler() noexcept override { return compiler_; }
  std::string_view description() const noexcept override { return description_; }

  Status synchronize() noexcept override {
    return tg::sdk::guard([&] {
      std::lock_guard lock(ctx_.mutex());
      ctx_.wait_all();
    });
  }

  Status load(std::string_view name, std::span<const std::byte> binary, tg::sdk::Program** out) noexcept override {
    (void)name;  // GLSL's entry point is always main
    return tg::sdk::guard([&]() -> Status {
      uint32_t magic = 0;
      if (binary.size() < 20 || binary.size() % 4 != 0 ||
          (std::memcpy(&magic, binary.data(), 4), magic != kSpirvMagic))
        return {Code::invalid_argument, "[VULKAN load] not a SPIR-V module"};
      VkShaderModuleCreateInfo ci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
      ci.codeSize = binary.size();
      std::vector<uint32_t> words(binary.size() / 4);
      std::memcpy(words.data(), binary.data(), binary.size());
      ci.pCode = words.data();
      if (std::string error = spirv_error(words); !error.empty())
        return {Code::invalid_argument, fmt::format("[VULKAN load] not a valid SPIR-V module: {}", error)};
      VkShaderModule module = VK_NULL_HANDLE;
      std::lock_guard lock(ctx_.mutex());
      vk::check(ctx_.fn().vkCreateShaderModule(ctx_.device(), &ci, nullptr, &module), "vkCreateShaderModule");
      *out = new VulkanProgram(ctx_, module, timer_);
      return {};
    });
  }

 private:
  Context ctx_;
  VulkanAllocator allocator_;
  GlslRenderer renderer_;
  ShadercCompiler compiler_;
  VkQueryPool timer_ = VK_NULL_HANDLE;
  std::string description_;
};

}  // namespace

}  // namespace tg::vulkan

TG_PLUGIN(VULKAN, tg::vulkan::VulkanDevice)
