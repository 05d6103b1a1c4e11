"""A one-node Slurm cluster for a test: slurmctld and slurmd from Debian's slurm-wlm, run in the
foreground as root with their own configuration, state and ports under a scratch directory, and no
munge (auth/none). Nothing of the machine's /etc/slurm is used or changed.

    cluster = SlurmCluster("/tmp/x/slurm", cpus=4)   # raises SlurmUnavailable with the reason
    subprocess.run(cluster.srun_command(4) + ["hostname"], env={**os.environ,
                   "SLURM_CONF": cluster.conf})
    cluster.shutdown()
"""
import os
import random
import shutil
import socket
import subprocess
import time


class SlurmUnavailable(Exception):
    pass


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SlurmCluster:
    def __init__(self, root, cpus=4, start_timeout=20.0):
        for tool in ("slurmctld", "slurmd", "srun", "scancel", "sinfo"):
            if shutil.which(tool) is None:
                raise SlurmUnavailable("%s is not installed (Debian: apt-get install slurm-wlm)"
                                       % tool)
        if os.geteuid() != 0:
            raise SlurmUnavailable("slurmd must run as root to start jobs, and this is uid %d"
                                   % os.geteuid())
        self.root = root
        self.node = socket.gethostname().split(".")[0]
        for d in ("state", "spool", "log"):
            os.makedirs(os.path.join(root, d), exist_ok=True)
        self.conf = os.path.join(root, "slurm.conf")
        self.env = dict(os.environ, SLURM_CONF=self.conf)
        self._write_conf(cpus)
        self.daemons = []
        try:
            for daemon in ("slurmctld", "slurmd"):
                out = open(os.path.join(root, "log", daemon + ".out"), "w")
                self.daemons.append(subprocess.Popen([daemon, "-D", "-f", self.conf], env=self.env,
                                                     stdout=out, stderr=subprocess.STDOUT))
            self._wait_idle(start_timeout)
        except SlurmUnavailable:
            self.shutdown()
            raise

    def _write_conf(self, cpus):
        r = self.root
        lines = [
            "ClusterName=ncclrec-test",
            # Job ids unique across the test's clusters, as a real cluster's are (programs name
            # per-job files by them).
            "FirstJobId=%d" % random.randint(1000, 60000000),
            "SlurmctldHost=%s(127.0.0.1)" % self.node,
            "SlurmctldPort=%d" % _free_port(), "SlurmdPort=%d" % _free_port(),
            "AuthType=auth/none", "CredType=cred/none",
            "SlurmUser=root", "SlurmdUser=root",
            "StateSaveLocation=%s/state" % r, "SlurmdSpoolDir=%s/spool" % r,
            "SlurmctldPidFile=%s/slurmctld.pid" % r, "SlurmdPidFile=%s/slurmd.pid" % r,
            "SlurmctldLogFile=%s/log/slurmctld.log" % r, "SlurmdLogFile=%s/log/slurmd.log" % r,
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
            "SelectType=select/cons_tres", "SelectTypeParameters=CR_CPU",
            "MpiDefault=none", "ReturnToService=2",
            # The node may have fewer cores than the ranks the test starts.
            "SlurmdParameters=config_overrides",
            "JobAcctGatherType=jobacct_gather/none", "AccountingStorageType=accounting_storage/none",
            "NodeName=%s NodeAddr=127.0.0.1 CPUs=%d State=UNKNOWN" % (self.node, max(cpus, 1)),
            "PartitionName=test Nodes=%s Default=YES MaxTime=INFINITE State=UP" % self.node,
        ]
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")

    def _wait_idle(self, timeout):
        deadline = time.monotonic() + timeout
        state = ""
        while time.monotonic() < deadline:
            for d in self.daemons:
                if d.poll() is not None:
                    raise SlurmUnavailable("%s exited %d at start: %s"
                                           % (d.args[0], d.returncode, self._log_tail()))
            r = subprocess.run(["sinfo", "-h", "-o", "%t"], env=self.env, capture_output=True,
                               text=True)
            state = r.stdout.strip()
            if r.returncode == 0 and state in ("idle", "mix", "alloc"):
                return
            time.sleep(0.3)
        raise SlurmUnavailable("the node did not become idle in %.0f s (state '%s'): %s"
                               % (timeout, state, self._log_tail()))

    def _log_tail(self):
        out = []
        for name in ("slurmctld.out", "slurmd.out", "slurmctld.log", "slurmd.log"):
            path = os.path.join(self.root, "log", name)
            if os.path.exists(path):
                with open(path) as f:
                    out += [name + ": " + line.strip() for line in f.readlines()[-3:]]
        return " | ".join(out) or "no log"

    def srun_command(self, ntasks):
        return ["srun", "--nodes=1", "--ntasks=%d" % ntasks, "--kill-on-bad-exit=1"]

    def cancel_all(self):
        subprocess.run(["scancel", "--full", "--user=%d" % os.geteuid()], env=self.env,
                       capture_output=True)

    def shutdown(self):
        self.cancel_all()
        for d in self.daemons:
            if d.poll() is None:
                d.terminate()
        for d in self.daemons:
            try:
                d.wait(timeout=10)
            except subprocess.TimeoutExpired:
                d.kill()
                d.wait()
        self.daemons = []
