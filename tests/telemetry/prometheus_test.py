"""A real Prometheus server scrapes ncclrec's metrics during sample runs (docs/metrics.md).

The test starts Debian's `prometheus` on a free localhost port with a generated configuration
that scrapes the job's endpoint every second and loads metrics/prometheus/ncclrec.rules.yml, its
data in a scratch directory, then:

  cxxrun   gated_save (faulty) under cxxrun with libncclrec.so and hostnccl, cxxrun's agent
           serving the metrics (NCCLREC_METRICS_PORT): PromQL over Prometheus' HTTP API must show
           the job in state hang, the verdict rank_gated_collective naming rank 0, rank 0 as the
           culprit, and the alerts NcclrecHang and NcclrecHangVerdict firing, and what the
           endpoint serves must pass `promtool check metrics`; then gated_save
           without its fault, run long enough for several scrapes: Prometheus must have scraped
           its ranks' counters, no alert may fire for it and its hang state never be hang, also
           once the test stopped it with SIGTERM (cxxrun's report then says "interrupt").
  mpirun   the same faulty sample under OpenMPI's mpirun, ncclrec-exporter serving the node's
           black boxes and the ncclrec-watch a stalled rank starts giving the verdict: the same
           queries and alerts.

Usage:
  prometheus_test.py --launcher cxxrun|mpirun --build DIR --source DIR [--scrapes N] [--keep DIR]

Exit codes: 0 passed, 1 failed (the reason on stderr), 2 bad usage, 77 skipped (prometheus,
promtool or mpirun is not installed; the reason is printed).
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

SKIP = 77
TIMEOUT_S = 90  # for each thing awaited; the whole test takes well under a minute when it passes


class Failure(Exception):
    pass


def skip(reason):
    print("SKIP: " + reason)
    sys.exit(SKIP)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop(proc, sig=signal.SIGTERM, timeout=20):
    """Signals the process group of `proc`; SIGKILL when it is still there after `timeout`."""
    if proc is None or proc.poll() is not None:
        return None if proc is None else proc.returncode
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise Failure("%s did not stop on %s" % (proc.args[0], sig.name))


class Prometheus:
    """Debian's prometheus on 127.0.0.1, scraping `target` every second with ncclrec's rules."""

    def __init__(self, work, target, rules):
        self.port = free_port()
        config = os.path.join(work, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "  evaluation_interval: 1s\n"
                    "rule_files:\n  - %s\n"
                    "scrape_configs:\n  - job_name: ncclrec\n"
                    "    static_configs:\n      - targets: ['%s']\n" % (rules, target))
        self.log = open(os.path.join(work, "prometheus.log"), "w")
        self.proc = subprocess.Popen(
            ["prometheus", "--config.file=" + config,
             "--storage.tsdb.path=" + os.path.join(work, "tsdb"),
             "--web.listen-address=127.0.0.1:%d" % self.port, "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + TIMEOUT_S
        while not self._ready():
            if self.proc.poll() is not None:
                raise Failure("prometheus exited %d (%s)" % (self.proc.returncode, self.log.name))
            if time.monotonic() > deadline:
                raise Failure("prometheus not ready in %d s" % TIMEOUT_S)
            time.sleep(0.2)
        # A rule file that is not there is no error to Prometheus (rule_files are globs).
        with urllib.request.urlopen("http://127.0.0.1:%d/api/v1/rules" % self.port, timeout=5) as r:
            groups = json.load(r)["data"]["groups"]
        if not groups or not groups[0]["rules"]:
            raise Failure("prometheus loaded no rules from %s" % rules)

    def _ready(self):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/-/ready" % self.port, timeout=2) as r:
                return r.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def query(self, promql):
        """The result vector of an instant query, as [(labels, value)]."""
        url = "http://127.0.0.1:%d/api/v1/query?%s" % (
            self.port, urllib.parse.urlencode({"query": promql}))
        with urllib.request.urlopen(url, timeout=5) as r:
            doc = json.load(r)
        if doc.get("status") != "success":
            raise Failure("query %s: %s" % (promql, doc))
        return [(s["metric"], float(s["value"][1])) for s in doc["data"]["result"]]

    def wait_for(self, promql, what, watch=None):
        """Polls until `promql` returns samples; returns them."""
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            result = self.query(promql)
            if result:
                return result
            if watch is not None and watch.poll() is not None:
                raise Failure("%s: the job ended (exit %d) first" % (what, watch.returncode))
            if time.monotonic() > deadline:
                raise Failure("%s: %s still empty after %d s" % (what, promql, TIMEOUT_S))
            time.sleep(0.5)

    def close(self):
        stop(self.proc)
        self.log.close()


def job_env(a, work, metrics_port):
    env = dict(os.environ)
    for k in [k for k in env if k.startswith("NCCLREC_")]:
        del env[k]  # default settings but for what the test sets
    env.update({"LD_PRELOAD": os.path.join(a.build, "lib", "libncclrec.so"),
                "NCCLREC_DIR": os.path.join(work, "dumps"),
                "NCCLREC_METRICS_PORT": "127.0.0.1:%d" % metrics_port,
                # Long enough for the queries below; the test ends it with SIGTERM.
                "NCCLREC_METRICS_LINGER": "120"})
    return env


def lint(metrics_port):
    """promtool's linter on what the endpoint serves now."""
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % metrics_port, timeout=10) as r:
        text = r.read()
    out = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True)
    if out.returncode != 0 or out.stdout.strip() or out.stderr.strip():
        raise Failure("promtool check metrics: %s%s" % (out.stdout.decode(), out.stderr.decode()))
    return len(text)


