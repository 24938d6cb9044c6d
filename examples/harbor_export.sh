#!/usr/bin/env bash
# Harbor: export tasks as Harbor task directories, check them with Harbor's own lint,
# and run its oracle agent (gold patch: reward 1) and no-op agent (reward 0) on one.
#
#   bash examples/harbor_export.sh TASKS_OR_SHARDS_DIR OUT_DIR
set -euo pipefail
SRC="$1"; OUT="$2"
HARBOR_HOME="$(bash "$(dirname "$0")/../scripts/install-harbor.sh")"   # harbor venv + Compose v2 plugin
export DOCKER_CONFIG="$HARBOR_HOME/docker-config"
python3 -m taskforge export "$SRC" --to harbor --out "$OUT"
TASK="$(find "$OUT" -mindepth 1 -maxdepth 1 -type d | sort | head -1)"
"$HARBOR_HOME/venv/bin/harbor" lint "$OUT"/*/
for agent in oracle nop; do
  "$HARBOR_HOME/venv/bin/harbor" trial start -p "$TASK" -a "$agent" -e docker --trials-dir "$OUT.trials" \
    --trial-name "$agent"
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(sys.argv[2], r['verifier_result']['rewards'])" \
    "$OUT.trials/$agent/result.json" "$agent"
done
