#!/bin/bash
# scripts/pernode/run.sh BIN MODE CLIENTS DURATION OUT.jsonl [LABEL]
#
# CPU and system calls per operation on each node of a 3-node cluster of
# real `BIN serve` processes on loopback, and on their clients: the
# cluster file has cluster.example.yaml's layout and one idempotent route
# (/pay, key header:Idempotency-Key) in front of a trivial upstream
# (upstream.go); load.go's CLIENTS closed-loop net/http clients send to
# one node for DURATION after a second of warm-up, while `perf stat` counts
# each process's task-clock and system calls (syscall tracepoints: a
# counter in the kernel, no stop per call as strace makes). MODE:
#   setnx-follower  SETNX (PUT /v1/kv/{key}?nx=1) to a follower's API
#   setnx-leader    SETNX to the leader's API
#   gw              first requests (POST /pay, fresh key) to a follower's gateway
#   gw-leader       first requests to the leader's gateway
#   pass            pass-through (POST /pay-direct, no route) to a follower's gateway
#   once-follower   once pairs (begin, then complete, each with an Idempotency-Key)
#                   to a follower's API; an op is a pair
#   once-leader     once pairs to the leader's API
#   once-nokey-follower  once pairs to a follower's API without the keys
#   resp-once-follower, resp-once-leader  the same pairs over the Redis protocol
# One JSON line per run is appended to OUT (per-op figures keyed by role:
# L the leader, F* the node the clients call when it is a follower, F the
# other follower, client); show.py OUT prints the medians per LABEL and
# MODE. ENVS="GOGC=200 ..." is passed to the nodes; RAFT="apply_commit_every:
# 1000, ..." is the cluster file's raft: mapping. Needs perf, curl, go
# and python3; run it as a user perf lets count syscalls (root, or
# kernel.perf_event_paranoid <= -1).
set -eu
BIN=$1 MODE=$2 CL=$3 DUR=$4 OUT=$5 LABEL=${6:-$(basename "$1")}
HERE=$(cd "$(dirname "$0")" && pwd)
D=$(mktemp -d /tmp/idemgate-pernode.XXXXXX)
trap 'kill ${PIDS[@]:-} ${UP:-} 2>/dev/null; wait ${PIDS[@]:-} ${UP:-} 2>/dev/null || true; rm -rf "$D"' EXIT
go build -o "$D/load" "$HERE/load.go"
go build -o "$D/upstream" "$HERE/upstream.go"
B=$((27100 + RANDOM % 400 * 10)) R=$((B - 4000)) # R: the Redis-protocol listeners
cat > "$D/cluster.yaml" <<Y
nodes:
  - {id: n1, raft: 127.0.0.1:$((B+1)), api: 127.0.0.1:$((B+2)), listen: 127.0.0.1:$((B+3)), resp: 127.0.0.1:$((R+1))}
  - {id: n2, raft: 127.0.0.1:$((B+4)), api: 127.0.0.1:$((B+5)), listen: 127.0.0.1:$((B+6)), resp: 127.0.0.1:$((R+2))}
  - {id: n3, raft: 127.0.0.1:$((B+7)), api: 127.0.0.1:$((B+8)), listen: 127.0.0.1:$((B+9)), resp: 127.0.0.1:$((R+3))}
data_dir: $D/{id}
upstream: http://127.0.0.1:$B
routes:
  - {name: pay, methods: [POST], path: /pay, key: "header:Idempotency-Key", ttl: 1h}
Y
[ -n "${RAFT:-}" ] && echo "raft: {$RAFT}" >>"$D/cluster.yaml"
"$D/upstream" 127.0.0.1:$B & UP=$!
PIDS=()
for n in n1 n2 n3; do
	env ${ENVS:-} "$BIN" serve --config "$D/cluster.yaml" --node $n --bootstrap >"$D/$n.log" 2>&1 & PIDS+=($!)
done
API=(http://127.0.0.1:$((B+2)) http://127.0.0.1:$((B+5)) http://127.0.0.1:$((B+8)))
GW=(http://127.0.0.1:$((B+3)) http://127.0.0.1:$((B+6)) http://127.0.0.1:$((B+9)))
RESP=(127.0.0.1:$((R+1)) 127.0.0.1:$((R+2)) 127.0.0.1:$((R+3)))
for _ in $(seq 1 150); do
	ok=0
	for a in "${API[@]}"; do curl -sf "$a/readyz" >/dev/null && ok=$((ok+1)); done
	[ $ok = 3 ] && break
	sleep 0.2
done
LEAD=-1
for i in 0 1 2; do curl -s "${API[$i]}/metrics" | grep -q '^idemgate_raft_state 2' && LEAD=$i; done
[ $LEAD = -1 ] && { echo "run.sh: no leader" >&2; exit 1; }
FOL=$(( (LEAD+1) % 3 ))
case $MODE in
setnx-follower) URL=${API[$FOL]} M=setnx ;;
setnx-leader) URL=${API[$LEAD]} M=setnx FOL=$LEAD ;;
gw) URL=${GW[$FOL]} M=gw ;;
gw-leader) URL=${GW[$LEAD]} M=gw FOL=$LEAD ;;
pass) URL=${GW[$FOL]} M=pass ;;
once-follower) URL=${API[$FOL]} M=once ;;
once-leader) URL=${API[$LEAD]} M=once FOL=$LEAD ;;
once-nokey-follower) URL=${API[$FOL]} M=once-nokey ;;
resp-once-follower) URL=${RESP[$FOL]} M=once-resp ;;
resp-once-leader) URL=${RESP[$LEAD]} M=once-resp FOL=$LEAD ;;
*) echo "run.sh: MODE: $MODE: want setnx-follower, setnx-leader, gw, gw-leader, pass, once-follower, once-leader, once-nokey-follower, resp-once-follower or resp-once-leader" >&2; exit 2 ;;
esac
"$D/load" $M "$URL" "$CL" 1s >/dev/null # warm-up
EV=task-clock,context-switches,raw_syscalls:sys_enter
for s in write read pwrite64 fdatasync fsync epoll_pwait futex nanosleep tgkill; do EV=$EV,syscalls:sys_enter_$s; done
PP=()
for i in 0 1 2; do perf stat -x, -e $EV -p ${PIDS[$i]} -o "$D/perf.$i" & PP+=($!); done
sleep 0.3
perf stat -x, -e $EV -o "$D/perf.client" "$D/load" $M "$URL" "$CL" "$DUR" >"$D/load.out"
kill -INT ${PP[@]}
wait ${PP[@]} 2>/dev/null || true
for i in 0 1 2; do grep -E 'VmHWM|VmRSS' /proc/${PIDS[$i]}/status | tr -s ' ' | tr '\n' ' ' >"$D/mem.$i"; done
python3 "$HERE/sum.py" "$D" $LEAD $FOL "$MODE" "$LABEL" >>"$OUT"
