package resp

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/memstore"
)

// TestCollHostile: the bounds of hashes and sets, each answered exactly:
// a field or member past its bound, a command of too many, a count with
// repeats past the reply's bound, a collection grown to its bound of
// elements (the write past it refused whole), scanned whole by HSCAN's
// cursor, popped and deleted; racing writers lose nothing.
func TestCollHostile(t *testing.T) {
	srv := startServer(t, memstore.New(t), "mem", func(c *Config) { c.MaxArgs = 1 << 18 }) // past a command's elements
	long := strings.Repeat("f", command.MaxFieldLen+1)
	tooLongField := "-ERR hash field or set member too long: at most 8192 bytes\r\n"
	tooMany := fmt.Sprintf("-ERR too many fields or members in one command: at most %d\r\n", command.MaxCmdElems/2)
	tooManySet := fmt.Sprintf("-ERR too many fields or members in one command: at most %d\r\n", command.MaxCmdElems)
	tests := []struct {
		name    string
		send    [][]string
		replies []string
	}{
		{"a field past its bound", [][]string{{"HSET", "ch:h", long, "v"}, {"HSET", "ch:h", "f", "v", long, "v"}, {"HGET", "ch:h", long},
			{"HINCRBY", "ch:h", long, "1"}, {"SADD", "ch:s", "a", long}, {"SISMEMBER", "ch:s", long}, {"SMOVE", "ch:s", "ch:t", long},
			{"EXISTS", "ch:h", "ch:s"}, {"HSET", "ch:h", strings.Repeat("f", command.MaxFieldLen), strings.Repeat("v", 64<<10)}, {"HLEN", "ch:h"}},
			[]string{tooLongField, tooLongField, tooLongField, tooLongField, tooLongField, tooLongField, tooLongField, ":0\r\n", ":1\r\n", ":1\r\n"}},
		{"a command of too many", [][]string{append([]string{"HSET", "ch:m"}, manyArgs(command.MaxCmdElems/2+1, 2)...),
			append([]string{"SADD", "ch:m"}, manyArgs(command.MaxCmdElems+1, 1)...), {"EXISTS", "ch:m"}},
			[]string{tooMany, tooManySet, ":0\r\n"}},
		{"a count with repeats past the bound", [][]string{{"SADD", "ch:r", "a"}, {"SRANDMEMBER", "ch:r", "-2000000"},
			{"HRANDFIELD", "ch:r", "-2000000"}, {"SRANDMEMBER", "ch:r", "-3"}},
			[]string{":1\r\n", "-ERR a count with repeats is at most 1048576 here\r\n", "-ERR a count with repeats is at most 1048576 here\r\n",
				"*3\r\n$1\r\na\r\n$1\r\na\r\n$1\r\na\r\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { askEach(t, srv.Addr(), tt.send, tt.replies) })
	}

	t.Run("a set grown to its bound", func(t *testing.T) {
		if raceDetector {
			t.Skip("a million members under the race detector outlast the timeouts; run without -race")
		}
		c := dialRaw(t, srv.Addr())
		c.nc.SetDeadline(time.Now().Add(10 * time.Minute))
		const chunk = 1 << 15
		for i := 0; i < command.MaxCollElems; i += chunk {
			args := []string{"SADD", "ch:big"}
			for j := i; j < i+chunk; j++ {
				args = append(args, strconv.Itoa(j))
			}
			c.send(array(args...))
			if r := c.replies(1)[0]; r != ":"+strconv.Itoa(chunk)+"\r\n" {
				t.Fatalf("SADD of %d from %d: %q", chunk, i, r)
			}
		}
		tooLarge := "-ERR hash or set too large: one holds at most 1048576 elements and 67108864 bytes of fields and values\r\n"
		for _, step := range []struct {
			args []string
			want string
		}{
			{[]string{"SADD", "ch:big", "one more", "0"}, tooLarge},
			{[]string{"SCARD", "ch:big"}, ":1048576\r\n"},
			{[]string{"SISMEMBER", "ch:big", "1048575"}, ":1\r\n"},
			{[]string{"SADD", "ch:big", "0", "1"}, ":0\r\n"},
			{[]string{"OBJECT", "ENCODING", "ch:big"}, "$9\r\nhashtable\r\n"},
			{[]string{"SUNIONSTORE", "ch:big2", "ch:big", "ch:r"}, tooLarge},
		} {
			c.send(array(step.args...))
			if r := c.replies(1)[0]; r != step.want {
				t.Fatalf("%q = %q, want %q", step.args, r, step.want)
			}
		}
		// SSCAN's cursor walks it whole: every member at least once.
		seen := make(map[string]bool, command.MaxCollElems)
		cursor, calls := "0", 0
		for {
			c.send(array("SSCAN", "ch:big", cursor, "COUNT", "50000"))
			node, _ := parseResp(t, c.replies(1)[0])
			if len(node.items) != 2 {
				t.Fatalf("SSCAN: %v", node)
			}
			for _, m := range node.items[1].items {
				seen[m.s] = true
			}
			cursor, calls = node.items[0].s, calls+1
			if cursor == "0" || calls > 100 {
				break
			}
		}
		if len(seen) != command.MaxCollElems || cursor != "0" {
			t.Fatalf("SSCAN saw %d members in %d calls, cursor %s", len(seen), calls, cursor)
		}
		c.send(array("SPOP", "ch:big", "1000"))
		if node, _ := parseResp(t, c.replies(1)[0]); len(node.items) != 1000 {
			t.Fatalf("SPOP 1000 popped %d", len(node.items))
		}
		c.send(array("SCARD", "ch:big") + array("DEL", "ch:big") + array("EXISTS", "ch:big"))
		if got := c.replies(3); strings.Join(got, "") != ":1047576\r\n:1\r\n:0\r\n" {
			t.Fatalf("SCARD, DEL, EXISTS: %q", got)
		}
	})

	t.Run("racing writers lose nothing", func(t *testing.T) {
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := dialRaw(t, srv.Addr())
				for i := range 200 {
					c.send(array("SADD", "ch:race", fmt.Sprintf("w%d-%d", w, i)) + array("HINCRBY", "ch:count", "n", "1"))
					c.replies(2)
				}
			}()
		}
		wg.Wait()
		if got := ask(t, srv.Addr(), array("SCARD", "ch:race")); got != ":1600\r\n" {
			t.Fatalf("SCARD after racing SADDs: %q", got)
		}
		if got := ask(t, srv.Addr(), array("HGET", "ch:count", "n")); got != "$4\r\n1600\r\n" {
			t.Fatalf("HGET after racing HINCRBYs: %q", got)
		}
	})
}

// manyArgs is n elements, each of step arguments.
func manyArgs(n, step int) []string {
	out := make([]string, 0, n*step)
	for i := range n {
		for range step {
			out = append(out, strconv.Itoa(i))
		}
	}
	return out
}
