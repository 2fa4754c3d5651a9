"""Workflow-derived job environments (shared by ``policy check`` and ``launch render``).

The public API::

    wf = load_workflows({path: bytes for every .github/workflows/*.yml})
    je = job_environment(wf, matrix_row, node="h200-dgxc-slurm_0",
                         paths=LocalPaths(workspace="/w", runner_root="/r"))
    je.env, je.origin, je.launcher, je.notes

See :mod:`.jobenv` for where each value comes from, :mod:`.expr` for expressions and
:mod:`.shell` for the ``run:`` subset.
"""

from inferencex_tools.workflow.jobenv import (
    BUCKETS,
    SECRET_PLACEHOLDER,
    Dispatch,
    JobEnvironment,
    LocalPaths,
    Template,
    Workflows,
    bucket_of,
    job_environment,
    load_workflows,
    runner_defaults,
    workflow_files,
)

__all__ = [
    "BUCKETS", "SECRET_PLACEHOLDER", "Dispatch", "JobEnvironment", "LocalPaths", "Template",
    "Workflows", "bucket_of", "job_environment", "load_workflows", "runner_defaults",
    "workflow_files",
]
