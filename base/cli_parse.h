// How a tool's CLI11 parse ended, in one place for every command line (ncclrec-analyze, cxxrun,
// ncclrec-top, ncclrec-watch, ncclrec-trainer): go on, print the help or the version and exit 0, or
// a usage error the tool prefixes with its name and exits with its usage code. Header-only, for
// tools: the targets that include it link CLI11::CLI11; nothing loaded into a user's process does.
#pragma once

#include <CLI/CLI.hpp>
#include <exception>
#include <string>
#include <utility>

namespace ncclrec::base {

struct CliOutcome {
  enum class Kind { kParsed, kHelp, kVersion, kUsageError };
  Kind kind = Kind::kParsed;
  // The help text, the version line, or the usage error (without the tool's name); empty when
  // parsed.
  std::string text;

  // True when the tool stops here (help, version or usage error).
  bool done() const { return kind != Kind::kParsed; }
  bool failed() const { return kind == Kind::kUsageError; }
};

// Runs `parse` (which calls one of app.parse's overloads) and turns CLI11's exceptions into an
// outcome. Any other std::exception from a validator or callback is a usage error too.
template <class Parse>
CliOutcome parseCli(CLI::App& app, Parse&& parse) {
  using Kind = CliOutcome::Kind;
  try {
    std::forward<Parse>(parse)();
    return {};
  } catch (const CLI::CallForHelp&) {
    return {Kind::kHelp, app.help()};
  } catch (const CLI::CallForAllHelp&) {
    return {Kind::kHelp, app.help("", CLI::AppFormatMode::All)};
  } catch (const CLI::CallForVersion& e) {
    return {Kind::kVersion, e.what()};
  } catch (const CLI::ParseError& e) {
    return {Kind::kUsageError, e.what()};
  } catch (const std::exception& e) {
    return {Kind::kUsageError, e.what()};
  }
}

inline CliOutcome parseCli(CLI::App& app, int argc, const char* const* argv) {
  return parseCli(app, [&] { app.parse(argc, argv); });
}

}  // namespace ncclrec::base
