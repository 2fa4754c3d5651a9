"""``ixtool launch``: from a matrix row to the job a runner really launches.

* :mod:`.rows`     selection → matrix rows (the sweep generator) and their arm
* :mod:`.targets`  runner node → launcher, row → benchmark script (SWEEP.md §7)
* :mod:`.stages`   run launcher + script in the tracing sandbox, collect records
* :mod:`.slurmargs` Slurm client argv (salloc / sbatch / srun options), pure
* :mod:`.render`   records → environment, Slurm allocation, server command, findings
* :mod:`.sbatch`   rows → sbatch scripts (pure)
* :mod:`.state`    the submitted-jobs state file
* :mod:`.service`  orchestration used by ``cli/launch.py``

The Slurm client commands (sbatch / squeue / sacct / scontrol) are run by the I/O
adapter :mod:`inferencex_tools.io.slurm`.
"""
