// Reading a whole file without C++ streams. A file under /proc can fail mid-read (ESRCH once its
// process exits, EISDIR, EIO), and libstdc++'s stream buffer throws from inside iterators when a
// read fails; tools that read the OS's view of a process they do not own must take "gone" as an
// answer, never as an exception. For tools and init-time code (it allocates).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace ncclrec::base {

// The bytes of `path`, read with open/read up to `limit` bytes (a longer file is cut there);
// nullopt when it cannot be opened or a read fails (interrupted reads are retried).
std::optional<std::string> readFile(const std::string& path, size_t limit = size_t{1} << 30);

}  // namespace ncclrec::base
