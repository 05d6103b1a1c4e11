// ncclrec-exporter's command line and its serving loop (exporter_cli.h).
#include "metrics/exporter_cli.h"

#include <signal.h>
#include <sys/stat.h>

#include <CLI/CLI.hpp>

#include "base/cli_parse.h"
#include "format/params_table.h"
#include "format/version.h"
#include "metrics/node_metrics.h"

namespace ncclrec::metrics {
namespace {

constexpr const char* kFooter = R"(Serves the Prometheus metrics of the black boxes in DIR (default
NCCLREC_DIR): GET http://ADDR:PORT/metrics, and/or the same text in a file for node_exporter's
textfile collector. Run one per node beside the job; it reads the newest run in DIR and never
slows the ranks. Names, labels, alert rules and dashboard: docs/metrics.md.

Exit codes:
  0  stopped by SIGINT or SIGTERM, or --once printed the metrics
  1  the endpoint cannot listen, or the text file's directory does not exist
  2  bad usage (flags, NCCLREC_METRICS_* values))";

ParsedExporterCommandLine usage(const std::string& message) {
  ParsedExporterCommandLine p;
  p.exit_code = kExporterUsage;
  p.message = "ncclrec-exporter: " + message;
  return p;
}

}  // namespace

ParsedExporterCommandLine parseExporterCommandLine(int argc, const char* const* argv) {
  ExporterCommand c;
  std::string dir = format::paramValue("NCCLREC_DIR");
  std::string port, textfile;
  double interval = 0;
  CLI::App app("ncclrec-exporter: Prometheus metrics of a node's live black boxes",
               "ncclrec-exporter");
  app.footer(kFooter);
  app.add_option("--dir", dir, "The job's NCCLREC_DIR (default: NCCLREC_DIR, ./ncclrec-dumps)");
  app.add_option("--run-id", c.exporter.run_id, "Only this run's ranks (default: the newest run)");
  app.add_option("--port", port,
                 "off, PORT or ADDR:PORT to listen on (default: NCCLREC_METRICS_PORT)");
  app.add_option("--textfile", textfile,
                 "Also write the metrics to this *.prom file, or into this directory "
                 "(default: NCCLREC_METRICS_TEXTFILE)");
  app.add_option("--interval", interval,
                 "Seconds between two writes of the text file (default: NCCLREC_METRICS_INTERVAL)");
  app.add_flag("--once", c.once, "Print the metrics on stdout once and exit");
  app.set_version_flag("--version", std::string("ncclrec-exporter ") + format::versionString());
  const base::CliOutcome parsed = base::parseCli(app, argc, argv);
  if (parsed.failed()) return usage(parsed.text);
  if (parsed.done()) {
    ParsedExporterCommandLine p;
    p.message = parsed.text;
    return p;
  }
  const std::string file_name =
      textfileName(c.exporter.run_id.empty() ? "exporter" : c.exporter.run_id);
  auto serve = configFromEnvironment(file_name);
  if (!serve.ok()) return usage(serve.status().message());
  c.serve = *serve;
  c.serve.tool = "ncclrec-exporter";
  if (!port.empty()) {
    auto listen = parseListen(port);
    if (!listen.ok())
      return usage("--port " + port + ": not off, PORT or ADDR:PORT (PORT 0-65535)");
    c.serve.listen = *listen;
  }
  if (!textfile.empty()) c.serve.textfile = textfilePath(textfile, file_name);
  if (app.count("--interval") > 0) {
    if (!(interval > 0)) return usage("--interval must be a number of seconds > 0");
    c.serve.interval_s = interval;
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return usage("--dir " + dir + ": not a directory");
  if (!c.once && !c.serve.enabled()) {
    return usage("nothing to serve: give --port (or NCCLREC_METRICS_PORT), --textfile, or --once");
  }
  c.exporter.dir = dir;
  std::string problem;
  c.exporter.params = live::DetectorParams::fromEnvironment(&problem);
  if (!problem.empty()) return usage(problem);
  ParsedExporterCommandLine p;
  p.command = c;
  return p;
}

int runExporter(const ExporterCommand& c, std::ostream& out, std::ostream& err) {
  auto exporter = std::make_shared<Exporter>(c.exporter);
  if (c.once) {
    out << toText(exporter->Collect());
    for (const std::string& note : exporter->notes()) err << "ncclrec-exporter: " << note << "\n";
    return kExporterDone;
  }
  // Blocked before the server's threads exist, so that they inherit the mask and only sigwait
  // below takes the signals.
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  signal(SIGPIPE, SIG_IGN);
  auto server = Server::start(c.serve, exporter);
  if (!server.ok()) {
    err << "ncclrec-exporter: " << server.status().message() << "\n";
    return kExporterFailed;
  }
  std::string where;
  if (c.serve.listen) where = endpointUrl(*c.serve.listen, (*server)->port());
  if (!c.serve.textfile.empty()) where += (where.empty() ? "" : " and ") + c.serve.textfile;
  err << "ncclrec-exporter: metrics of " << c.exporter.dir << " on " << where << std::endl;
  int signo = 0;
  sigwait(&mask, &signo);
  return kExporterDone;
}

}  // namespace ncclrec::metrics
