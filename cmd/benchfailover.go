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
	"github.com/idemgate/idemgate/raftstore"
)

const failoverUsage = "idemgate bench --scenario failover [--profiles LIST] [--kills N] [--load D] [--clients N] [--dir DIR [--keep]] [--json [FILE]]"

// failoverProfiles are the timing profiles --profiles names: the
// cluster file's raft.timing values, default and lan.
// NAME=HEARTBEAT/ELECTION adds one.
func failoverProfiles() map[string]bench.FailoverProfile {
	d := raftstore.DefaultConfig()
	return map[string]bench.FailoverProfile{
		"default": {Name: "default", Heartbeat: d.HeartbeatTimeout, Election: d.ElectionTimeout},
		"lan":     {Name: "lan", Heartbeat: raftstore.LANHeartbeatTimeout, Election: raftstore.LANElectionTimeout},
	}
}

// parseFailoverProfiles reads --profiles: names of failoverProfiles, or
// NAME=HEARTBEAT/ELECTION.
func parseFailoverProfiles(s string) ([]bench.FailoverProfile, error) {
	known := failoverProfiles()
	var out []bench.FailoverProfile
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		name, timings, custom := strings.Cut(part, "=")
		p, ok := known[name]
		switch {
		case custom:
			hb, el, found := strings.Cut(timings, "/")
			h, err1 := time.ParseDuration(hb)
			e, err2 := time.ParseDuration(el)
			if !found || err1 != nil || err2 != nil || name == "" {
				return nil, fmt.Errorf("%q: want NAME=HEARTBEAT/ELECTION, such as fast=300ms/300ms", part)
			}
			if h < 10*time.Millisecond || e < 10*time.Millisecond || h > time.Minute || e > time.Minute {
				return nil, fmt.Errorf("%q: timeouts from 10ms to 1m", part)
			}
			p = bench.FailoverProfile{Name: name, Heartbeat: h, Election: e}
		case !ok:
			return nil, fmt.Errorf("%q: want default, lan or NAME=HEARTBEAT/ELECTION", part)
		}
		if seen[p.Name] {
			return nil, fmt.Errorf("%q named twice", p.Name)
		}
		seen[p.Name] = true
		out = append(out, p)
	}
	return out, nil
}

// benchFailoverCmd is `idemgate bench --scenario failover`: three idemgate
// processes per timing profile, a load phase counting elections, then the
// leader SIGKILLed --kills times (bench.Failover). It runs on its own: it
// starts its own processes.
func benchFailoverCmd(args []string, stdout, stderr io.Writer) int {
	var cfg bench.FailoverConfig
	var scenario, profiles string
	var jsonOpt jsonFlag
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.StringVar(&scenario, "scenario", "failover", "failover")
	fs.StringVar(&profiles, "profiles", "default,lan", "Raft timing profiles, comma-separated: default, lan, or NAME=HEARTBEAT/ELECTION (the leader lease is half the heartbeat)")
	fs.IntVar(&cfg.Kills, "kills", 10, "leader kills per profile")
	fs.DurationVar(&cfg.Load, "load", 0, "a load phase before the kills, its elections counted (0: none)")
	fs.IntVar(&cfg.Clients, "clients", 64, "writers of the load phase (one command in flight each)")
	fs.StringVar(&cfg.Dir, "dir", "", "work directory (default: a new temporary one, removed afterwards)")
	fs.BoolVar(&cfg.Keep, "keep", false, "keep the work directory (data, logs, cluster files)")
	fs.Var(&jsonOpt, "json", "bare: print the figures as JSON instead of the report; --json FILE: also write them to FILE")
	if _, code, ok := commandLine(fs, "bench", failoverUsage, "", joinJSONFile(args), stdout, stderr); !ok {
		return code
	}
	var err error
	switch {
	case scenario != "failover":
		fmt.Fprintln(stderr, "idemgate bench: --scenario: failover runs alone (its own processes)")
		return 2
	case cfg.Kills < 1 || cfg.Kills > 1000:
		fmt.Fprintln(stderr, "idemgate bench: --kills: want 1-1000")
		return 2
	case cfg.Load < 0 || cfg.Load > time.Hour:
		fmt.Fprintln(stderr, "idemgate bench: --load: want 0 to 1h")
		return 2
	case cfg.Clients < 1 || cfg.Clients > 10_000:
		fmt.Fprintln(stderr, "idemgate bench: --clients: want 1-10000")
		return 2
	case cfg.Keep && cfg.Dir == "":
		fmt.Fprintln(stderr, "idemgate bench: --keep: needs --dir")
		return 2
	}
	if cfg.Profiles, err = parseFailoverProfiles(profiles); err != nil {
		fmt.Fprintf(stderr, "idemgate bench: --profiles: %v\n", err)
		return 2
	}
	var jsonOut *os.File
	if jsonOpt.file != "" {
		if jsonOut, err = os.Create(jsonOpt.file); err != nil {
			fmt.Fprintf(stderr, "idemgate bench: --json: %v\n", err)
			return 2
		}
		defer jsonOut.Close()
	}
	if cfg.Bin, err = os.Executable(); err != nil {
		fmt.Fprintf(stderr, "idemgate bench: %v\n", err)
		return 1
	}
	cfg.Progress = stderr
	res, err := bench.Failover(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "idemgate bench: %v\n", err)
		return 1
	}
	write := func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	if jsonOpt.stdout {
		err = write(stdout)
	} else {
		bench.WriteFailover(stdout, res)
	}
	if err == nil && jsonOut != nil {
		err = write(jsonOut)
	}
	if err != nil {
		fmt.Fprintf(stderr, "idemgate bench: --json: %v\n", err)
		return 1
	}
	return 0
}
