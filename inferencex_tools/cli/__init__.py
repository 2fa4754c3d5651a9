"""Typer command groups: parse → call the domain core → report. Nothing else."""
