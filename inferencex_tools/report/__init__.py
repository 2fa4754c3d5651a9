"""Findings, the rule registry and the reporters that render them (findings:
:mod:`.reporters`; the rule catalog: :mod:`.catalog`)."""

from inferencex_tools.report.findings import Finding, Result, Rule, Severity, rule

__all__ = ["Finding", "Result", "Rule", "Severity", "rule"]
