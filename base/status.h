// Status / StatusOr for the tools (reader, analyzer, launcher, tui): a failure carries one message
// meant for the user, already naming the file, rank or flag at fault, so a tool prints it as is.
// Nothing here throws or allocates on success.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace ncclrec::base {

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  static Status error(std::string message) { return Status(std::move(message)); }

  bool ok() const { return !failed_; }
  // Empty when ok().
  const std::string& message() const { return message_; }

 private:
  explicit Status(std::string message) : failed_(true), message_(std::move(message)) {}
  bool failed_ = false;
  std::string message_;
};

inline Status okStatus() { return Status(); }

// Either a T or a failed Status. Constructing one from an ok Status is a programming error; it is
// turned into a failure ("internal error: ok status without a value") instead of a crash.
template <class T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  StatusOr(Status status)                          // NOLINT(google-explicit-constructor)
      : value_(status.ok() ? Status::error("internal error: ok status without a value")
                           : std::move(status)) {}

  bool ok() const { return std::holds_alternative<T>(value_); }
  // okStatus() when ok().
  Status status() const { return ok() ? Status() : std::get<Status>(value_); }

  // Precondition for these: ok().
  T& value() & { return std::get<T>(value_); }
  const T& value() const& { return std::get<T>(value_); }
  T&& value() && { return std::get<T>(std::move(value_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> value_;
};

}  // namespace ncclrec::base

#define NCCLREC_STATUS_CONCAT_INNER_(a, b) a##b
#define NCCLREC_STATUS_CONCAT_(a, b) NCCLREC_STATUS_CONCAT_INNER_(a, b)

// Returns the Status of `expr` from the enclosing function when it failed.
#define NCCLREC_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    ::ncclrec::base::Status ncclrec_status_ = (expr);  \
    if (!ncclrec_status_.ok()) return ncclrec_status_; \
  } while (0)

// `lhs = value of expr`, or returns its Status from the enclosing function when it failed.
// `lhs` may declare a variable: NCCLREC_ASSIGN_OR_RETURN(auto data, loadFile(path));
#define NCCLREC_ASSIGN_OR_RETURN(lhs, expr) \
  NCCLREC_ASSIGN_OR_RETURN_IMPL_(NCCLREC_STATUS_CONCAT_(ncclrec_statusor_, __LINE__), lhs, expr)
#define NCCLREC_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                   \
  if (!tmp.ok()) return tmp.status();                  \
  lhs = std::move(tmp).value()
