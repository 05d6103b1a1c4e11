"""ncclrec.launchers: what `ncclrec run` changes in a job's environment and command line."""
import unittest

from ncclrec import launchers

SHIM = "/venv/lib/python3.11/site-packages/ncclrec/_bundle/lib/libncclrec.so"


class Preload(unittest.TestCase):
    def test_alone(self):
        self.assertEqual(launchers.preload(None, SHIM), (SHIM, None))
        self.assertEqual(launchers.preload("", SHIM), (SHIM, None))

    def test_first_and_the_rest_kept(self):
        value, kept = launchers.preload("/opt/jemalloc.so /usr/lib/libnccl.so.2", SHIM)
        self.assertEqual(value, SHIM + ":/opt/jemalloc.so:/usr/lib/libnccl.so.2")
        self.assertIsNone(kept)

    def test_a_shim_already_there_is_kept_alone(self):
        value, kept = launchers.preload("/usr/lib/libncclrec.so:/x.so", SHIM)
        self.assertEqual(value, "/usr/lib/libncclrec.so:/x.so")
        self.assertEqual(kept, "/usr/lib/libncclrec.so")


class Environment(unittest.TestCase):
    def test_job_environment(self):
        env, kept = launchers.job_environment({"PATH": "/bin", "LD_LIBRARY_PATH": "/cuda"}, SHIM,
                                              "/w/d", "r7", "/h")
        self.assertEqual(env["LD_PRELOAD"], SHIM)
        self.assertEqual(env["NCCLREC_DIR"], "/w/d")
        self.assertEqual(env["NCCLREC_RUN_ID"], "r7")
        self.assertEqual(env["LD_LIBRARY_PATH"], "/h:/cuda")
        self.assertEqual(env["PATH"], "/bin")
        self.assertIsNone(kept)

    def test_no_run_id_leaves_the_launchers(self):
        env, _ = launchers.job_environment({}, SHIM, "/w/d")
        self.assertNotIn("NCCLREC_RUN_ID", env)
        self.assertNotIn("LD_LIBRARY_PATH", env)
        self.assertEqual(launchers.passed_names(env), ["LD_PRELOAD", "NCCLREC_DIR"])


class Commands(unittest.TestCase):
    NAMES = ["LD_PRELOAD", "NCCLREC_DIR"]

    def test_open_mpi_gets_x_for_each_name(self):
        cmd, warning = launchers.adapt_command(["mpirun", "-np", "4", "./train"], self.NAMES,
                                               open_mpi=lambda p: True)
        self.assertEqual(cmd, ["mpirun", "-x", "LD_PRELOAD", "-x", "NCCLREC_DIR", "-np", "4",
                               "./train"])
        self.assertIsNone(warning)

    def test_another_mpi_is_left_alone(self):
        cmd, _ = launchers.adapt_command(["/opt/mpich/bin/mpiexec", "-n", "2", "a"], self.NAMES,
                                         open_mpi=lambda p: False)
        self.assertEqual(cmd, ["/opt/mpich/bin/mpiexec", "-n", "2", "a"])

    def test_open_mpi_is_told_by_its_version_line(self):
        class Done:
            def __init__(self, out):
                self.stdout = out

        self.assertTrue(launchers.is_open_mpi("mpirun", run=lambda *a, **k: Done(
            b"mpirun (Open MPI) 4.1.4\n")))
        self.assertFalse(launchers.is_open_mpi("mpirun", run=lambda *a, **k: Done(
            b"HYDRA build details:\n")))

        def missing(*a, **k):
            raise FileNotFoundError("mpirun")
        self.assertFalse(launchers.is_open_mpi("mpirun", run=missing))

    def test_srun(self):
        same = ["srun", "-n", "8", "./train"]
        self.assertEqual(launchers.adapt_command(same, self.NAMES), (same, None))
        cmd, _ = launchers.adapt_command(["srun", "--export=ALL,A=1", "x"], self.NAMES)
        self.assertEqual(cmd, ["srun", "--export=ALL,A=1", "x"])
        cmd, _ = launchers.adapt_command(["srun", "--export=PATH,HOME", "x"], self.NAMES)
        self.assertEqual(cmd, ["srun", "--export=PATH,HOME,LD_PRELOAD,NCCLREC_DIR", "x"])
        cmd, _ = launchers.adapt_command(["srun", "--export", "PATH", "x"], self.NAMES)
        self.assertEqual(cmd, ["srun", "--export", "PATH,LD_PRELOAD,NCCLREC_DIR", "x"])
        cmd, warning = launchers.adapt_command(["srun", "--export=NONE", "x"], self.NAMES)
        self.assertEqual(cmd, ["srun", "--export=NONE", "x"])
        self.assertIn("--export=ALL", warning)

    def test_others_inherit_the_environment(self):
        for cmd in (["torchrun", "--nproc-per-node", "8", "t.py"], ["python", "t.py"],
                    ["accelerate", "launch", "t.py"], ["deepspeed", "t.py"]):
            self.assertEqual(launchers.adapt_command(cmd, self.NAMES, open_mpi=None), (cmd, None))

    def test_several_nodes(self):
        yes = [["torchrun", "--nnodes", "4", "t.py"], ["torchrun", "--nnodes=1:4", "t.py"],
               ["srun", "-N", "2", "x"], ["mpirun", "--hostfile", "h", "x"],
               ["deepspeed", "--num_nodes", "2", "t.py"],
               ["accelerate", "launch", "--num_machines", "2", "t.py"]]
        no = [["torchrun", "--nnodes", "1", "t.py"], ["torchrun", "--standalone", "t.py"],
              ["mpirun", "-np", "4", "x"], ["python", "t.py"]]
        for cmd in yes:
            self.assertTrue(launchers.several_nodes(cmd), cmd)
        for cmd in no:
            self.assertFalse(launchers.several_nodes(cmd), cmd)


if __name__ == "__main__":
    unittest.main()
