// `tg train-mnist` and `tg infer`: the main job. Trains tinygrad's "beautiful MNIST" CNN on the real
// Fashion-MNIST data on the default device, evaluates it, saves it as safetensors, and reloads it.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <unistd.h>
#include <vector>

#include <fmt/format.h>

#include "apps/tg/commands.hpp"
#include "apps/tg/flags.hpp"
#include "apps/tg/mnist_model.hpp"
#include "base/error.hpp"
#include "dist/data_parallel.hpp"
#include "dist/staged_realize.hpp"
#include "engine/jit.hpp"
#include "nn/datasets.hpp"
#include "nn/losses.hpp"
#include "nn/lr_scheduler.hpp"
#include "nn/optim.hpp"
#include "nn/safetensors.hpp"
#include "runtime/registry.hpp"
#include "tensor/multi.hpp"
#include "tensor/tensor.hpp"

namespace tg::cli {

namespace {

constexpr const char* kClasses[10] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                      "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

// The data set as host bytes: batches are gathered on the host and copied in (400 KB per batch of 128),
// which is cheaper than a gather kernel over the whole training set.
struct HostData {
  std::vector<uint8_t> x_train, y_train, x_test, y_test;
};

HostData load_data(const std::optional<std::filesystem::path>& dir) {
  nn::FashionMnist d = nn::fashion_mnist(dir, "INTERP");  // read into host memory only
  return {d.X_train.to_vector<uint8_t>(), d.Y_train.to_vector<uint8_t>(), d.X_test.to_vector<uint8_t>(),
          d.Y_test.to_vector<uint8_t>()};
}

Tensor images(const std::vector<uint8_t>& x, const std::vector<int64_t>& rows) {
  std::vector<float> v(rows.size() * 784);
  for (size_t r = 0; r < rows.size(); r++)
    for (int i = 0; i < 784; i++) v[r * 784 + i] = x[static_cast<size_t>(rows[r]) * 784 + i] / 255.0f;
  return Tensor(v, {static_cast<int64_t>(rows.size()), 1, 28, 28});
}

Tensor labels(const std::vector<uint8_t>& y, const std::vector<int64_t>& rows) {
  std::vector<int32_t> v(rows.size());
  for (size_t r = 0; r < rows.size(); r++) v[r] = y[static_cast<size_t>(rows[r])];
  return Tensor(v, {static_cast<int64_t>(rows.size())});
}

// Predicted classes for test images [begin, end), in eval mode, 1000 at a time.
std::vector<int32_t> predict(nn::Module& model, const std::vector<uint8_t>& x, int64_t begin, int64_t end) {
  model.eval();
  std::vector<int32_t> out;
  for (int64_t b = begin; b < end; b += 1000) {
    std::vector<int64_t> rows;
    for (int64_t i = b; i < std::min(end, b + 1000); i++) rows.push_back(i);
    std::vector<int32_t> p = model(images(x, rows)).argmax(-1).to_vector<int32_t>();
    out.insert(out.end(), p.begin(), p.end());
  }
  return out;
}

double accuracy(const std::vector<int32_t>& pred, const std::vector<uint8_t>& y) {
  int64_t ok = 0;
  for (size_t i = 0; i < pred.size(); i++) ok += pred[i] == y[i];
  return pred.empty() ? 0.0 : static_cast<double>(ok) / static_cast<double>(pred.size());
}

std::string duration(double s) {
  int t = static_cast<int>(std::lround(s));
  return t >= 60 ? fmt::format("{}m{:02}s", t / 60, t % 60) : fmt::format("{}s", t);
}

// --eval N: how many test images to classify (the first N; default all).
int64_t eval_count(std::string_view cmd, const Flags& f, const HostData& data) {
  int64_t all = static_cast<int64_t>(data.y_test.size());
  return std::min(all, int_flag(cmd, f, "eval", all));
}

// train-mnist's end: the accuracy on the first --eval test images, then the model saved with it.
void evaluate_and_save(nn::Module& model, const Flags& f, const HostData& data,
                       const std::filesystem::path& out) {
  int64_t n_eval = eval_count("train-mnist", f, data);
  std::vector<uint8_t> y_eval(data.y_test.begin(), data.y_test.begin() + n_eval);
  double acc = accuracy(predict(model, data.x_test, 0, n_eval), y_eval);
  fmt::print("test accuracy: {:.2f}% on {} images\n", 100 * acc, n_eval);
  nn::safe_save(nn::state_dict(model), out,
                {{"model", "fashion-mnist-cnn"}, {"test_accuracy", fmt::format("{:.4f}", acc)}});
  fmt::print("saved: {} (reload with: tg infer --model {})\n", out.string(), out.string());
}

std::optional<std::filesystem::path> data_flag(const Flags& f) {
  std::string d = f.get("data", "");
  return d.empty() ? std::nullopt : std::optional<std::filesystem::path>(d);
}

int train_mnist_dist(const std::string& backend, const Flags& f);

// --dist: the gradients realized and all-reduced in stages of about this many bytes (3 for the CNN).
constexpr int64_t kStageBytes = 128 * 1024;

bool on_off_flag(const Flags& f, std::string_view name, bool fallback) {
  std::string v = f.get(name, fallback ? "on" : "off");
  if (v != "on" && v != "off")
    throw ValueError("train-mnist", fmt::format("--{} takes on or off, got '{}'", name, v));
  return v == "on";
}

// --devices A,B,...: data parallel over several devices in this process: every parameter and buffer a full
// copy on each, each batch split along its first axis. Empty: the default device alone.
std::vector<std::string> devices_flag(const Flags& f, int64_t batch) {
  std::string v = f.get("devices", "");
  if (v.empty()) return {};
  std::vector<std::string> devs = split_devices(v);
  if (batch % static_cast<int64_t>(devs.size()) != 0)
    throw ValueError(
        "train-mnist",
        fmt::format("--batch {} does not split evenly over the {} devices of --devices", batch, devs.size()));
  return devs;
}

// --dtype float32|float64: the precision of the weights, the optimizer state and the computation (the images
// are cast on the way in). float64 makes the run independent of the order of float sums, so one device and
// several give the same losses (tests/integration/train/devices.sh); the model is saved as float32.
DType dtype_flag(const Flags& f) {
  std::string v = f.get("dtype", "float32");
  if (v == "float32") return dtypes::float32;
  if (v == "float64") return dtypes::float64;
  throw ValueError("train-mnist", fmt::format("--dtype takes float32 or float64, got '{}'", v));
}

// Every parameter and buffer of the model as a full copy on each device, or back on the default device.
void place_state(nn::Module& model, const std::vector<std::string>& devices) {
  for (auto& [name, t] : nn::state_dict(model))
    if (devices.empty())
      t.replace(t.detach().to(engine::default_device_name()));
    else
      t.shard_(devices);
}

}  // namespace

int train_mnist(Args args) {
  Flags f = parse("train-mnist", args,
                  {"steps", "batch", "lr", "seed", "out", "data", "eval", "devices", "losses", "dist",
                   "overlap", "dtype"});
  if (std::string d = f.get("dist", ""); !d.empty()) {
    if (!f.get("devices", "").empty())
      throw ValueError("train-mnist", "--dist and --devices cannot be combined: each rank trains on one device");
    if (!f.get("dtype", "").empty()) throw ValueError("train-mnist", "--dtype applies to one process only");
    return train_mnist_dist(d, f);
  }
  if (!f.get("overlap", "").empty()) throw ValueError("train-mnist", "--overlap applies to --dist only");
  int64_t steps = int_flag("train-mnist", f, "steps", 1000), batch = int_flag("train-mnist", f, "batch", 128);
  int64_t seed = int_flag("train-mnist", f, "seed", 42);
  double lr = float_flag("train-mnist", f, "lr", 3e-3);
  std::filesystem::path out = f.get("out", "fashion_mnist_cnn.safetensors");
  DType dtype = dtype_flag(f);

  std::vector<std::string> devices = devices_flag(f, batch);
  fmt::print("device: {}\n", devices.empty() ? tg::runtime::default_device().str() : f.get("devices", ""));
  HostData data = load_data(data_flag(f));
  fmt::print("data: {} training and {} test images of Fashion-MNIST\n", data.y_train.size(), data.y_test.size());

  Tensor::manual_seed(static_cast<uint64_t>(seed));
  auto model = apps::fashion_mnist_cnn();
  model->to(dtype);
  if (!devices.empty()) place_state(*model, devices);  // before the optimizer, whose state follows
  nn::optim::Adam opt(model->parameters(), lr);
  nn::optim::OneCycleLR sched(opt, lr, steps);
  if (batch > static_cast<int64_t>(data.y_train.size()))  // a step takes a full batch: there would be none
    throw ValueError("train-mnist", fmt::format("--batch {} is larger than the {} training images", batch,
                                                data.y_train.size()));
  nn::BatchSampler sampler(static_cast<int64_t>(data.y_train.size()), batch, true, static_cast<uint64_t>(seed),
                           true);
  fmt::print("training: {} steps of batch {}{}, Adam with one-cycle lr (max {})\n", steps, batch,
             dtype == dtypes::float64 ? " in float64" : "", lr);
  // One step under the JIT: from the third step on its kernels are replayed (no scheduling or compiling).
  // The lr tensor the schedule writes and every parameter and moment stay bound to the captured kernels.
  Jit train_step = jit([&](std::span<const Tensor> in) -> std::vector<Tensor> {
    Tensor x = in[0].cast(dtype), y = in[1];
    if (!devices.empty()) {
      x = x.shard(devices, 0);
      y = y.shard(devices, 0);
    }
    Tensor loss = nn::cross_entropy((*model)(x), y);
    opt.zero_grad();
    loss.backward();
    std::vector<Tensor> todo = opt.schedule_step();
    Tensor out = devices.empty() ? loss : loss.to(devices[0]);  // every device has the whole loss
    todo.push_back(out);
    Tensor::realize_all(todo);
    opt.zero_grad();  // the lazy gradients would keep this step's activations alive
    return {out};
  });

  std::string losses_path = f.get("losses", "");  // --losses FILE: each step's loss, one a line
  std::FILE* losses = losses_path.empty() ? nullptr : std::fopen(losses_path.c_str(), "w");
  if (!losses_path.empty() && losses == nullptr)
    throw ValueError("train-mnist", fmt::format("cannot write --losses {}", losses_path));
  bool tty = isatty(fileno(stdout));
  auto start = std::chrono::steady_clock::now();
  double first_step = 0, loss_avg = 0;
  for (int64_t step = 1; step <= steps; step++) {
    int64_t b = (step - 1) % sampler.size();
    if (b == 0 && step > 1) sampler.set_epoch(sampler.epoch() + 1);
    std::vector<int64_t> rows = sampler.batch(b);
    model->train();
    Tensor loss = train_step({images(data.x_train, rows), labels(data.y_train, rows)})[0];
    sched.step();
    double l = loss.item<double>();
    if (!std::isfinite(l)) throw ValueError("train-mnist", fmt::format("the loss is {} at step {}", l, step));
    if (losses) fmt::print(losses, "{:.{}g}\n", l, dtype == dtypes::float64 ? 17 : 9);
    loss_avg = step == 1 ? l : 0.95 * loss_avg + 0.05 * l;

    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (step == 1) first_step = t;
    double per_step = step > 1 ? (t - first_step) / static_cast<double>(step - 1) : t;
    if (tty || step % 50 == 0 || step == steps || step == 1) {
      int done = static_cast<int>(30 * step / steps);
      fmt::print("{}step {:>5}/{} [{}{}] loss {:.3f}  {:.0f} img/s  ETA {}   {}", tty ? "\r" : "", step, steps,
                 std::string(done, '='), std::string(30 - done, ' '), loss_avg,
                 static_cast<double>(batch) / per_step, duration(per_step * static_cast<double>(steps - step)),
                 tty ? "" : "\n");
      std::fflush(stdout);
    }
  }
  double train_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("{}trained in {} (first step {:.2f} s)\n", tty ? "\n" : "", duration(train_s), first_step);
  if (losses) std::fclose(losses);
  if (!devices.empty()) place_state(*model, {});  // evaluated and saved on one device, as float32
  model->to(dtypes::float32);

  evaluate_and_save(*model, f, data, out);
  return 0;
}

namespace {

// --dist mpi: every rank runs this with the same flags. The global batch is cut into one part per rank;
// each rank computes its part's gradients (and BatchNorm statistics), all_reduce_mean averages them, and
// every rank applies the same optimizer step, so the weights stay identical; a hash of them is compared
// after every step. Rank 0 alone prints, evaluates and saves.
int train_data_parallel(dist::Communicator& comm, const Flags& f) {
  int64_t steps = int_flag("train-mnist", f, "steps", 1000), batch = int_flag("train-mnist", f, "batch", 128);
  int64_t seed = int_flag("train-mnist", f, "seed", 42);
  double lr = float_flag("train-mnist", f, "lr", 3e-3);
  std::filesystem::path out = f.get("out", "fashion_mnist_cnn.safetensors");
  int64_t ranks = comm.size(), rank = comm.rank(), part = batch / ranks;
  if (batch % ranks != 0)
    throw ValueError("train-mnist", fmt::format("--batch {} does not split evenly over {} ranks", batch, ranks));
  bool lead = rank == 0;
  if (lead)
    fmt::print("device: {}\ndist: {} ranks over {}, {} images each per step\n",
               tg::runtime::default_device().str(), ranks, comm.name(), part);
  HostData data = load_data(data_flag(f));
  if (batch > static_cast<int64_t>(data.y_train.size()))
    throw ValueError("train-mnist", fmt::format("--batch {} is larger than the {} training images", batch,
                                                data.y_train.size()));

  Tensor::manual_seed(static_cast<uint64_t>(seed));
  auto model = apps::fashion_mnist_cnn();
  std::vector<Tensor> params = model->parameters(), state = params;
  for (auto& [name, b] : model->named_buffers()) state.push_back(b);
  // Rank 0's initial weights everywhere; a rank with another model fails here, at the first collective.
  dist::broadcast(comm, state, 0);
  nn::optim::Adam opt(params, lr);
  nn::optim::OneCycleLR sched(opt, lr, steps);
  nn::BatchSampler sampler(static_cast<int64_t>(data.y_train.size()), batch, true, static_cast<uint64_t>(seed),
                           true);
  if (lead) fmt::print("training: {} steps of global batch {}, Adam with one-cycle lr (max {})\n", steps, batch, lr);
  // The gradients in stages of about kStageBytes, the last layers first, each stage one realize captured
  // on its own (dist::StagedRealize: no stage computes what an earlier one did). With --overlap on, each
  // stage's all-reduce starts as soon as it is realized and travels while the next stage computes; off,
  // they all start after the last stage: the same messages, later. Then the step from the averaged
  // gradients and BatchNorm statistics.
  bool overlap = on_off_flag(f, "overlap", true);
  std::vector<std::vector<size_t>> stages;  // parameter indices per stage
  int64_t stage_bytes = 0;
  for (size_t i = params.size(); i-- > 0; stage_bytes += params[i].numel() * 4) {
    if (stages.empty() || stage_bytes >= kStageBytes) stages.emplace_back(), stage_bytes = 0;
    stages.back().push_back(i);
  }
  std::optional<dist::StagedRealize> staged;  // from the first stage's forward and backward to the last stage
  std::vector<Jit> stage_steps;
  for (size_t k = 0; k < stages.size(); k++)
    stage_steps.push_back(jit([&, k](std::span<const Tensor> in) -> std::vector<Tensor> {
      if (k == 0) {
        Tensor loss = nn::cross_entropy((*model)(in[0]), in[1]);
        opt.zero_grad();
        loss.backward();
        std::vector<std::vector<Tensor>> grads;
        for (const auto& st : stages) {
          grads.emplace_back();
          for (size_t i : st) grads.back().push_back(params[i].grad().contiguous());
        }
        grads[0].push_back(loss);
        opt.zero_grad();  // the lazy gradients would keep this step's activations alive
        staged.emplace(std::move(grads));
      }
      std::vector<Tensor> out = staged->realize(k);
      // returned too, so that this stage's replays write the buffers the later stages' replays read
      const std::vector<Tensor>& shared = staged->shared(k);
      out.insert(out.end(), shared.begin(), shared.end());
      if (k + 1 == stages.size()) staged.reset();
      return out;
    }));
  std::vector<Tensor> reduced;  // what the all-reduce carries, in its order: each stage's gradients, the loss
                                // after the first stage's, then the BatchNorm statistics
  for (size_t k = 0; k < stages.size(); k++) {
    for (size_t i : stages[k]) reduced.push_back(params[i]);
    if (k == 0) reduced.push_back(Tensor(0.0f));
  }
  reduced.insert(reduced.end(), state.begin() + static_cast<std::ptrdiff_t>(params.size()), state.end());
  Jit apply_step = jit([&](std::span<const Tensor> in) -> std::vector<Tensor> {
    for (size_t i = 0; i < params.size(); i++) params[i].set_grad(in[i]);
    std::vector<Tensor> todo = opt.schedule_step();
    for (size_t i = params.size(); i < state.size(); i++) todo.push_back(state[i].assign(in[i]));
    Tensor::realize_all(todo);
    opt.zero_grad();
    return {};
  });

  using clock = std::chrono::steady_clock;
  auto start = clock::now();
  double comm_s = 0, first_step = 0, loss_avg = 0;
  int64_t bytes = 0;
  for (const Tensor& t : state) bytes += t.numel() * 4;
  for (int64_t step = 1; step <= steps; step++) {
    int64_t b = (step - 1) % sampler.size();
    if (b == 0 && step > 1) sampler.set_epoch(sampler.epoch() + 1);
    std::vector<int64_t> rows = sampler.batch(b);
    rows = std::vector<int64_t>(rows.begin() + rank * part, rows.begin() + (rank + 1) * part);
    model->train();
    auto c0 = clock::now();
    double computing = 0;
    dist::AllReduceMean all_reduce(comm, reduced);
    Tensor loss;
    std::vector<Tensor> inputs{images(data.x_train, rows), labels(data.y_train, rows)};
    for (size_t k = 0; k < stages.size(); k++) {
      auto s0 = clock::now();
      // every stage is given the batch: a later one may read it too (the first layer's weight gradient)
      std::vector<Tensor> out = stage_steps[k](inputs);
      computing += std::chrono::duration<double>(clock::now() - s0).count();
      size_t n = stages[k].size() + (k == 0);
      all_reduce.add(std::span<const Tensor>(out.data(), n), overlap);
      all_reduce.progress();
      if (k == 0) loss = out[n - 1];
    }
    all_reduce.add(std::span<const Tensor>(state).subspan(params.size()), overlap);
    std::vector<Tensor> avg = all_reduce.finish();
    if (step > 1) comm_s += std::chrono::duration<double>(clock::now() - c0).count() - computing;
    std::vector<Tensor> next(state.size());  // back in the order of state
    for (size_t k = 0, at = 0; k < stages.size(); k++) {
      for (size_t i : stages[k]) next[i] = avg[at++];
      if (k == 0) loss = avg[at++];
    }
    std::copy(avg.end() - static_cast<std::ptrdiff_t>(state.size() - params.size()), avg.end(),
              next.begin() + static_cast<std::ptrdiff_t>(params.size()));
    apply_step(next);
    sched.step();
    dist::check_same(comm, dist::hash_values(state), fmt::format("the weights after step {}", step));
    float l = loss.item<float>();
    if (!std::isfinite(l)) throw ValueError("train-mnist", fmt::format("the loss is {} at step {}", l, step));
    loss_avg = step == 1 ? l : 0.95 * loss_avg + 0.05 * l;
    double t = std::chrono::duration<double>(clock::now() - start).count();
    if (step == 1) first_step = t;
    if (lead && (step % 50 == 0 || step == steps || step == 1)) {
      double per_step = step > 1 ? (t - first_step) / static_cast<double>(step - 1) : t;
      fmt::print("step {:>5}/{} loss {:.3f}  {:.0f} img/s  ETA {}\n", step, steps, loss_avg,
                 static_cast<double>(batch) / per_step, duration(per_step * static_cast<double>(steps - step)));
      std::fflush(stdout);
    }
  }
  double train_s = std::chrono::duration<double>(clock::now() - start).count();
  if (!lead) return 0;
  double per_step = steps > 1 ? (train_s - first_step) / static_cast<double>(steps - 1) : train_s;
  fmt::print("trained in {} (first step {:.2f} s)\n", duration(train_s), first_step);
  fmt::print("weights identical on all {} ranks after each of {} steps\n", ranks, steps);
  fmt::print("state hash: {:016x}\n", dist::hash_values(state));
  if (steps > 1)
    fmt::print("all-reduce: {:.3f} ms of {:.2f} ms per step ({:.1f}%), {} KB per step\n",
               1e3 * comm_s / static_cast<double>(steps - 1), 1e3 * per_step,
               100 * comm_s / (train_s - first_step), bytes / 1024);
  evaluate_and_save(*model, f, data, out);
  return 0;
}

int train_mnist_dist(const std::string& backend, const Flags& f) {
  if (backend != "mpi") throw ValueError("train-mnist", fmt::format("--dist takes 'mpi', got '{}'", backend));
  std::shared_ptr<dist::Communicator> comm = dist::init(backend);
  try {
    return train_data_parallel(*comm, f);
  } catch (...) {
    comm->mark_failed();  // the other ranks may be waiting for this one: exit aborts the whole job
    throw;
  }
}

}  // namespace

int infer(Args args) {
  Flags f = parse("infer", args, {"model", "data", "show", "eval"});
  std::filesystem::path path = f.get("model", "fashion_mnist_cnn.safetensors");
  int64_t show = int_flag("infer", f, "show", 10);
  std::error_code ec;  // a link loop or the like: safe_load says why
  if (!std::filesystem::exists(path, ec) && !ec)
    throw ValueError("infer", fmt::format("no model at {}: train one with `tg train-mnist` first", path.string()));
  auto model = apps::fashion_mnist_cnn();
  nn::load_state_dict(*model, nn::safe_load(path));
  HostData data = load_data(data_flag(f));

  std::vector<int32_t> pred = predict(*model, data.x_test, 0, eval_count("infer", f, data));
  for (int64_t i = 0; i < std::min<int64_t>(show, static_cast<int64_t>(pred.size())); i++)
    fmt::print("test image {:>4}: predicted {:<12} true {:<12} {}\n", i, kClasses[pred[i]],
               kClasses[data.y_test[i]], pred[i] == data.y_test[i] ? "ok" : "WRONG");
  fmt::print("test accuracy: {:.2f}% on {} images ({})\n", 100 * accuracy(pred, data.y_test), pred.size(),
             path.string());
  return 0;
}

}  // namespace tg::cli
