package raftstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// jsonLines captures an adapter's output as JSON objects, one per line.
type jsonLines struct{ buf bytes.Buffer }

func (j *jsonLines) logger(level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(&j.buf, &slog.HandlerOptions{Level: level}))
}

func (j *jsonLines) take(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(j.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not a JSON line: %q: %v", line, err)
		}
		out = append(out, m)
	}
	j.buf.Reset()
	return out
}

// fakeClock is a settable clock for the adapter and its limiter.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func TestHclogLevels(t *testing.T) {
	for _, tc := range []struct {
		handler slog.Level
		floor   hclog.Level
		want    string // the levels that emit, as slog names them
		get     hclog.Level
	}{
		{slog.LevelInfo, hclog.NoLevel, "INFO WARN ERROR", hclog.Info},
		{slog.LevelDebug, hclog.NoLevel, "DEBUG INFO WARN ERROR", hclog.Debug},
		{slog.LevelDebug - 4, hclog.NoLevel, "DEBUG-4 DEBUG INFO WARN ERROR", hclog.Trace},
		{slog.LevelWarn, hclog.NoLevel, "WARN ERROR", hclog.Warn},
		{slog.LevelError, hclog.NoLevel, "ERROR", hclog.Error},
		{slog.LevelDebug, hclog.Warn, "WARN ERROR", hclog.Warn}, // SetLevel raises the bar
		{slog.LevelWarn, hclog.Debug, "WARN ERROR", hclog.Warn}, // but never lowers the handler's
		{slog.LevelDebug, hclog.Off, "", hclog.Off},
	} {
		var j jsonLines
		a := newHclog(j.logger(tc.handler), "raft", nil)
		a.SetLevel(tc.floor)
		derived := a.Named("snap").With("k", 1) // SetLevel reaches derived loggers
		var got []string
		for _, l := range []hclog.Level{hclog.Trace, hclog.Debug, hclog.Info, hclog.Warn, hclog.Error} {
			derived.Log(l, "m")
			lines := j.take(t)
			is := map[hclog.Level]bool{hclog.Trace: derived.IsTrace(), hclog.Debug: derived.IsDebug(),
				hclog.Info: derived.IsInfo(), hclog.Warn: derived.IsWarn(), hclog.Error: derived.IsError()}[l]
			if is != (len(lines) == 1) {
				t.Errorf("handler %v floor %v: Is%v() = %v, but %d lines", tc.handler, tc.floor, l, is, len(lines))
			}
			for _, m := range lines {
				got = append(got, m["level"].(string))
			}
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("handler %v floor %v: levels emitted = %q, want %q", tc.handler, tc.floor, strings.Join(got, " "), tc.want)
		}
		if g := derived.GetLevel(); g != tc.get {
			t.Errorf("handler %v floor %v: GetLevel = %v, want %v", tc.handler, tc.floor, g, tc.get)
		}
	}
	var j jsonLines
	a := newHclog(j.logger(slog.LevelInfo), "raft", nil)
	a.Log(hclog.Off, "never")
	a.Log(hclog.NoLevel, "as info")
	if lines := j.take(t); len(lines) != 1 || lines[0]["level"] != "INFO" {
		t.Errorf("Log(Off) and Log(NoLevel) = %v, want one INFO line", lines)
	}
}

