package cmd

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// commandLine parses a subcommand's flags and its one positional argument
// (arg names it: "FILE", "ID"; "" for none), which may come before, after
// or among the flags (the flag package stops at the first argument). ok
// false means it has answered: -h prints the usage and the flags (code 0),
// a bad command line one line naming what is wrong (code 2).
func commandLine(fs *flag.FlagSet, name, usage, arg string, args []string, stdout, stderr io.Writer) (value string, code int, ok bool) {
	fs.SetOutput(io.Discard) // errors are reported in one line
	value, err := parseArgs(fs, arg, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(stdout, "usage: "+usage)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return "", 0, false
	}
	if err != nil {
		fmt.Fprintf(stderr, "idemgate %s: %v (usage: %s)\n", name, err, usage)
		return "", 2, false
	}
	return value, 0, true
}

func parseArgs(fs *flag.FlagSet, arg string, args []string) (string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return "", err
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	switch {
	case arg == "" && len(pos) > 0:
		return "", fmt.Errorf("unexpected argument %q", pos[0])
	case arg == "":
		return "", nil
	case len(pos) == 0:
		return "", fmt.Errorf("%s: required", arg)
	case len(pos) > 1:
		return "", fmt.Errorf("unexpected argument %q (one %s only)", pos[1], arg)
	}
	return pos[0], nil
}
