package cmd

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/idemgate/idemgate/backup"
	"github.com/idemgate/idemgate/raftstore"
)

// recoverCmd is `idemgate recover`: the last resort when a quorum is lost
// for good (hashicorp/raft's RecoverCluster, as `consul operator raft` /
// peers.json recovery).
func recoverCmd(args []string, stdout, stderr io.Writer) int {
	const usage = "idemgate recover --config FILE --node ID --voters ID,ID... [--data-dir DIR]"
	var n nodeFlags
	fs := flag.NewFlagSet("recover", flag.ContinueOnError)
	n.register(fs)
	votersFlag := fs.String("voters", "", "the surviving nodes that form the recovered cluster, comma-separated ids of the cluster file (required; this node among them)")
	if _, code, ok := commandLine(fs, "recover", usage, "", args, stdout, stderr); !ok {
		return code
	}
	cfg, err := n.store()
	if err == nil {
		cfg.Peers, err = recoverVoters(*votersFlag, cfg)
	}
	if err != nil {
		fmt.Fprintf(stderr, "idemgate recover: %v\n", err)
		return 2
	}
	ids := make([]string, len(cfg.Peers))
	for i, p := range cfg.Peers {
		ids[i] = p.ID
	}
	info, err := backup.Recover(cfg.Offline(), raftstore.Voters(cfg.Peers))
	if err != nil {
		fmt.Fprintf(stderr, "idemgate recover: %s\n", offlineError(err))
		return 1
	}
	fmt.Fprintf(stderr, "idemgate recover: LAST RESORT done: node %s's cluster is now %s; writes held only by the other nodes are lost for good, "+
		"and a lost node that comes back must have its data dir wiped and be added anew. Run this on every node of --voters, each stopped, with the same --voters.\n",
		cfg.NodeID, strings.Join(ids, ", "))
	fmt.Fprintf(stdout, "recovered %s: a cluster of %s from index %d; start it: idemgate serve --config %s --node %s\n",
		cfg.NodeID, strings.Join(ids, ", "), info.Applied, n.configPath, cfg.NodeID)
	return 0
}

// recoverVoters turns --voters into the recovered cluster's members, with
// their addresses from the cluster file; an error names the flag.
func recoverVoters(raw string, cfg raftstore.Config) ([]raftstore.Peer, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, errors.New("--voters: required: the ids of the surviving nodes, this one among them (e.g. --voters n1,n2)")
	}
	var out []raftstore.Peer
	var ids []string
	for _, id := range strings.Split(raw, ",") {
		id = strings.TrimSpace(id)
		i := slices.IndexFunc(cfg.Peers, func(p raftstore.Peer) bool { return p.ID == id })
		switch {
		case id == "":
			return nil, fmt.Errorf("--voters: %q: an empty id", raw)
		case i < 0:
			var known []string
			for _, p := range cfg.Peers {
				known = append(known, p.ID)
			}
			return nil, fmt.Errorf("--voters: %q is not a node of the cluster file (nodes: %s)", id, strings.Join(known, ", "))
		case slices.Contains(ids, id):
			return nil, fmt.Errorf("--voters: %q is named twice", id)
		}
		ids = append(ids, id)
		out = append(out, cfg.Peers[i])
	}
	if !slices.Contains(ids, cfg.NodeID) {
		return nil, fmt.Errorf("--voters: %s does not include --node %s: run recover on each surviving node, every one of them named in --voters", raw, cfg.NodeID)
	}
	return out, nil
}
