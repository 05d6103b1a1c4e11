#include <malloc.h>

#include <iostream>

#include "analyzer/cli.h"

int main(int argc, char** argv) {
  // A short-lived tool that loads hundreds of MiB of model in per-rank blocks of a few hundred
  // KiB: serve them all from the heap (not one mmap each) and keep freed memory for the next
  // file instead of trimming it, so fewer pages are faulted in (docs/performance.md).
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  return ncclrec::analyzer::runCli(argc, argv, std::cout, std::cerr);
}
