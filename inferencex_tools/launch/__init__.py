"""``ixtool launch``: from a matrix row to the job a runner really launches.

* :mod:`.rows`     selection → matrix rows (the sweep generator) and their arm
* :mod:`.resolve`  runner node → launcher, row → benchmark script (SWEEP.md §7)
* :mod:`.trace`    run launcher + script in the tracing sandbox, collect records
* :mod:`.render`   records → environment, Slurm allocation, server command, findings
* :mod:`.sbatch`   rows → sbatch scripts (pure)
* :mod:`.slurmio`  the edge to sbatch / squeue / sacct / scontrol
* :mod:`.state`    the submitted-jobs state file
* :mod:`.service`  orchestration used by ``cli/launch.py``
"""
