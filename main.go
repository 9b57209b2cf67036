// Command idemgate is an idempotency gateway: one binary per node, in front
// of an upstream HTTP service, with its state replicated by Raft.
//
// The subcommands, their flags and their wiring are package cmd's; this
// file only runs the command line it was given.
package main

import (
	"os"

	"github.com/idemgate/idemgate/cmd"
)

func main() {
	os.Exit(cmd.Run(os.Args[1:], os.Stdout, os.Stderr))
}
