#!/usr/bin/env bash
# Record the graded runs that tests/test_grading_replay.py replays: every
# red-team attack (naive grader and ours) and the honest cases, on the real
# sandboxes of both backends (Docker engine and bubblewrap, as the suite needs:
# $TASKFORGE_ROOTFS_BASE for bwrap). About 30 minutes on 2 cores. The data is
# replaced only when every test passed. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
out=tests/data/grading
tmp="$(mktemp -d /tmp/tf-cases.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
TASKFORGE_RECORD_CASES="$tmp" python3 -m pytest -q -p no:cacheprovider tests/test_redteam.py \
  -k "test_attack or honest or gold" "$@"
n=$(ls "$tmp"/*.json.gz | wc -l)
rm -rf "$out.new" && mkdir -p "$out.new" && cp "$tmp"/*.json.gz "$out.new"/
rm -rf "$out" && mv "$out.new" "$out"
echo "recorded $n graded runs in $out ($(du -sh "$out" | cut -f1))"
