package resp

import (
	"fmt"
	"strings"
)

// CLUSTER, as a Redis without cluster mode answers it: idemgate's
// keyspace is one, whole on every node, so there are no slots to ask
// about. A client that probes for cluster mode (CLUSTER INFO, CLUSTER
// SLOTS) learns to use the node as a standalone server. Subcommands are
// checked as Redis checks them (unknown, wrong arity) before the answer;
// a script may send any but RESET, as in Redis.

func init() {
	register(&redisCommand{name: "cluster", arity: -2, kind: kindConn, script: true, flags: []string{"stale"},
		sub: clusterSub, conn: cmdCluster})
}

const msgClusterDisabled = "ERR This instance has cluster support disabled"

// clusterSubs are Redis 7.0's CLUSTER subcommands and their arity.
var clusterSubs = map[string]int{
	"addslots": -3, "addslotsrange": -4, "bumpepoch": 2, "count-failure-reports": 3, "countkeysinslot": 3,
	"delslots": -3, "delslotsrange": -4, "failover": -2, "flushslots": 2, "forget": 3, "getkeysinslot": 4,
	"help": 2, "info": 2, "keyslot": 3, "links": 2, "meet": -4, "myid": 2, "nodes": 2, "replicas": 3,
	"replicate": 3, "reset": -2, "saveconfig": 2, "set-config-epoch": 3, "setslot": -4, "shards": 2,
	"slaves": 3, "slots": 2,
}

// clusterNoScript are the subcommands a script may not send.
var clusterNoScript = map[string]bool{"reset": true}

func clusterSub(a [][]byte) string {
	sub := strings.ToLower(string(a[1]))
	arity, ok := clusterSubs[sub]
	switch {
	case !ok:
		return fmt.Sprintf("ERR unknown subcommand '%s'. Try CLUSTER HELP.", clip(a[1]))
	case (arity > 0 && len(a) != arity) || (arity < 0 && len(a) < -arity):
		return fmt.Sprintf("ERR wrong number of arguments for 'cluster|%s' command", sub)
	}
	return ""
}

func cmdCluster(c *conn, _ [][]byte) { c.w.errorLine(msgClusterDisabled) }
