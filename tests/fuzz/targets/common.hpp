#pragma once
// What every libFuzzer target shares: an input is accepted or refused with a tg::Error (a clear error is
// the right answer to a malformed input); anything else (a crash, a sanitizer report, another exception
// type escaping) is a finding. Targets that need a file write the input to one private temporary file.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace tg::fuzz {

// A file holding the current input, removed when the process exits; one per process.
inline const std::filesystem::path& input_file(const uint8_t* data, size_t size) {
  static const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("tg-fuzz-" + std::to_string(::getpid()));
  static const struct Remover {
    ~Remover() {
      std::error_code ec;
      std::filesystem::remove(path, ec);
    }
  } remover;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

}  // namespace tg::fuzz
