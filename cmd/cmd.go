package cmd

import (
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/idemgate/idemgate/version"
)

// command is one subcommand of idemgate. Each parses its command line with
// commandLine: -h prints "usage: idemgate NAME ..." and exits 0, a bad
// command line one line and 2.
type command struct {
	name, summary string
	run           func(args []string, stdout, stderr io.Writer) int
	// verbs are a group's subcommands (idemgate snapshot save), each with
	// a command line of its own.
	verbs []string
}

// commands are idemgate's subcommands, in the order usage lists them.
var commands = []command{
	{"demo", "replay the double-charge incident on a 3-node cluster in this process", demoCmd, nil},
	{"bench", "load a cluster (hot keys, first requests, replays, tokens, kv) beside Redis and etcd", benchCmd, nil},
	{"serve", "run one node (no flags: a single-node cluster on 127.0.0.1:8080-8082)", serveCmd, nil},
	{"status", "every node of a cluster file: role, term, indexes, lag, readiness, version", statusCmd, nil},
	{"members", "the cluster's members, as the leader sees them", membersCmd, nil},
	{"member", "add, remove or promote a member", memberCmd, []string{"add", "remove", "promote"}},
	{"snapshot", "save a running cluster's state to a file; restore a new cluster's nodes from one; status of one", snapshotCmd, []string{"save", "restore", "status"}},
	{"recover", "rewrite a stopped node's membership after a quorum is lost for good (last resort)", recoverCmd, nil},
	{"compact", "rewrite a stopped node's fsm.db to its live data", compactCmd, nil},
	{"log", "move a stopped node's Raft log to another log store (raft.log_store)", logCmd, []string{"migrate"}},
	{"reconcile", "hold a records export against a payment provider's statement (CSV); exit 1 on any discrepancy", reconcileCmd, nil},
	{"check-config", "check a cluster file as serve would, for every node", checkConfigCmd, nil},
	{"certs", "make the cluster CA (if absent) and a certificate per node of a cluster file", certsCmd, nil},
	{"token", "make an API bearer token and the config line holding its hash", tokenCmd, nil},
	{"version", "print version and build info", versionCmd, nil},
}

// usage is what idemgate prints without a command, or with help.
func usage() string {
	var b strings.Builder
	b.WriteString("usage: idemgate <command> [flags]\n\ncommands:\n")
	width := 0
	for _, c := range commands {
		width = max(width, len(c.name)+2)
	}
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-*s%s\n", width, c.name, c.summary)
	}
	b.WriteString("\nrun \"idemgate serve -h\" for the serve flags.\n")
	return b.String()
}

// Run executes one command line (the arguments after the program's name)
// and returns the process exit code: 0 success, 1 a runtime failure, 2 a
// bad command line or config.
func Run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return 2
	}
	switch args[0] {
	case "--version", "-version":
		return versionCmd(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage())
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "idemgate: unknown command %q\n%s", args[0], usage())
	return 2
}

// versionCmd is `idemgate version`.
func versionCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	if _, code, ok := commandLine(fs, "version", "idemgate version", "", args, stdout, stderr); !ok {
		return code
	}
	printVersion(stdout)
	return 0
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
