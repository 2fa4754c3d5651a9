"""CI integration: the label policy, event planning (``ixtool ci plan``) and
``ixtool labels explain``.  :mod:`labels` is pure; :mod:`service` does the I/O."""
