#!/usr/bin/env bash
# The `tandem ...` command lines of docs/*.md (scripts/check-doc-examples): complete commands run
# on small generated inputs, synopses name only options the CLI knows, GPU and MPI lines are skipped
# with their reason.
set -u
exec python3 "$(dirname "$0")/../../scripts/check-doc-examples" "$1"