func TestHclogAttrs(t *testing.T) {
	var j jsonLines
	a := newHclog(j.logger(slog.LevelDebug), "raft", nil)
	srv := raft.Server{Suffrage: raft.Voter, ID: "n2", Address: "127.0.0.1:7002"}
	a.With("term", 3).Info("entering follower state",
		"leader-id", raft.ServerID("n1"), "backoff time", 250*time.Millisecond, "error", errors.New("boom"),
		"server", srv, "node", "Node at 127.0.0.1:7001 [Follower]", "ok", true, "cmd", hclog.Fmt("%d-%s", 7, "x"), "hex", hclog.Hex(255), 42, "num-key", "dangling")
	lines := j.take(t)
	if len(lines) != 1 {
		t.Fatalf("lines = %v", lines)
	}
	want := map[string]any{
		"msg": "entering follower state", "level": "INFO", "logger": "raft", "term": 3.0, "leader-id": "n1",
		"backoff_time": float64(250 * time.Millisecond), "error": "boom",
		"server": "{Suffrage:Voter ID:n2 Address:127.0.0.1:7002}", "raft_node": "Node at 127.0.0.1:7001 [Follower]", "ok": true, "cmd": "7-x", "hex": "0xff",
		"42": "num-key", hclog.MissingKey: "dangling",
	}
	for k, v := range want {
		if fmt.Sprint(lines[0][k]) != fmt.Sprint(v) {
			t.Errorf("attr %q = %v, want %v (line %v)", k, lines[0][k], v, lines[0])
		}
	}
	if got := a.With("a", 1).With("b", 2).ImpliedArgs(); fmt.Sprint(got) != "[a 1 b 2]" {
		t.Errorf("ImpliedArgs = %v", got)
	}
	if got := a.ImpliedArgs(); len(got) != 0 {
		t.Errorf("With changed its parent: ImpliedArgs = %v", got)
	}
}

func TestHclogNames(t *testing.T) {
	var j jsonLines
	base := j.logger(slog.LevelInfo).With("node", "n1")
	a := newHclog(base, "raft", nil)
	for _, tc := range []struct {
		l    hclog.Logger
		name string
	}{
		{a, "raft"},
		{a.Named("snapshot"), "raft.snapshot"},
		{a.Named("snapshot").Named("file"), "raft.snapshot.file"},
		{a.Named("snapshot").ResetNamed("transport"), "transport"},
		{a.With("x", 1), "raft"},
	} {
		tc.l.Info("m")
		lines := j.take(t)
		if tc.l.Name() != tc.name || len(lines) != 1 || lines[0]["logger"] != tc.name || lines[0]["node"] != "n1" {
			t.Errorf("Name() = %q, lines %v; want logger %q and node n1", tc.l.Name(), lines, tc.name)
		}
	}
	// A logger without a name adds no logger attribute.
	newHclog(base, "", nil).Info("m")
	if lines := j.take(t); len(lines) != 1 || lines[0]["logger"] != nil {
		t.Errorf("unnamed: %v", lines)
	}
}

func TestHclogStandardLogger(t *testing.T) {
	var j jsonLines
	a := newHclog(j.logger(slog.LevelDebug), "raft", nil)
	for _, tc := range []struct {
		opts      *hclog.StandardLoggerOptions
		line      string
		level     string
		msg       string
		wantLines int
	}{
		{nil, "[WARN] left as it is\n", "INFO", "[WARN] left as it is", 1},
		{&hclog.StandardLoggerOptions{InferLevels: true}, "[WARN] disk slow\n", "WARN", "disk slow", 1},
		{&hclog.StandardLoggerOptions{InferLevels: true}, "[ERR] failed", "ERROR", "failed", 1},
		{&hclog.StandardLoggerOptions{InferLevels: true}, "[TRACE] hidden", "", "", 0},
		{&hclog.StandardLoggerOptions{InferLevels: true}, "no prefix", "INFO", "no prefix", 1},
		{&hclog.StandardLoggerOptions{ForceLevel: hclog.Error}, "[INFO] forced", "ERROR", "forced", 1},
	} {
		a.StandardLogger(tc.opts).Print(tc.line)
		lines := j.take(t)
		if len(lines) != tc.wantLines {
			t.Errorf("%q: %d lines, want %d", tc.line, len(lines), tc.wantLines)
			continue
		}
		if tc.wantLines == 1 && (lines[0]["level"] != tc.level || lines[0]["msg"] != tc.msg) {
			t.Errorf("%q: level %v msg %q, want %s %q", tc.line, lines[0]["level"], lines[0]["msg"], tc.level, tc.msg)
		}
	}
}

