package resp

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/memstore"
)

// TestListMoveHostile: LMOVE, RPOPLPUSH, LMPOP, their blocking forms,
// LPOS, LSET and LINSERT against bad, huge and reserved arguments,
// wrong kinds, a list moved onto itself and absent keys, each with its
// exact answer (numkeys Redis would overflow on is a syntax error here);
// a move, insert or set past a list's bounds is refused whole and both
// lists keep what they held; a refused blocking form blocks nothing; and
// two clients rotating one list concurrently leave it whole; INFO counts
// a blocked client.
func TestListMoveHostile(t *testing.T) {
	// A pipeline step may wait for the store a minute: the rotations'
	// 200-command runs met the 5 s default on a loaded machine under
	// -race, and this test is about whole moves, not the time limit.
	srv := startServer(t, memstore.New(t), "mem", func(c *Config) { c.OpTimeout = time.Minute })
	c := dialRaw(t, srv.Addr())
	c.nc.SetDeadline(time.Now().Add(120 * time.Second))
	const (
		tooLong     = "-ERR list too long: a list holds at most 65536 elements and 4194304 bytes\r\n"
		msgReserved = "-ERR reserved key: keys that begin with a NUL byte are idemgate's own\r\n"
		syntax      = "-ERR syntax error\r\n"
		wrongType   = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
	)
	do := func(args ...string) string {
		c.send(array(args...))
		return c.replies(1)[0]
	}
	do("RPUSH", "h:l", "a", "b", "a", "c")
	do("SET", "h:str", "v")
	manyKeys := []string{"BLMPOP", "0.01", "10000"}
	for i := range 10000 {
		manyKeys = append(manyKeys, fmt.Sprint("h:none", i))
	}
	manyKeys = append(manyKeys, "LEFT")
	for _, h := range []struct {
		args []string
		want string
	}{
		{[]string{"LMPOP", "9223372036854775807", "h:l", "LEFT"}, syntax},
		{[]string{"LMPOP", "9223372036854775806", "h:l", "LEFT"}, syntax},
		{[]string{"BLMPOP", "0", "9223372036854775807", "h:l", "LEFT"}, syntax},
		{[]string{"LMPOP", "1", "\x00idem:x", "LEFT"}, msgReserved},
		{[]string{"LMPOP", "2", "h:none", "\x00idem:x", "LEFT"}, msgReserved},
		{[]string{"LMOVE", "h:l", "\x00idem:x", "LEFT", "LEFT"}, msgReserved},
		{[]string{"LMOVE", "\x00idem:x", "h:l", "LEFT", "LEFT"}, msgReserved},
		{[]string{"RPOPLPUSH", "h:l", "\x00idem:x"}, msgReserved},
		{[]string{"BLMOVE", "h:none", "\x00idem:x", "LEFT", "LEFT", "0"}, msgReserved},
		{[]string{"BLMOVE", "\x00idem:x", "h:d", "LEFT", "LEFT", "0"}, msgReserved},
		{[]string{"BRPOPLPUSH", "h:none", "\x00idem:x", "0"}, msgReserved},
		{[]string{"BLMPOP", "0", "2", "h:none", "\x00idem:x", "LEFT"}, msgReserved},
		{[]string{"LSET", "\x00idem:x", "0", "v"}, msgReserved},
		{[]string{"LSET", "\x00idem:x", "x", "v"}, msgReserved},
		{[]string{"LINSERT", "\x00idem:x", "BEFORE", "a", "b"}, msgReserved},
		{[]string{"BLMOVE", "h:none", "h:d", "LEFT", "LEFT", "-0.002"}, "-ERR timeout is negative\r\n"},
		{[]string{"BLMOVE", "h:none", "h:d", "LEFT", "LEFT", strings.Repeat("9", 6000)}, "-ERR timeout is not a float or out of range\r\n"},
		{[]string{"BLMPOP", "1e300", "1", "h:none", "LEFT"}, "-ERR timeout is negative\r\n"},
		{[]string{"LMOVE", "h:str", "h:str", "LEFT", "LEFT"}, wrongType},
		{[]string{"LMOVE", "h:l", "h:str", "LEFT", "LEFT"}, wrongType},
		{[]string{"LMOVE", "h:none", "h:none", "LEFT", "LEFT"}, "$-1\r\n"},
		{[]string{"LPOS", "h:l", "a", "RANK", "-9223372036854775808", "COUNT", "0", "MAXLEN", "9223372036854775807"}, "*2\r\n:2\r\n:0\r\n"},
		{[]string{"LPOS", "h:l", "a", "RANK", "9223372036854775807", "COUNT", "9223372036854775807"}, "*0\r\n"},
		{[]string{"LPOS", "h:l", "a", "RANK", "-9223372036854775807"}, "$-1\r\n"},
		{[]string{"LSET", "h:l", "-9223372036854775808", "z"}, "-ERR index out of range\r\n"},
		{[]string{"LINSERT", "h:l", "AFTER", "c", ""}, ":5\r\n"},
		{[]string{"LMPOP", "1", "h:l", "RIGHT", "COUNT", "9223372036854775807"}, "*2\r\n$3\r\nh:l\r\n*5\r\n$0\r\n\r\n$1\r\nc\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\na\r\n"},
		{[]string{"EXISTS", "h:l"}, ":0\r\n"},
		{manyKeys, "*-1\r\n"},
		{append([]string{"LMPOP"}, manyKeys[2:]...), "*-1\r\n"},
	} {
		if got := do(h.args...); got != h.want {
			t.Errorf("%.80q: %q, want %q", h.args, got, h.want)
		}
	}
	if w, k := blocked(srv); w != 0 || k != 0 {
		t.Fatalf("%d clients blocked on %d keys by refused or timed-out commands", w, k)
	}

	// INFO counts a blocked client, as Redis's blocked_clients does (its
	// own tests wait on it).
	w := dialRaw(t, srv.Addr())
	w.send(array("BLMOVE", "h:wait", "h:waited", "LEFT", "LEFT", "0"))
	waitBlocked(t, srv, 1)
	if got := do("INFO", "clients"); !strings.Contains(got, "\r\nblocked_clients:1\r\n") {
		t.Fatalf("INFO clients with a client blocked: %q", got)
	}
	do("RPUSH", "h:wait", "w")
	w.expect("a push", []string{"$1\r\nw\r\n"})
	if got := do("INFO", "clients"); !strings.Contains(got, "\r\nblocked_clients:0\r\n") {
		t.Fatalf("INFO clients once it was served: %q", got)
	}

	// Bounds: a move onto a full list, an insert into one, a set or an
	// insert past the bytes' bound: refused whole, both lists as they were.
	for _, part := range [][2]int{{0, 40000}, {40000, 65536}} { // a command holds at most 65536 arguments
		full := []string{"RPUSH", "h:full"}
		for i := part[0]; i < part[1]; i++ {
			full = append(full, fmt.Sprint(i%10))
		}
		if got := do(full...); got != fmt.Sprintf(":%d\r\n", part[1]) {
			t.Fatalf("a full list: %q", got)
		}
	}
	do("RPUSH", "h:src", "s1", "s2")
	big := strings.Repeat("x", 1_000_000)
	for range 4 {
		do("RPUSH", "h:big", big)
	}
	for _, h := range []struct {
		args []string
		want string
	}{
		{[]string{"RPOPLPUSH", "h:src", "h:full"}, tooLong},
		{[]string{"LMOVE", "h:src", "h:full", "LEFT", "RIGHT"}, tooLong},
		{[]string{"LINSERT", "h:full", "BEFORE", "5", "x"}, tooLong},
		{[]string{"LSET", "h:big", "0", strings.Repeat("y", 1_300_000)}, tooLong},
		{[]string{"LINSERT", "h:big", "AFTER", big, strings.Repeat("y", 300_000)}, tooLong},
		{[]string{"LMOVE", "h:full", "h:full", "LEFT", "RIGHT"}, "$1\r\n0\r\n"}, // a full list rotates
		{[]string{"LLEN", "h:src"}, ":2\r\n"},
		{[]string{"LLEN", "h:full"}, ":65536\r\n"},
		{[]string{"LINDEX", "h:full", "-1"}, "$1\r\n0\r\n"},
		{[]string{"LLEN", "h:big"}, ":4\r\n"},
		{[]string{"LINSERT", "h:full", "BEFORE", "nope", "x"}, ":-1\r\n"},
	} {
		if got := do(h.args...); got != h.want {
			t.Errorf("%.80q: %.80q, want %q", h.args, got, h.want)
		}
	}
	// LPOS COUNT 0 over the full list: every one of 6,554 matches.
	c.send(array("LPOS", "h:full", "1", "COUNT", "0"))
	if got := c.replies(1)[0]; !strings.HasPrefix(got, "*6554\r\n:0\r\n:10\r\n") {
		t.Fatalf("LPOS COUNT 0 of a full list: %.60q", got)
	}

	// Two clients rotate one list 400 times between them, pipelined: each
	// move is whole, so 400 rotations of 10 elements leave it as it was.
	// They rotate on a store of their own: beside the megabyte elements
	// above, each commit rewrites a leaf page that holds one of them
	// (bbolt keeps at least two keys a page), 70 ms a move under -race,
	// and the 400 moves met the minute's wait in CI.
	srv = startServer(t, memstore.New(t), "mem", func(c *Config) { c.OpTimeout = time.Minute })
	c = dialRaw(t, srv.Addr())
	c.nc.SetDeadline(time.Now().Add(120 * time.Second))
	var elems []string
	for i := range 10 {
		elems = append(elems, fmt.Sprint("r", i))
	}
	do(append([]string{"RPUSH", "h:rot"}, elems...)...)
	var wg sync.WaitGroup
	errs := make(chan string, 2)
	for range 2 {
		r := dialRaw(t, srv.Addr())
		r.nc.SetDeadline(time.Now().Add(120 * time.Second))
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.send(strings.Repeat(array("LMOVE", "h:rot", "h:rot", "LEFT", "RIGHT"), 200))
			for range 200 {
				var b strings.Builder
				if err := readFrame(r.br, &b); err != nil || !strings.HasPrefix(b.String(), "$2\r\nr") {
					errs <- fmt.Sprintf("a rotation answered %q (%v)", b.String(), err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	want := "*10\r\n"
	for _, e := range elems {
		want += "$2\r\n" + e + "\r\n"
	}
	if got := do("LRANGE", "h:rot", "0", "-1"); got != want {
		t.Fatalf("after 400 rotations: %q, want %q", got, want)
	}
}
