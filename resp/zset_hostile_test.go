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

// TestZSetHostile: sorted sets' bad and huge inputs, each answered
// exactly: NaN and infinite scores, sums that make NaN, scores past a
// double, a member past its bound, a command of too many pairs, bad and
// huge ranges, LIMIT's negatives, 10^5 members ranged deep, ranked,
// popped and removed whole, and racing increments that lose nothing.
func TestZSetHostile(t *testing.T) {
	srv := startServer(t, memstore.New(t), "mem", func(c *Config) { c.MaxArgs = 1 << 18 })
	long := strings.Repeat("m", command.MaxFieldLen+1)
	tooLong := "-ERR hash field or set member too long: at most 8192 bytes\r\n"
	tooMany := fmt.Sprintf("-ERR too many fields or members in one command: at most %d\r\n", command.MaxCmdElems/2)
	notFloat, rangeFloat := "-ERR value is not a valid float\r\n", "-ERR min or max is not a float\r\n"
	nan := "-ERR resulting score is not a number (NaN)\r\n"
	empty := "*0\r\n"
	tests := []struct {
		name    string
		send    [][]string
		replies []string
	}{
		{"NaN and infinite scores", [][]string{{"ZADD", "zh:z", "nan", "a"}, {"ZADD", "zh:z", "-nan", "a"}, {"ZADD", "zh:z", "NaN", "a"},
			{"ZADD", "zh:z", "inf", "a", "-inf", "b"}, {"ZINCRBY", "zh:z", "-inf", "a"}, {"ZADD", "zh:z", "INCR", "inf", "b"},
			{"ZINCRBY", "zh:z", "inf", "a"}, {"ZSCORE", "zh:z", "a"}, {"ZADD", "zh:z", "1e309", "c"}, {"ZADD", "zh:z", "-1e309", "c"},
			{"ZADD", "zh:z", "1e-400", "c"}, {"ZADD", "zh:z", "4.9e-324", "c"}, {"ZSCORE", "zh:z", "c"},
			{"ZADD", "zh:z", "1.7976931348623157e308", "d"}, {"ZINCRBY", "zh:z", "1.7976931348623157e308", "d"},
			{"ZRANGEBYSCORE", "zh:z", "nan", "inf"}, {"ZRANGEBYSCORE", "zh:z", "(nan", "inf"}, {"ZCOUNT", "zh:z", "-inf", "nan"},
			{"ZCOUNT", "zh:z", "-1e999", "1e999"}, {"ZADD", "zh:z", strings.Repeat("1", 6000), "e"}, {"ZCARD", "zh:z"}},
			[]string{notFloat, notFloat, notFloat, ":2\r\n", nan, nan, "$3\r\ninf\r\n", "$3\r\ninf\r\n", notFloat, notFloat,
				notFloat, ":1\r\n", "$23\r\n4.9406564584124654e-324\r\n", ":1\r\n", "$3\r\ninf\r\n", rangeFloat, rangeFloat, rangeFloat,
				":4\r\n", notFloat, ":4\r\n"}},
		{"a member past its bound, a command of too many", [][]string{{"ZADD", "zh:m", "1", long}, {"ZADD", "zh:m", "1", "a", "2", long},
			{"ZSCORE", "zh:m", long}, {"ZRANK", "zh:m", long}, {"ZREM", "zh:m", long}, {"ZINCRBY", "zh:m", "1", long},
			{"ZRANGEBYLEX", "zh:m", "[" + long, "+"}, append([]string{"ZADD", "zh:m"}, manyArgs(command.MaxCmdElems/2+1, 2)...),
			{"EXISTS", "zh:m"}},
			[]string{tooLong, tooLong, tooLong, tooLong, tooLong, tooLong, "-ERR min or max not valid string range item\r\n", tooMany, ":0\r\n"}},
		{"bad ranges and LIMIT's negatives", [][]string{{"ZADD", "zh:r", "1", "a", "2", "b", "3", "c"},
			{"ZRANGE", "zh:r", "-9223372036854775808", "9223372036854775807"}, {"ZRANGE", "zh:r", "9223372036854775807", "-9223372036854775808"},
			{"ZRANGE", "zh:r", "0", "9223372036854775808"}, {"ZRANGEBYSCORE", "zh:r", "-inf", "inf", "LIMIT", "-1", "-1"},
			{"ZRANGEBYSCORE", "zh:r", "-inf", "inf", "LIMIT", "1", "-5"}, {"ZRANGEBYSCORE", "zh:r", "-inf", "inf", "LIMIT", "9223372036854775807", "1"},
			{"ZRANGE", "zh:r", "0", "-1", "LIMIT", "1", "1"}, {"ZRANGE", "zh:r", "+", "-", "BYLEX", "REV", "LIMIT", "0", "-9"},
			{"ZRANGEBYLEX", "zh:r", "[", "["}, {"ZPOPMIN", "zh:r", "-1"}, {"ZPOPMAX", "zh:r", "9223372036854775807"}, {"EXISTS", "zh:r"},
			{"ZRANDMEMBER", "zh:r", "-2000000"}},
			[]string{":3\r\n", "*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n", empty, "-ERR value is not an integer or out of range\r\n", empty,
				"*2\r\n$1\r\nb\r\n$1\r\nc\r\n", empty,
				"-ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX\r\n", "*3\r\n$1\r\nc\r\n$1\r\nb\r\n$1\r\na\r\n",
				empty, "-ERR value is out of range, must be positive\r\n", "*6\r\n$1\r\nc\r\n$1\r\n3\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\na\r\n$1\r\n1\r\n",
				":0\r\n", "-ERR a count with repeats is at most 1048576 here\r\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { askEach(t, srv.Addr(), tt.send, tt.replies) })
	}

	t.Run("10^5 members", func(t *testing.T) {
		if raceDetector {
			t.Skip("10^5 members under the race detector outlast the timeouts; run without -race")
		}
		c := dialRaw(t, srv.Addr())
		c.nc.SetDeadline(time.Now().Add(5 * time.Minute))
		const n, chunk = 100000, 20000
		for i := 0; i < n; i += chunk {
			args := []string{"ZADD", "zh:big"}
			for j := i; j < i+chunk; j++ {
				args = append(args, strconv.Itoa(n-j), fmt.Sprintf("m%06d", j)) // the last added scores lowest
			}
			c.send(array(args...))
			if r := c.replies(1)[0]; r != ":"+strconv.Itoa(chunk)+"\r\n" {
				t.Fatalf("ZADD from %d: %q", i, r)
			}
		}
		for _, step := range []struct {
			args []string
			want string
		}{
			{[]string{"ZCARD", "zh:big"}, ":100000\r\n"},
			{[]string{"ZRANK", "zh:big", "m000000"}, ":99999\r\n"},
			{[]string{"ZREVRANK", "zh:big", "m000000"}, ":0\r\n"},
			{[]string{"ZRANGE", "zh:big", "99998", "99999", "WITHSCORES"}, "*4\r\n$7\r\nm000001\r\n$5\r\n99999\r\n$7\r\nm000000\r\n$6\r\n100000\r\n"},
			{[]string{"ZRANGEBYSCORE", "zh:big", "(99998", "+inf", "LIMIT", "1", "5"}, "*1\r\n$7\r\nm000000\r\n"},
			{[]string{"ZRANGEBYSCORE", "zh:big", "-inf", "+inf", "LIMIT", "99999", "5"}, "*1\r\n$7\r\nm000000\r\n"},
			{[]string{"ZREVRANGEBYSCORE", "zh:big", "3", "1"}, "*3\r\n$7\r\nm099997\r\n$7\r\nm099998\r\n$7\r\nm099999\r\n"},
			{[]string{"ZCOUNT", "zh:big", "50001", "inf"}, ":50000\r\n"},
			{[]string{"ZADD", "zh:big", "XX", "CH", "-1", "m050000"}, ":1\r\n"},
			{[]string{"ZRANGE", "zh:big", "0", "0"}, "*1\r\n$7\r\nm050000\r\n"},
			{[]string{"ZREMRANGEBYSCORE", "zh:big", "(50000", "inf"}, ":50000\r\n"},
			{[]string{"ZREMRANGEBYRANK", "zh:big", "1", "-1"}, ":49999\r\n"},
			{[]string{"ZPOPMIN", "zh:big", "5"}, "*2\r\n$7\r\nm050000\r\n$2\r\n-1\r\n"},
			{[]string{"EXISTS", "zh:big"}, ":0\r\n"},
		} {
			c.send(array(step.args...))
			if r := c.replies(1)[0]; r != step.want {
				t.Fatalf("%q = %.200q, want %q", step.args, r, step.want)
			}
		}
	})

	t.Run("racing increments lose nothing", func(t *testing.T) {
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := dialRaw(t, srv.Addr())
				for range 50 {
					c.send(array("ZINCRBY", "zh:race", "1", "m") + array("ZADD", "zh:race", "CH", "INCR", "0.5", "n"))
					c.replies(2)
				}
			}()
		}
		wg.Wait()
		c := dialRaw(t, srv.Addr())
		c.send(array("ZMSCORE", "zh:race", "m", "n"))
		if r := c.replies(1)[0]; r != "*2\r\n$3\r\n400\r\n$3\r\n200\r\n" {
			t.Fatalf("after 8 x 50 increments: %q", r)
		}
	})
}

// askEach sends each command on one connection and checks its reply.
func askEach(t *testing.T, addr string, send [][]string, replies []string) {
	t.Helper()
	c := dialRaw(t, addr)
	for i, args := range send {
		c.send(array(args...))
		if r := c.replies(1)[0]; r != replies[i] {
			t.Fatalf("%.80q = %.200q, want %q", args, r, replies[i])
		}
	}
}
