package cmd

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/idemgate/idemgate/bench"
)

const scaleUsage = "idemgate bench --scenario scale --keys N [--clients N] [--duration D] [--due-keys N] [--load bulk|network] [--etcd auto|off|PATH] [--dir DIR [--keep]] [--json [FILE]]"

// maxScaleKeys bounds --keys: 100 million keys of 100 bytes are tens of GB
// on each of three nodes.
const maxScaleKeys = 100_000_000

// benchScaleCmd is `idemgate bench --scenario scale`: a cluster of three
// idemgate processes grown to N keys and measured (bench.Scale). It runs on
// its own: it starts its own processes and loads the disk for minutes.
func benchScaleCmd(args []string, stdout, stderr io.Writer) int {
	var cfg bench.ScaleConfig
	var scenario string
	var jsonOpt jsonFlag
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.StringVar(&scenario, "scenario", "scale", "scale")
	fs.IntVar(&cfg.Keys, "keys", 1_000_000, "keys to load (100-byte values, each with a 24h TTL)")
	fs.IntVar(&cfg.Clients, "clients", 64, "writers in the load phases (one command in flight each)")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "each load phase")
	fs.IntVar(&cfg.DueKeys, "due-keys", 0, "keys due at once in the expiry phase (default: --keys, at most 1,000,000)")
	var load, etcd string
	fs.StringVar(&etcd, "etcd", "auto", "etcd for the size baseline (the same keys, at most 1,000,000, on leases): auto (PATH, or build bench/etcd once), off, or a path")
	fs.StringVar(&load, "load", "bulk", "how the keys get in: bulk (through the state machine in large batches, then restored on every node) or network (pipelined SETs over the Redis protocol)")
	fs.StringVar(&cfg.Dir, "dir", "", "work directory (default: a new temporary one, removed afterwards)")
	fs.BoolVar(&cfg.Keep, "keep", false, "keep the work directory (data, logs, cluster file)")
	fs.Var(&jsonOpt, "json", "bare: print the figures as JSON instead of the report; --json FILE: also write them to FILE")
	if _, code, ok := commandLine(fs, "bench", scaleUsage, "", joinJSONFile(args), stdout, stderr); !ok {
		return code
	}
	switch {
	case scenario != "scale":
		fmt.Fprintln(stderr, "idemgate bench: --scenario: scale runs alone (its own processes, minutes of disk load)")
		return 2
	case cfg.Keys < 1 || cfg.Keys > maxScaleKeys:
		fmt.Fprintf(stderr, "idemgate bench: --keys: want 1-%d\n", maxScaleKeys)
		return 2
	case loadFlagsProblem(cfg.Clients, cfg.Duration) != "":
		fmt.Fprintln(stderr, "idemgate bench: "+loadFlagsProblem(cfg.Clients, cfg.Duration))
		return 2
	case cfg.DueKeys < 0 || cfg.DueKeys > maxScaleKeys:
		fmt.Fprintf(stderr, "idemgate bench: --due-keys: want 0-%d\n", maxScaleKeys)
		return 2
	case load != "bulk" && load != "network":
		fmt.Fprintf(stderr, "idemgate bench: --load: %q: want bulk or network\n", load)
		return 2
	case cfg.Keep && cfg.Dir == "":
		fmt.Fprintln(stderr, "idemgate bench: --keep: needs --dir")
		return 2
	}
	var jsonOut *os.File
	if jsonOpt.file != "" {
		var err error
		if jsonOut, err = os.Create(jsonOpt.file); err != nil {
			fmt.Fprintf(stderr, "idemgate bench: --json: %v\n", err)
			return 2
		}
		defer jsonOut.Close()
	}
	bin, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "idemgate bench: %v\n", err)
		return 1
	}
	cfg.Bin, cfg.Progress, cfg.Network = bin, stderr, load == "network"
	var etcdSkipped string
	cfg.Etcd, etcdSkipped = bench.FindEtcd(etcd, stderr)
	res, err := bench.Scale(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "idemgate bench: %v\n", err)
		return 1
	}
	res.EtcdSkipped = etcdSkipped
	if jsonOpt.stdout {
		if err := writeScaleJSON(stdout, res); err != nil {
			fmt.Fprintf(stderr, "idemgate bench: --json: %v\n", err)
			return 1
		}
	} else {
		bench.WriteScale(stdout, res)
	}
	if jsonOut != nil {
		if err := writeScaleJSON(jsonOut, res); err != nil {
			fmt.Fprintf(stderr, "idemgate bench: --json: %v\n", err)
			return 1
		}
	}
	return 0
}

func writeScaleJSON(w io.Writer, res bench.ScaleResult) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}

// soloScenario reports whether args ask for name, a scenario with flags
// of its own (scale, failover).
func soloScenario(args []string, name string) bool {
	for i, a := range args {
		a = strings.TrimLeft(a, "-")
		if a == "scenario="+name || (a == "scenario" && i+1 < len(args) && args[i+1] == name) {
			return true
		}
	}
	return false
}
