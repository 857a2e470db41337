// Secrets kept in files: a store's password, read at start and again on reload.
#pragma once

#include <string>

#include "sluice/status.h"

namespace sluice::stores {

// A password file's content, one trailing newline dropped. Messages name `field` and the file,
// never the content; a file over 64 KiB is refused (a certificate or a log, not a password).
Result<std::string> ReadPasswordFile(const char* field, const std::string& path);

}  // namespace sluice::stores
