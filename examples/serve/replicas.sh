#!/usr/bin/env bash
# replicas.sh runs two aegis serve replicas that share their approvals and
# caps in PostgreSQL, in front of the demo server, on 127.0.0.1:8347 and
# 127.0.0.1:8348, each with a state directory of its own. It prints the
# API key to call them with; Ctrl-C stops both.
#
#   bash examples/serve/replicas.sh
#
# PostgreSQL: $AEGIS_PG_URL, or a throwaway server that .ci/postgres starts
# (Debian's postgresql package).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
# A throwaway server of its own, apart from the tests' (.ci/postgres).
url="${AEGIS_PG_URL:-$(AEGIS_PG_DIR=/tmp/aegis-pg-replicas AEGIS_PG_PORT=55434 "$here/../../.ci/postgres")}"
go build -o "$work/aegis" "$here/../../cmd/aegis"
keys="$("$work/aegis" api-key)"
key="$(sed -n 's/^key: *//p' <<<"$keys")"
sum="$(sed -n 's/^sha256: *//p' <<<"$keys")"
mkdir -p "$work/notes"
echo "hello from the notes" >"$work/notes/hello.txt"
sed -e "s|@AEGIS@|$work/aegis|" -e "s|@DIR@|$work|" -e "s|@POSTGRES@|$url|" -e "s|@KEY_SHA256@|$sum|" \
	"$here/aegis.yaml.in" >"$work/aegis.yaml"
sed -e "s|@DIR@|$work|" "$here/policy.yaml.in" >"$work/policy.yaml"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait' EXIT INT TERM
for i in 1 2; do
	AEGIS_HOME="$work/replica-$i" "$work/aegis" serve --config "$work/aegis.yaml" --listen "127.0.0.1:834$((6 + i))" 2>"$work/replica-$i.log" &
	pids+=($!)
done
sleep 1
for i in 1 2; do
	if ! kill -0 "${pids[$((i - 1))]}" 2>/dev/null; then
		echo "replica $i did not start:" >&2
		cat "$work/replica-$i.log" >&2
		exit 1
	fi
done
cat <<MSG
Two replicas serve the demo server:
  http://127.0.0.1:8347/mcp/demo   (log: $work/replica-1.log)
  http://127.0.0.1:8348/mcp/demo   (log: $work/replica-2.log)
Call them with an MCP client (tools/list, then tools/call) and the header
  Authorization: Bearer $key   (principal alice, role writer; echo is capped at 3 across both)
Metrics: curl -H 'Authorization: Bearer $key' http://127.0.0.1:8347/metrics
Approvals: AEGIS_HOME=$work/replica-1 $work/aegis approvals --config $work/aegis.yaml
Ctrl-C stops both.
MSG
wait
