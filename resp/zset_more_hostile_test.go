package resp

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/memstore"
)

// TestZSetMoreHostile: the pops of several keys and the algebra's bad,
// huge and concurrent inputs, each answered exactly: numkeys, COUNT,
// LIMIT and timeouts at the integers' ends, a key past its bound among
// the further keys, 10^4 keys in one command, 4*10^4 members combined and 6*10^4
// popped whole, infinite weights, racing ZMPOPs that pop each member
// once, and blocked clients that leave without popping.
func TestZSetMoreHostile(t *testing.T) {
	srv := startServer(t, memstore.New(t), "mem", func(c *Config) { c.MaxArgs = 1 << 18 })
	syntax := "-ERR syntax error\r\n"
	numKeys, countZero := "-ERR numkeys should be greater than 0\r\n", "-ERR count should be greater than 0\r\n"
	longKey := strings.Repeat("k", 1025)
	// A key past the store's bound is refused whole, as every command's
	// is: the store's words.
	further := "-ERR malformed command: zset_rem_range: a further key is empty or too long\r\n"
	furtherRead := "-ERR malformed command: kv_tx: command 0: malformed command: coll_read: a further key is empty or too long\r\n"
	manyKeys := func(cmd ...string) []string {
		out := slices.Clone(cmd)
		for i := range 10000 {
			out = append(out, fmt.Sprintf("zmh:none%d", i))
		}
		return out
	}
	tests := []struct {
		name    string
		send    [][]string
		replies []string
	}{
		{"integers' ends", [][]string{{"ZADD", "zmh:a", "1", "x", "2", "y"},
			{"ZMPOP", "9223372036854775807", "zmh:a", "MIN"}, {"ZMPOP", "9223372036854775808", "zmh:a", "MIN"},
			{"ZMPOP", "-9223372036854775808", "zmh:a", "MIN"}, {"ZUNION", "9223372036854775807", "zmh:a"},
			{"ZUNION", "-9223372036854775808", "zmh:a"}, {"ZINTERCARD", "1", "zmh:a", "LIMIT", "9223372036854775807"},
			{"ZINTERCARD", "1", "zmh:a", "LIMIT", "9223372036854775808"}, {"BZPOPMIN", "zmh:a", "1e20"},
			{"BZPOPMIN", "zmh:a", "inf"}, {"BZMPOP", "-0.0001", "1", "zmh:a", "MIN", "COUNT", "9223372036854775807"},
			{"ZMPOP", "1", "zmh:a", "MIN", "COUNT", "9223372036854775808"}, {"EXISTS", "zmh:a"}},
			[]string{":2\r\n", syntax, numKeys, numKeys, syntax, "-ERR at least 1 input key is needed for 'zunion' command\r\n",
				":2\r\n", "-ERR LIMIT can't be negative\r\n", "-ERR timeout is negative\r\n",
				"-ERR timeout is negative\r\n", "*2\r\n$5\r\nzmh:a\r\n*2\r\n*2\r\n$1\r\nx\r\n$1\r\n1\r\n*2\r\n$1\r\ny\r\n$1\r\n2\r\n", countZero, ":0\r\n"}},
		{"a key past its bound among the further keys", [][]string{{"ZADD", "zmh:a", "1", "x"}, {"ZMPOP", "2", "zmh:a", longKey, "MIN"},
			{"BZPOPMIN", "zmh:a", longKey, "0"}, {"BZMPOP", "0", "2", "zmh:a", longKey, "MAX"}, {"ZUNION", "2", "zmh:a", longKey},
			{"ZDIFFSTORE", "zmh:d", "2", "zmh:a", longKey}, {"ZINTERCARD", "2", "zmh:a", longKey}, {"ZDIFF", "1", longKey}},
			[]string{":1\r\n", further, further, further, furtherRead, "-ERR malformed command: zset_store: a further key is empty or too long\r\n",
				furtherRead, "-ERR malformed command: kv_tx: command 0: malformed command: coll_read: key of 1025 bytes, over 1024\r\n"}},
		{"10^4 keys in one command", [][]string{{"ZADD", "zmh:last", "5", "m"},
			manyKeys("ZUNION", "10000"), manyKeys("ZINTERCARD", "10000"), manyKeys("ZDIFF", "10000"),
			append(manyKeys("ZMPOP", "10001"), "zmh:last", "MAX"), append(manyKeys("BZPOPMIN"), "0.01")},
			[]string{":1\r\n", "*0\r\n", ":0\r\n", "*0\r\n", "*2\r\n$8\r\nzmh:last\r\n*1\r\n*2\r\n$1\r\nm\r\n$1\r\n5\r\n", "*-1\r\n"}},
		{"infinite weights make 0, not NaN", [][]string{{"ZADD", "zmh:w", "1", "x", "inf", "y"},
			{"ZUNION", "2", "zmh:w", "zmh:w", "WEIGHTS", "inf", "-inf", "WITHSCORES"},
			{"ZINTER", "2", "zmh:w", "zmh:w", "WEIGHTS", "0", "1", "AGGREGATE", "MIN", "WITHSCORES"},
			{"ZUNION", "1", "zmh:w", "WEIGHTS", "1e400"}, {"ZUNION", "1", "zmh:w", "WEIGHTS", "-0", "WITHSCORES"}},
			[]string{":2\r\n", "*4\r\n$1\r\nx\r\n$1\r\n0\r\n$1\r\ny\r\n$1\r\n0\r\n",
				"*4\r\n$1\r\nx\r\n$1\r\n0\r\n$1\r\ny\r\n$1\r\n0\r\n", "-ERR weight value is not a float\r\n",
				"*4\r\n$1\r\nx\r\n$1\r\n0\r\n$1\r\ny\r\n$1\r\n0\r\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if raceDetector && strings.HasPrefix(tt.name, "10^4") {
				t.Skip("10^4 keys under the race detector outlast the reply deadline; run without -race")
			}
			askEach(t, srv.Addr(), tt.send, tt.replies)
		})
	}

	t.Run("4*10^4 members combined, 6*10^4 popped at once", func(t *testing.T) {
		if raceDetector {
			t.Skip("4*10^4 members under the race detector outlast the timeouts; run without -race")
		}
		c := dialRaw(t, srv.Addr())
		c.nc.SetDeadline(time.Now().Add(5 * time.Minute))
		const n, chunk = 40000, 20000
		for _, key := range []string{"zmh:b1", "zmh:b2"} {
			for i := 0; i < n; i += chunk {
				args := []string{"ZADD", key}
				for j := i; j < i+chunk; j++ {
					m := j
					if key == "zmh:b2" {
						m += n / 2 // half of b2 is b1's
					}
					args = append(args, strconv.Itoa(j), fmt.Sprintf("m%06d", m))
				}
				c.send(array(args...))
				if r := c.replies(1)[0]; r != ":"+strconv.Itoa(chunk)+"\r\n" {
					t.Fatalf("ZADD %s from %d: %q", key, i, r)
				}
			}
		}
		for _, step := range []struct {
			args []string
			want string
		}{
			{[]string{"ZINTERCARD", "2", "zmh:b1", "zmh:b2"}, ":20000\r\n"},
			{[]string{"ZINTERCARD", "2", "zmh:b1", "zmh:b2", "LIMIT", "7"}, ":7\r\n"},
			{[]string{"ZUNIONSTORE", "zmh:u", "2", "zmh:b1", "zmh:b2"}, ":60000\r\n"},
			{[]string{"ZDIFFSTORE", "zmh:d", "2", "zmh:b1", "zmh:b2"}, ":20000\r\n"},
			{[]string{"ZRANGE", "zmh:d", "-1", "-1", "WITHSCORES"}, "*2\r\n$7\r\nm019999\r\n$5\r\n19999\r\n"},
			{[]string{"ZMPOP", "2", "zmh:none", "zmh:u", "MAX", "COUNT", "59999"}, ""},
			{[]string{"ZRANGE", "zmh:u", "0", "-1", "WITHSCORES"}, "*2\r\n$7\r\nm000000\r\n$1\r\n0\r\n"},
			{[]string{"BZMPOP", "0", "1", "zmh:u", "MIN", "COUNT", "5"}, "*2\r\n$5\r\nzmh:u\r\n*1\r\n*2\r\n$7\r\nm000000\r\n$1\r\n0\r\n"},
			{[]string{"EXISTS", "zmh:u"}, ":0\r\n"},
		} {
			c.send(array(step.args...))
			r := c.replies(1)[0]
			if step.want == "" {
				if !strings.HasPrefix(r, "*2\r\n$5\r\nzmh:u\r\n*59999\r\n") {
					t.Fatalf("%q = %.200q", step.args, r)
				}
				continue
			}
			if r != step.want {
				t.Fatalf("%q = %.200q, want %q", step.args, r, step.want)
			}
		}
	})

	t.Run("racing ZMPOPs pop each member once", func(t *testing.T) {
		args := []string{"ZADD", "zmh:race"}
		for i := range 240 {
			args = append(args, strconv.Itoa(i), fmt.Sprintf("r%03d", i))
		}
		askEach(t, srv.Addr(), [][]string{args}, []string{":240\r\n"})
		var mu sync.Mutex
		var popped []string
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := dialRaw(t, srv.Addr())
				for range 20 {
					c.send(array("ZMPOP", "1", "zmh:race", "MIN", "COUNT", "3") + array("BZPOPMAX", "zmh:race", "0.01"))
					for _, r := range c.replies(2) {
						for _, p := range strings.Split(r, "\r\n") {
							if strings.HasPrefix(p, "r") {
								mu.Lock()
								popped = append(popped, p)
								mu.Unlock()
							}
						}
					}
				}
			}()
		}
		wg.Wait()
		slices.Sort(popped)
		if len(popped) != 240 || len(slices.Compact(slices.Clone(popped))) != 240 {
			t.Fatalf("8 clients popped %d members, %d of them different; want each of 240 once", len(popped), len(slices.Compact(popped)))
		}
	})

	t.Run("blocked clients that leave pop nothing", func(t *testing.T) {
		var conns []*rawConn
		for i := range 50 {
			c := dialRaw(t, srv.Addr())
			if i%2 == 0 {
				c.send(array("BZPOPMIN", "zmh:gone", "0"))
			} else {
				c.send(array("BZMPOP", "0", "2", "zmh:other", "zmh:gone", "MAX", "COUNT", "2"))
			}
			conns = append(conns, c)
		}
		waitBlocked(t, srv, 50)
		for _, c := range conns {
			c.nc.Close()
		}
		waitBlocked(t, srv, 0)
		askEach(t, srv.Addr(), [][]string{{"ZADD", "zmh:gone", "1", "a"}, {"ZCARD", "zmh:gone"}}, []string{":1\r\n", ":1\r\n"})
	})
}
