// Command idemgate is an idempotency gateway: one binary per node, in front
// of an upstream HTTP service, with its state replicated by Raft.
//
// This file is the CLI: it parses commands and flags and wires the packages.
package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/idemgate/idemgate/version"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: idemgate <command> [flags]

commands:
  demo      replay the double-charge incident on a 3-node cluster in this process
  bench     load a cluster (hot keys, first requests, replays, tokens, kv) beside Redis and etcd
  serve     run one node (no flags: a single-node cluster on 127.0.0.1:8080-8082)
  status    every node of a cluster file: role, term, indexes, lag, readiness, version
  members   the cluster's members, as the leader sees them
  member    add, remove or promote a member
  snapshot  save a running cluster's state to a file; restore a new cluster's nodes from one; status of one
  recover   rewrite a stopped node's membership after a quorum is lost for good (last resort)
  compact   rewrite a stopped node's fsm.db to its live data
  check-config  check a cluster file as serve would, for every node
  certs     make the cluster CA (if absent) and a certificate per node of a cluster file
  token     make an API bearer token and the config line holding its hash
  version   print version and build info

run "idemgate serve -h" for the serve flags.
`

// run executes one command and returns the process exit code: 0 success,
// 1 a runtime failure, 2 a bad command line or config.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return serveCmd(args[1:], stdout, stderr)
	case "demo":
		return demoCmd(args[1:], stdout, stderr)
	case "bench":
		return benchCmd(args[1:], stdout, stderr)
	case "snapshot":
		return snapshotCmd(args[1:], stdout, stderr)
	case "recover":
		return recoverCmd(args[1:], stdout, stderr)
	case "status":
		return statusCmd(args[1:], stdout, stderr)
	case "members":
		return membersCmd(args[1:], stdout, stderr)
	case "member":
		return memberCmd(args[1:], stdout, stderr)
	case "compact":
		return compactCmd(args[1:], stdout, stderr)
	case "check-config":
		return checkConfigCmd(args[1:], stdout, stderr)
	case "certs":
		return certsCmd(args[1:], stdout, stderr)
	case "token":
		return tokenCmd(args[1:], stdout, stderr)
	case "version", "--version", "-version":
		printVersion(stdout)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "idemgate: unknown command %q\n%s", args[0], usage)
	return 2
}

func printVersion(w io.Writer) {
	fmt.Fprintf(w, "idemgate %s (%s, %s/%s)\n", version.String(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if version.Commit != "" { // a release build: what it was stamped with
		fmt.Fprintf(w, "  commit=%s\n  date=%s\n", version.Commit, version.Date)
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" || s.Key == "vcs.time" || s.Key == "vcs.modified" {
				fmt.Fprintf(w, "  %s=%s\n", s.Key, s.Value)
			}
		}
		for _, d := range bi.Deps {
			switch d.Path {
			case "github.com/hashicorp/raft", "github.com/hashicorp/raft-boltdb/v2", "go.etcd.io/bbolt", "github.com/valyala/fasthttp":
				fmt.Fprintf(w, "  %s %s\n", d.Path, d.Version)
			}
		}
	}
}
