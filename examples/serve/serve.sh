#!/usr/bin/env bash
# serve.sh runs aegis serve in front of two servers, notes and web (the
# bundled demo server, so nothing else need be installed), with two API
# keys: alice (role writer) and bob (role reader). It prints the URLs, the
# keys and commands to try; Ctrl-C stops it.
#
#   bash examples/serve/serve.sh              one aegis serve, state in SQLite
#   bash examples/serve/serve.sh --replicas   two replicas sharing PostgreSQL
#
# With --replicas the two share their approvals, caps, pins, taint and
# provenance in PostgreSQL ($AEGIS_PG_URL, or a throwaway server that
# .ci/postgres starts from Debian's postgresql package) and one state
# directory, where each writes a lane of the servers' chains.
#
# Settings for scripts and tests: AEGIS_BIN (an aegis binary to use instead
# of building one), AEGIS_SERVE_DIR (the working directory, default a new
# temporary one), AEGIS_SERVE_LISTEN (one address for every replica, such as
# 127.0.0.1:0; default 127.0.0.1:8347 and :8348).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
replicas=1
case "${1:-}" in
"") ;;
--replicas) replicas=2 ;;
*)
	echo "usage: bash examples/serve/serve.sh [--replicas]" >&2
	exit 2
	;;
esac

work="${AEGIS_SERVE_DIR:-$(mktemp -d)}"
mkdir -p "$work"
work="$(cd "$work" && pwd -P)"
aegis="${AEGIS_BIN:-}"
if [[ -z "$aegis" ]]; then
	aegis="$work/aegis"
	(cd "$repo" && go build -o "$aegis" ./cmd/aegis)
fi

state="# state: SQLite files in \$AEGIS_HOME (the default)"
if ((replicas > 1)); then
	# A throwaway server of its own, apart from the tests' (.ci/postgres).
	url="${AEGIS_PG_URL:-$(AEGIS_PG_DIR=/tmp/aegis-pg-serve-example AEGIS_PG_PORT=55434 "$repo/.ci/postgres")}"
	state="state: {postgres: '$url'}"
fi

# Two API keys; the configuration holds only their SHA-256.
key_of() { sed -n "s/^$1: *//p" <<<"$2"; }
alice_keys="$("$aegis" api-key)"
bob_keys="$("$aegis" api-key)"
alice="$(key_of key "$alice_keys")"
bob="$(key_of key "$bob_keys")"

mkdir -p "$work/notes" "$work/drafts" "$work/empty"
echo "Standup at 10: ship aegis serve." >"$work/notes/hello.txt"
echo "Plan: not for everyone's eyes yet." >"$work/drafts/plan.txt"
# sub is a sed replacement of @1@ by $2, whatever characters $2 holds.
sub() { printf 's|@%s@|%s|g' "$1" "$(sed -e 's/[\\|&]/\\&/g' <<<"$2")"; }
sed -e "$(sub AEGIS "$aegis")" -e "$(sub DIR "$work")" -e "$(sub STATE "$state")" \
	-e "$(sub ALICE_SHA256 "$(key_of sha256 "$alice_keys")")" -e "$(sub BOB_SHA256 "$(key_of sha256 "$bob_keys")")" \
	"$here/aegis.yaml.in" >"$work/aegis.yaml"
sed -e "$(sub DIR "$work")" "$here/policy.yaml.in" >"$work/policy.yaml"
cp "$here/bindings.yaml" "$work/bindings.yaml"

export AEGIS_HOME="$work/state"
pids=()
stop() {
	kill "${pids[@]}" 2>/dev/null || true
	wait || true
}
trap stop EXIT
trap 'exit 0' INT TERM
for ((i = 1; i <= replicas; i++)); do
	listen="${AEGIS_SERVE_LISTEN:-127.0.0.1:$((8346 + i))}"
	"$aegis" serve --config "$work/aegis.yaml" --listen "$listen" >"$work/serve-$i.log" 2>&1 &
	pids+=($!)
done

# Wait until each replica says where it serves (or has died).
bases=()
for ((i = 1; i <= replicas; i++)); do
	for _ in $(seq 100); do
		base="$(sed -n 's|^aegis: serving notes at \(http://[^/]*\)/mcp/notes$|\1|p' "$work/serve-$i.log")"
		[[ -n "$base" ]] && break
		if ! kill -0 "${pids[$((i - 1))]}" 2>/dev/null; then
			break
		fi
		sleep 0.1
	done
	if [[ -z "$base" ]]; then
		echo "aegis serve $i did not start:" >&2
		cat "$work/serve-$i.log" >&2
		exit 1
	fi
	bases+=("$base")
done

b="${bases[0]}"
cli="AEGIS_HOME=$AEGIS_HOME $aegis"
cat <<MSG
aegis serve is in front of two servers, notes and web$( ((replicas > 1)) && echo ", as two replicas on PostgreSQL"):
$(for base in "${bases[@]}"; do echo "  $base/mcp/notes  $base/mcp/web"; done)
API keys (the key's name is the principal):
  alice, role writer: $alice
  bob,   role reader: $bob
Try them with the official Go SDK client (from $repo):
  go run ./examples/serve/client -key $alice $b/mcp/notes read_file '{"path": "$work/notes/hello.txt"}'
  go run ./examples/serve/client -key $bob $b/mcp/notes echo '{"text": "hi"}'                # refused: bob is no writer
  go run ./examples/serve/client -key $alice $b/mcp/notes echo '{"text": "hi"}'
  go run ./examples/serve/client -key $bob $b/mcp/web fetch '{"url": "http://169.254.169.254/latest/"}'   # refused
  go run ./examples/serve/client -key $alice ${bases[$((replicas - 1))]}/mcp/notes read_file '{"path": "$work/drafts/plan.txt"}'   # waits for a person
and answer the held call from another terminal:
  $cli approvals list --config $work/aegis.yaml
  $cli approvals approve --config $work/aegis.yaml ID
See every decision, by principal and role, and check the chain:
  $cli log
  $cli verify
Metrics:
  curl -s -H 'Authorization: Bearer $alice' $b/metrics | grep '^aegis_'
Logs: $work/serve-*.log. Ctrl-C stops aegis serve.
MSG
wait