def check_hang(prom, job_id, proc, started, metrics_port):
    """The faulty gated_save: hang, its verdict and culprit, and both alerts firing."""
    sel = 'job_id="%s"' % job_id
    prom.wait_for('ncclrec_job_hang_state{%s,state="hang"} == 1' % sel, "hang state", proc)
    hang_s = time.monotonic() - started
    verdict = prom.wait_for("ncclrec_job_verdict_info{%s}" % sel, "verdict", proc)
    labels = verdict[0][0]
    if labels.get("class") != "rank_gated_collective" or labels.get("culprits") != "0":
        raise Failure("verdict: %s" % labels)
    culprits = prom.wait_for("ncclrec_rank_culprit{%s} == 1" % sel, "culprit rank", proc)
    if sorted(s[0]["rank"] for s in culprits) != ["0"]:
        raise Failure("culprit ranks: %s" % [s[0] for s in culprits])
    prom.wait_for('ALERTS{alertname="NcclrecHang",%s,alertstate="firing"}' % sel,
                  "NcclrecHang firing", proc)
    fired = prom.wait_for('ALERTS{alertname="NcclrecHangVerdict",%s,alertstate="firing"}' % sel,
                          "NcclrecHangVerdict firing", proc)
    if fired[0][0].get("culprits") != "0":
        raise Failure("NcclrecHangVerdict: %s" % fired[0][0])
    # The counters the ranks' calls fed, scraped while they ran.
    calls = prom.query('sum(ncclrec_rank_calls_total{%s,op="ncclAllReduce"})' % sel)
    if not calls or calls[0][1] < 4:
        raise Failure("all-reduce calls: %s" % calls)
    size = lint(metrics_port)
    print("ok: hang in Prometheus %.1f s after the job started; verdict %s, culprit rank 0; "
          "NcclrecHang and NcclrecHangVerdict firing; %d all-reduce calls counted; the endpoint's "
          "%d bytes pass promtool check metrics"
          % (hang_s, labels["class"], calls[0][1], size), flush=True)


def run_cxxrun_faulty(a, work, prom, metrics_port):
    env = job_env(a, work, metrics_port)
    cmd = [os.path.join(a.build, "bin", "cxxrun"), "--standalone", "--nproc-per-node", "4",
           "--nccl=host", "--run-id", "telemetry-faulty",
           os.path.join(a.build, "bin", "sample_gated_save")]
    print("$ " + " ".join(cmd), flush=True)
    with open(os.path.join(work, "faulty.log"), "w") as log:
        started = time.monotonic()
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            check_hang(prom, "telemetry-faulty", proc, started, metrics_port)
        finally:
            code = stop(proc)
    # The hang's exit code; the linger, ended by SIGTERM, does not change it.
    if code != 3:
        raise Failure("cxxrun exited %s, not 3 (%s)" % (code, log.name))


def run_cxxrun_healthy(a, work, prom, metrics_port):
    """gated_save's program without its checkpoint (SAVE_STEP -1), steps enough to outlast the
    test: scraped SCRAPES times while it runs, then stopped as a user would (SIGTERM)."""
    env = job_env(a, work, metrics_port)
    cmd = [os.path.join(a.build, "bin", "cxxrun"), "--standalone", "--nproc-per-node", "4",
           "--nccl=host", "--run-id", "telemetry-healthy",
           os.path.join(a.build, "bin", "sample_gated_save"), "100000000", "-1"]
    print("$ " + " ".join(cmd), flush=True)
    sel = 'job_id="telemetry-healthy"'
    start = time.monotonic()
    with open(os.path.join(work, "healthy.log"), "w") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            # Scraped while its ranks complete ops, SCRAPES times.
            prom.wait_for("count_over_time(ncclrec_rank_completed_total{%s}[10m]) >= %d"
                          % (sel, a.scrapes), "%d scrapes of the healthy job" % a.scrapes, proc)
            ran_s = time.monotonic() - start
            time.sleep(2)  # the rules' evaluation over the last scrapes
            check_quiet(prom, sel, "while it ran")
        finally:
            code = stop(proc)
    # Ctrl-C's report (reason interrupt) is no hang either.
    if code != 128 + signal.SIGTERM:
        raise Failure("the healthy job exited %s on SIGTERM, not %d (%s)"
                      % (code, 128 + signal.SIGTERM, log.name))
    time.sleep(3)
    check_quiet(prom, sel, "after it was stopped")
    completed = prom.query("max(max_over_time(ncclrec_rank_completed_total{%s}[10m]))" % sel)
    print("ok: healthy job scraped %d times in %.1f s, up to %d ops completed per rank and "
          "communicator; no hang, no alert, also after SIGTERM"
          % (a.scrapes, ran_s, completed[0][1] if completed else 0), flush=True)


