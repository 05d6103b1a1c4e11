// ncclrec-exporter: Prometheus metrics of a node's live black boxes. See docs/metrics.md.
#include <cstdio>
#include <exception>
#include <iostream>

#include "metrics/exporter_cli.h"

int main(int argc, char** argv) {
  using namespace ncclrec::metrics;
  try {
    const ParsedExporterCommandLine parsed = parseExporterCommandLine(argc, argv);
    if (!parsed.command) {
      std::fprintf(parsed.exit_code == kExporterDone ? stdout : stderr, "%s\n",
                   parsed.message.c_str());
      return parsed.exit_code;
    }
    return runExporter(*parsed.command, std::cout, std::cerr);
  } catch (const std::exception& e) {  // out of memory and the like: one line, never a trace
    std::fprintf(stderr, "ncclrec-exporter: internal error: %s\n", e.what());
    return kExporterFailed;
  }
}
