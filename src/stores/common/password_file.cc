#include "password_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>

namespace sluice::stores {

Result<std::string> ReadPasswordFile(const char* field, const std::string& path) {
  constexpr std::streamsize kMaxBytes = 64 * 1024;
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return Status::InvalidArgument(std::string(field) + " " + path +
                                   ": cannot be read: " + std::strerror(errno));
  }
  std::string text(static_cast<size_t>(kMaxBytes) + 1, '\0');
  file.read(text.data(), kMaxBytes + 1);
  if (file.bad()) {
    return Status::InvalidArgument(std::string(field) + " " + path + ": cannot be read");
  }
  text.resize(static_cast<size_t>(file.gcount()));
  if (text.size() > static_cast<size_t>(kMaxBytes)) {
    return Status::InvalidArgument(std::string(field) + " " + path + ": larger than 64 KiB");
  }
  if (text.ends_with("\r\n")) {
    text.resize(text.size() - 2);
  } else if (text.ends_with('\n')) {
    text.pop_back();
  }
  return text;
}

}  // namespace sluice::stores
