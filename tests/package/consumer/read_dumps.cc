// Reads the dumps in a directory with the installed ncclrec::format and prints one line per rank;
// includes the store client to check its headers compile outside the tree.
#include <cstdio>

#include "format/reader.h"
#include "format/store_client.h"
#include "format/version.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: read_dumps DIR\n");
    return 2;
  }
  auto loaded = ncclrec::format::loadPaths({argv[1]});
  if (!loaded.ok()) {
    std::fprintf(stderr, "read_dumps: %s\n", loaded.status().message().c_str());
    return 1;
  }
  std::printf("ncclrec %s\n", ncclrec::format::versionString());
  for (const auto& rank : loaded.value().ranks)
    std::printf("rank %d of %d: %zu events\n", rank.global_rank, rank.world_size,
                rank.events.size());
  return 0;
}
