#include "trainer/injection.h"

#include <charconv>

namespace ncclrec::trainer {
namespace {

constexpr int64_t kDefaultFaultStep = 10;

bool isGated(FaultClass f) {
  return f == FaultClass::kGatedSave || f == FaultClass::kGatedEvalBarrier;
}

bool parseInt64(std::string_view text, int64_t* out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::string_view faultClassName(FaultClass f) {
  switch (f) {
    case FaultClass::kNone:
      return "none";
    case FaultClass::kGatedSave:
      return "gated_save";
    case FaultClass::kGatedEvalBarrier:
      return "gated_eval_barrier";
    case FaultClass::kUnevenData:
      return "uneven_data";
    case FaultClass::kNanSkip:
      return "nan_skip";
    case FaultClass::kCrash:
      return "crash";
    case FaultClass::kHostHang:
      return "host_hang";
    case FaultClass::kSizeMismatch:
      return "size_mismatch";
    case FaultClass::kOpOrder:
      return "op_order";
    case FaultClass::kSlowRank:
      return "slow_rank";
  }
  return "?";
}

const std::vector<FaultClass>& allFaultClasses() {
  static const std::vector<FaultClass> kAll = {
      FaultClass::kGatedSave,    FaultClass::kGatedEvalBarrier,
      FaultClass::kUnevenData,   FaultClass::kNanSkip,
      FaultClass::kCrash,        FaultClass::kHostHang,
      FaultClass::kSizeMismatch, FaultClass::kOpOrder,
      FaultClass::kSlowRank};
  return kAll;
}

std::string faultClassList() {
  std::string out;
  for (FaultClass f : allFaultClasses()) {
    if (!out.empty()) out += '|';
    out += faultClassName(f);
  }
  return out;
}

base::StatusOr<Injection> parseInjection(std::string_view spec, int world) {
  const auto fail = [&](const std::string& why) {
    return base::Status::error("--inject=" + std::string(spec) + ": " + why);
  };
  const size_t colon = spec.find(':');
  const std::string_view name = spec.substr(0, colon);
  Injection inj;
  for (FaultClass f : allFaultClasses()) {
    if (faultClassName(f) == name) inj.fault = f;
  }
  if (!inj.active()) {
    return fail("unknown class '" + std::string(name) + "' (one of " + faultClassList() + ")");
  }
  bool step_given = false;
  std::string_view rest = colon == std::string_view::npos ? "" : spec.substr(colon + 1);
  while (colon != std::string_view::npos) {
    const size_t next = rest.find(':');
    const std::string_view item = rest.substr(0, next);
    const size_t eq = item.find('=');
    const std::string_view key = item.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? "" : item.substr(eq + 1);
    int64_t number = 0;
    if (key != "rank" && key != "step") {
      return fail("unknown key '" + std::string(key) + "' (keys: rank=R, step=S)");
    }
    if (eq == std::string_view::npos || !parseInt64(value, &number)) {
      return fail(std::string(key) + " needs a whole number, as in " + std::string(key) + "=3");
    }
    if (key == "rank") {
      if (number < 0 || number >= world) {
        return fail("rank " + std::to_string(number) + " is not in the job (ranks 0-" +
                    std::to_string(world - 1) + ")");
      }
      inj.rank = static_cast<int>(number);
    } else {
      if (inj.fault == FaultClass::kSizeMismatch) {
        return fail(
            "size_mismatch takes no step: the culprit builds its model with the other size");
      }
      if (number < 1) return fail("step must be 1 or more (steps are counted from 1)");
      inj.step = number;
      step_given = true;
    }
    if (next == std::string_view::npos) break;
    rest = rest.substr(next + 1);
  }
  if (inj.rank < 0) inj.rank = isGated(inj.fault) ? 0 : world - 1;
  if (!step_given) {
    inj.step = inj.fault == FaultClass::kSizeMismatch                     ? -1
               : isGated(inj.fault) || inj.fault == FaultClass::kSlowRank ? 1
                                                                          : kDefaultFaultStep;
  }
  return inj;
}

std::string describeInjection(const Injection& inj) {
  std::string s = std::string(faultClassName(inj.fault)) + " on rank " + std::to_string(inj.rank);
  const std::string step = std::to_string(inj.step);
  switch (inj.fault) {
    case FaultClass::kNone:
      return "none";
    case FaultClass::kGatedSave:
      return s + " at the first checkpoint at or after step " + step;
    case FaultClass::kGatedEvalBarrier:
      return s + " at the first evaluation at or after step " + step;
    case FaultClass::kSizeMismatch:
      return s + " (its hidden layers are wider)";
    case FaultClass::kSlowRank:
      return s + " from step " + step + " on";
    default:
      return s + " at step " + step;
  }
}

}  // namespace ncclrec::trainer
