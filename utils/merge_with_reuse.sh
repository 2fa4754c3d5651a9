#!/usr/bin/env bash
exec ixtool merge-with-reuse --yes ${REPO:+--repo "$REPO"} --timeout "${CHECK_TIMEOUT_SECONDS:-900}" "$@"