// TestHclogPeerRepeats: a down peer's error, repeated every heartbeat, is
// logged once, then once per window with the count held back; other
// messages and other peers are not held back.
func TestHclogPeerRepeats(t *testing.T) {
	var j jsonLines
	clock := &fakeClock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	a := newHclog(j.logger(slog.LevelInfo), "raft", clock.now)
	n2 := raft.Server{Suffrage: raft.Voter, ID: "n2", Address: "127.0.0.1:7002"}
	n3 := raft.Server{Suffrage: raft.Voter, ID: "n3", Address: "127.0.0.1:7003"}
	dialErr := errors.New("dial tcp 127.0.0.1:7002: connect: connection refused")

	type logged struct {
		msg, peer string
		repeated  float64
	}
	var got []logged
	collect := func() {
		for _, m := range j.take(t) {
			r, _ := m["repeated"].(float64)
			p, _ := m["peer"].(string)
			if p == "" {
				p, _ = m["server-id"].(string)
			}
			got = append(got, logged{m["msg"].(string), p, r})
		}
	}
	// 65 s of a down n2: every 0.5 s a heartbeat error and an
	// appendEntries error for it, and a lease warning; n3 fails once.
	for i := 0; i < 130; i++ {
		a.Error("failed to heartbeat to", "peer", n2.Address, "backoff time", 10*time.Millisecond, "error", dialErr)
		a.Error("failed to appendEntries to", "peer", n2, "error", dialErr)
		a.Warn("failed to contact", "server-id", n2.ID, "time", time.Duration(i)*500*time.Millisecond)
		if i == 7 {
			a.Error("failed to appendEntries to", "peer", n3, "error", dialErr)
			a.Info("pipelining replication", "peer", n2) // info: never held back
			a.Info("pipelining replication", "peer", n2)
		}
		clock.advance(500 * time.Millisecond)
	}
	collect()
	want := []logged{
		{"failed to heartbeat to", "127.0.0.1:7002", 0},
		{"failed to appendEntries to", fmt.Sprintf("%+v", n2), 0},
		{"failed to contact", "n2", 0},
		{"failed to appendEntries to", fmt.Sprintf("%+v", n3), 0},
		{"pipelining replication", fmt.Sprintf("%+v", n2), 0},
		{"pipelining replication", fmt.Sprintf("%+v", n2), 0},
		// at 30 s: 59 held back since the first (0.5 s .. 29.5 s)
		{"failed to heartbeat to", "127.0.0.1:7002", 59},
		{"failed to appendEntries to", fmt.Sprintf("%+v", n2), 59},
		{"failed to contact", "n2", 59},
		// at 60 s: 59 more
		{"failed to heartbeat to", "127.0.0.1:7002", 59},
		{"failed to appendEntries to", fmt.Sprintf("%+v", n2), 59},
		{"failed to contact", "n2", 59},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("logged:\n%v\nwant:\n%v", got, want)
	}
	// n2 comes back; a minute later it fails again: logged at once,
	// with what was held back at the end of the last outage (4.5 s).
	got = nil
	clock.advance(time.Minute)
	a.Error("failed to heartbeat to", "peer", n2.Address, "error", dialErr)
	collect()
	if fmt.Sprint(got) != fmt.Sprint([]logged{{"failed to heartbeat to", "127.0.0.1:7002", 9}}) {
		t.Fatalf("after recovery: %v", got)
	}
}

func TestRepeatLimiterBounded(t *testing.T) {
	l := newRepeatLimiter(30*time.Second, 3)
	t0 := time.Unix(0, 0)
	for i, tc := range []struct {
		key  string
		at   time.Duration
		ok   bool
		held int
	}{
		{"a", 0, true, 0},
		{"b", 0, true, 0},
		{"c", 0, true, 0},
		{"a", time.Second, false, 0},
		{"d", time.Second, true, 0},      // full, nothing old enough to forget: untracked
		{"d", 2 * time.Second, true, 0},  // ... so never held back
		{"e", 31 * time.Second, true, 0}, // a, b, c forgotten; e tracked
		{"e", 32 * time.Second, false, 0},
		{"a", 33 * time.Second, true, 0}, // forgotten: logged, its count lost
	} {
		ok, held := l.allow(tc.key, t0.Add(tc.at))
		if ok != tc.ok || held != tc.held {
			t.Errorf("step %d: allow(%q, %v) = %v, %d; want %v, %d", i, tc.key, tc.at, ok, held, tc.ok, tc.held)
		}
		if len(l.seen) > 3 {
			t.Fatalf("step %d: %d keys tracked, bound 3", i, len(l.seen))
		}
	}
}
