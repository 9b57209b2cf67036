package httpx

import (
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/idemgate/idemgate/internal/testsupport"
)

// TestFasthttpLoggerHidesErrorText: fasthttp's own log lines (a connection
// error quotes the raw request) reach the node's logger with the error's
// kind in place of its text.
func TestFasthttpLoggerHidesErrorText(t *testing.T) {
	logs := &testsupport.Logs{}
	l := fasthttpLogger{logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), listener: "gateway listener"}
	parseErr := &net.ParseError{Type: "x", Text: "y"} // not an *OpError: its text goes
	l.Printf("error when serving connection %q<->%q: %v", "127.0.0.1:1", "127.0.0.1:2",
		wrapErr("error when reading request headers: invalid header value \"Bearer "+secret+"\""))
	l.Printf("Permanent error when accepting new connections: %v", &net.OpError{Op: "accept", Net: "tcp", Err: parseErr})
	l.Printf("The number of connections from %s exceeds MaxConnsPerIP=%d", "127.0.0.1", 3)
	lines, err := logs.JSON()
	if err != nil || len(lines) != 3 {
		t.Fatalf("lines %v, %v", lines, err)
	}
	for i, want := range []struct{ level, msgHas string }{
		{"DEBUG", "malformed request"},
		{"WARN", "accept tcp: invalid x: y"},
		{"WARN", "exceeds MaxConnsPerIP=3"},
	} {
		msg, _ := lines[i]["msg"].(string)
		if lines[i]["level"] != want.level || !strings.Contains(msg, want.msgHas) || lines[i]["listener"] != "gateway listener" {
			t.Errorf("line %d = %v, want %s containing %q", i, lines[i], want.level, want.msgHas)
		}
	}
	if strings.Contains(logs.String(), secret) {
		t.Errorf("the secret was logged:\n%s", logs.String())
	}
}

type textErr string

func (e textErr) Error() string { return string(e) }

func wrapErr(s string) error { return textErr(s) }

// secret is what a client's Authorization header holds: no log line may
// ever contain it.
const secret = "s3cr3t-B34R3R-t0k3n"
