package cmd

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/idemgate/idemgate/backup"
	"github.com/idemgate/idemgate/datadir"
)

const logUsage = "usage: idemgate log migrate --to boltdb|wal --config FILE --node ID [--data-dir DIR]\n"

// logCmd is `idemgate log migrate`: a stopped node's Raft log moved from
// one log store to the other (backup.MigrateLog).
func logCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintf(stderr, "idemgate log: want migrate\n%s", logUsage)
		return 2
	}
	switch args[0] {
	case "migrate":
		return logMigrateCmd(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, logUsage)
		return 0
	}
	fmt.Fprintf(stderr, "idemgate log: unknown subcommand %q: want migrate\n%s", args[0], logUsage)
	return 2
}

func logMigrateCmd(args []string, stdout, stderr io.Writer) int {
	const usage = "idemgate log migrate --to boltdb|wal --config FILE --node ID [--data-dir DIR]"
	var n nodeFlags
	fs := flag.NewFlagSet("log migrate", flag.ContinueOnError)
	n.register(fs)
	to := fs.String("to", "", "the log store to move the log into: "+strings.Join(datadir.LogStores, " or ")+" (required; then set raft.log_store to it)")
	if _, code, ok := commandLine(fs, "log migrate", usage, "", args, stdout, stderr); !ok {
		return code
	}
	cfg, err := n.store()
	if err == nil && !slices.Contains(datadir.LogStores, *to) {
		err = fmt.Errorf("--to: %q: want %s", *to, strings.Join(datadir.LogStores, " or "))
	}
	if err != nil {
		fmt.Fprintf(stderr, "idemgate log migrate: %v\n", err)
		return 2
	}
	start := time.Now()
	info, err := backup.MigrateLog(cfg.Offline(), *to)
	if err != nil {
		fmt.Fprintf(stderr, "idemgate log migrate: %s\n", offlineError(err))
		return 1
	}
	setting := ""
	if cfg.LogStore != "" && cfg.LogStore != info.To {
		setting = fmt.Sprintf("; set raft.log_store: %s in %s before the node starts", info.To, n.configPath)
	}
	switch {
	case info.Finished:
		fmt.Fprintf(stdout, "finished the migration of %s's log to %s (entries %d-%d); removed the %s copy%s\n",
			cfg.NodeID, info.To, info.First, info.Last, info.From, setting)
	case info.From == info.To:
		fmt.Fprintf(stdout, "%s's log is already in %s (entries %d-%d): nothing to do%s\n", cfg.NodeID, info.To, info.First, info.Last, setting)
	default:
		dropped := ""
		if info.Dropped > 0 {
			dropped = fmt.Sprintf(" (%d entries below a gap, all under the newest snapshot, left behind)", info.Dropped)
		}
		fmt.Fprintf(stdout, "migrated %s's log from %s to %s: entries %d-%d, term and vote, checked%s, in %s%s\n",
			cfg.NodeID, info.From, info.To, info.First, info.Last, dropped, time.Since(start).Round(time.Millisecond), setting)
	}
	return 0
}
