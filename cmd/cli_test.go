package cmd

import (
	"bytes"
	"strings"
	"testing"
)

// leaves are every command line idemgate parses: each command of the
// table, and each verb of a group (snapshot save, member add) in its place.
func leaves() []string {
	var out []string
	for _, c := range commands {
		if len(c.verbs) == 0 {
			out = append(out, c.name)
		}
		for _, v := range c.verbs {
			out = append(out, c.name+" "+v)
		}
	}
	return out
}

func runArgs(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = Run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestEveryCommandLine runs every command of main.go's table, and every
// verb of a group, with -h and with an unknown flag: -h prints the usage
// (its first line "usage: idemgate NAME ...") on stdout and exits 0; the
// unknown flag exits 2 with one line on stderr naming the command, the
// flag and the usage, and nothing on stdout. A command added to the table
// that parses its flags its own way fails here.
func TestEveryCommandLine(t *testing.T) {
	names := leaves()
	if len(names) < 17 {
		t.Fatalf("only %d command lines in the table: %v", len(names), names)
	}
	for _, name := range names {
		words := strings.Fields(name)
		for _, h := range []string{"-h", "--help"} {
			code, out, errOut := runArgs(append(words, h)...)
			first, _, _ := strings.Cut(out, "\n")
			if code != 0 || errOut != "" || (first != "usage: idemgate "+name && !strings.HasPrefix(first, "usage: idemgate "+name+" ")) {
				t.Errorf("%s %s = exit %d, first line %q, stderr %q; want 0 and \"usage: idemgate %s ...\"", name, h, code, first, errOut, name)
			}
		}
		for _, bad := range []string{"--no-such-flag", "-no-such-flag=1", "--" + strings.Repeat("x", 1<<16)} {
			code, out, errOut := runArgs(append(words, bad)...)
			lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
			if code != 2 || out != "" || len(lines) != 1 || !strings.HasPrefix(lines[0], "idemgate "+name+": flag provided but not defined: ") ||
				!strings.Contains(lines[0], "(usage: idemgate "+name) {
				t.Errorf("%s %.40s = exit %d, stdout %q, stderr %.300q; want 2 and one line naming the flag and the usage", name, bad, code, out, errOut)
			}
		}
	}
	// A group answers -h with its verbs, and an unknown verb with 2.
	for _, c := range commands {
		if len(c.verbs) == 0 {
			continue
		}
		code, out, _ := runArgs(c.name, "-h")
		for _, v := range c.verbs {
			if code != 0 || !strings.HasPrefix(out, "usage:") || !strings.Contains(out, "idemgate "+c.name+" ") || !strings.Contains(out, v) {
				t.Errorf("%s -h = exit %d, %q; want 0 and the verb %s", c.name, code, out, v)
			}
		}
		for _, bad := range [][]string{{c.name}, {c.name, "--no-such-flag"}, {c.name, "frobnicate"}} {
			if code, out, errOut := runArgs(bad...); code != 2 || out != "" || errOut == "" {
				t.Errorf("%v = exit %d, stdout %q, stderr %q; want 2 and the usage on stderr", bad, code, out, errOut)
			}
		}
	}
}

// TestCommandLineArguments: positional arguments where a command takes
// none, or too many, or a flag without its value, exit 2 with one line
// naming what is wrong, before the command does anything.
func TestCommandLineArguments(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "extra"}, `idemgate serve: unexpected argument "extra"`},
		{[]string{"serve", "--log-level", "warn", "extra", "--listen", "127.0.0.1:1"}, `idemgate serve: unexpected argument "extra"`},
		{[]string{"serve", "--config"}, "idemgate serve: flag needs an argument: -config"},
		{[]string{"serve", "--bootstrap", "--join"}, "idemgate serve: --bootstrap and --join"},
		{[]string{"serve", "--bootstrap=maybe"}, `idemgate serve: invalid boolean value "maybe" for -bootstrap`},
		{[]string{"certs", "cluster.yaml"}, `idemgate certs: unexpected argument "cluster.yaml"`},
		{[]string{"certs"}, "idemgate certs: --config: required"},
		{[]string{"token", "--role", "app", "extra"}, `idemgate token: unexpected argument "extra"`},
		{[]string{"token", "--role", "root"}, `idemgate token: --role: "root"`},
		{[]string{"demo", "--users", "many"}, `idemgate demo: invalid value "many" for flag -users`},
		{[]string{"demo", "extra"}, `idemgate demo: unexpected argument "extra"`},
		{[]string{"bench", "--clients", "1", "extra"}, `idemgate bench: unexpected argument "extra"`},
		{[]string{"bench", "--scenario", "scale", "--keys", "x"}, `idemgate bench: invalid value "x" for flag -keys`},
		{[]string{"version", "extra"}, `idemgate version: unexpected argument "extra"`},
		{[]string{"check-config"}, "idemgate check-config: FILE: required"},
		{[]string{"check-config", "a.yaml", "b.yaml"}, `idemgate check-config: unexpected argument "b.yaml" (one FILE only)`},
		{[]string{"snapshot", "status"}, "idemgate snapshot status: FILE: required"},
		{[]string{"nope"}, `idemgate: unknown command "nope"`},
	} {
		code, out, errOut := runArgs(tc.args...)
		first, _, _ := strings.Cut(errOut, "\n")
		if code != 2 || out != "" || !strings.HasPrefix(first, tc.want) {
			t.Errorf("%q = exit %d, stdout %q, stderr %q; want 2 and %q", tc.args, code, out, errOut, tc.want)
		}
		if tc.args[0] != "nope" && strings.Count(errOut, "\n") != 1 {
			t.Errorf("%q: stderr %q, want one line", tc.args, errOut)
		}
	}
	// -h anywhere on the line answers the usage, even after an argument.
	if code, out, _ := runArgs("check-config", "cluster.yaml", "-h"); code != 0 || !strings.HasPrefix(out, "usage: idemgate check-config FILE\n") {
		t.Errorf("check-config FILE -h = exit %d, %q", code, out)
	}
	// The top level's usage lists every command of the table once.
	_, out, _ := runArgs("help")
	for _, c := range commands {
		if strings.Count(out, "\n  "+c.name+" ") != 1 {
			t.Errorf("usage lists %q %d times:\n%s", c.name, strings.Count(out, "\n  "+c.name+" "), out)
		}
	}
}