def check_quiet(prom, sel, when):
    hung = prom.query('max_over_time(ncclrec_job_hang_state{%s,state="hang"}[10m]) > 0' % sel)
    if hung:
        raise Failure("the healthy job was in state hang %s: %s" % (when, hung))
    alerts = prom.query('count_over_time(ALERTS{%s,alertstate="firing"}[10m])' % sel)
    if alerts:
        raise Failure("alerts fired for the healthy job %s: %s" % (when, [s[0] for s in alerts]))
    pending = prom.query('count_over_time(ALERTS{%s,alertstate="pending"}[10m])' % sel)
    if pending:  # a `for:` clause not over yet: said, not a failure (nothing fired)
        print("note: pending for the healthy job %s: %s" % (when, [s[0] for s in pending]))


def run_mpirun(a, work, prom, metrics_port):
    if shutil.which("mpirun") is None:
        skip("mpirun: not installed (Debian: apt-get install openmpi-bin)")
    dumps = os.path.join(work, "dumps")
    os.makedirs(dumps)
    env = job_env(a, work, metrics_port)
    exporter_env = dict(env)
    exporter_env.pop("LD_PRELOAD")
    exporter = subprocess.Popen(
        [os.path.join(a.build, "bin", "ncclrec-exporter"), "--dir", dumps],
        env=exporter_env, stdout=open(os.path.join(work, "exporter.log"), "w"),
        stderr=subprocess.STDOUT, start_new_session=True)
    ranks = {"LD_PRELOAD": env["LD_PRELOAD"], "NCCLREC_DIR": dumps,
             "LD_LIBRARY_PATH": os.path.join(a.build, "hostnccl"),
             "NCCLREC_SAMPLE_ID_FILE": os.path.join(work, "unique_id")}
    cmd = ["mpirun", "--oversubscribe", "-np", "4"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    for k, v in ranks.items():
        cmd += ["-x", "%s=%s" % (k, v)]
    cmd.append(os.path.join(a.build, "bin", "sample_gated_save"))
    print("$ " + " ".join(cmd), flush=True)
    launcher_env = {k: v for k, v in env.items() if k not in ("LD_PRELOAD",)}
    with open(os.path.join(work, "mpirun.log"), "w") as log:
        started = time.monotonic()
        proc = subprocess.Popen(cmd, env=launcher_env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            # mpirun's job id is OpenMPI's: read it from the exported ranks.
            info = prom.wait_for("ncclrec_rank_info", "the ranks", proc)
            check_hang(prom, info[0][0]["job_id"], proc, started, metrics_port)
        finally:
            stop(proc)
            code = stop(exporter)
    if code != 0:
        raise Failure("ncclrec-exporter exited %s on SIGTERM, not 0" % code)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--launcher", required=True, choices=["cxxrun", "mpirun"])
    p.add_argument("--build", required=True)
    p.add_argument("--source", required=True)
    p.add_argument("--scrapes", type=int, default=5,
                   help="scrapes of the healthy job before it is stopped (default 5)")
    p.add_argument("--keep", help="work in this directory and leave it (logs, TSDB)")
    a = p.parse_args()
    for tool in ("prometheus", "promtool"):
        if shutil.which(tool) is None:
            skip("%s: not installed (Debian: apt-get install prometheus)" % tool)
    work = a.keep or tempfile.mkdtemp(prefix="ncclrec-telemetry-")
    os.makedirs(work, exist_ok=True)
    metrics_port = free_port()
    a.build = os.path.abspath(a.build)
    a.source = os.path.abspath(a.source)
    rules = os.path.join(a.source, "metrics", "prometheus", "ncclrec.rules.yml")
    prom = None
    try:
        prom = Prometheus(work, "127.0.0.1:%d" % metrics_port, rules)
        if a.launcher == "cxxrun":
            run_cxxrun_faulty(a, work, prom, metrics_port)
            run_cxxrun_healthy(a, work, prom, metrics_port)
        else:
            run_mpirun(a, work, prom, metrics_port)
    except Failure as e:
        print("FAILED: %s (logs in %s)" % (e, work), file=sys.stderr)
        a.keep = work
        return 1
    finally:
        if prom is not None:
            prom.close()
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
