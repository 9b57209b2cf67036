package cmd

import (
	"bytes"
	"strings"
	"testing"
)

// TestServeLogFlagsRefused: a bad --log-level or --log-format exits 2 with
// one line naming the flag.
func TestServeLogFlagsRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--log-level", "loud"}, `--log-level: "loud": want debug, info, warn or error`},
		{[]string{"--log-level", "info+2"}, `--log-level: "info+2"`},
		{[]string{"--log-level", ""}, `--log-level: ""`},
		{[]string{"--log-format", "xml"}, `--log-format: "xml": want text or json`},
		{[]string{"--log-format", "JSON "}, `--log-format: "JSON "`},
		{[]string{"--log-level", "warn", "--log-format", "logfmt"}, `--log-format: "logfmt"`},
	} {
		var stdout, stderr bytes.Buffer
		code := serveCmd(tc.args, &stdout, &stderr)
		lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
		if code != 2 || len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
			t.Errorf("serve %v = exit %d, stderr %q; want exit 2 and one line with %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}
