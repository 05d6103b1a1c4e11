#include "metrics/catalog.h"

#include <algorithm>
#include <iterator>

namespace ncclrec::metrics {

std::string_view kindName(Kind kind) {
  switch (kind) {
    case Kind::kCounter:
      return "counter";
    case Kind::kGauge:
      return "gauge";
    case Kind::kStateSet:
      return "stateset";
    case Kind::kInfo:
      return "info";
    case Kind::kHistogram:
      return "histogram";
  }
  return "?";
}

size_t sizeClass(double bytes) {
  return size_t(std::lower_bound(std::begin(kSizeClasses), std::end(kSizeClasses), bytes) -
                std::begin(kSizeClasses));
}

}  // namespace ncclrec::metrics
