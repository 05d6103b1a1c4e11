#include <iostream>

#include "analyzer/cli.h"

int main(int argc, char** argv) {
  return ncclrec::analyzer::runCli(argc, argv, std::cout, std::cerr);
}
