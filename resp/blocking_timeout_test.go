package resp

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/memstore"
)

// blockingTimeouts are BLPOP and BRPOP timeouts and what Redis 7.0 makes
// of them on a key that never comes: its answer, or "blocks" (for ever, or
// longer than a test waits). Redis multiplies the seconds, read as a long
// double, by 1000 and rounds the milliseconds up: 0.0001 waits 1 ms, and
// -0.001 (a long double a hair above -0.001) is 0 ms, for ever.
var blockingTimeouts = []struct{ timeout, want string }{
	{"0.001", "*-1\r\n"},
	{"0.0001", "*-1\r\n"},
	{"0.0009", "*-1\r\n"},
	{"0.0015", "*-1\r\n"},
	{"0.01", "*-1\r\n"},
	{"1e-3", "*-1\r\n"},
	{".001", "*-1\r\n"},
	{"+0.001", "*-1\r\n"},
	{"1e-300", "*-1\r\n"},
	{"0x1p-20", "*-1\r\n"},
	{"0", "blocks"},
	{"-0", "blocks"},
	{"0.00", "blocks"},
	{"-0.0001", "blocks"},
	{"-0.001", "blocks"},
	{"-0x1p-20", "blocks"},
	{"0x10", "blocks"},
	{"9.2e15", "blocks"},
	{"9223372036854775", "blocks"},
	{"-1", "-ERR timeout is negative\r\n"},
	{"-0.0011", "-ERR timeout is negative\r\n"},
	{"-0.0015", "-ERR timeout is negative\r\n"},
	{"9223372036854776", "-ERR timeout is negative\r\n"},
	{"1e16", "-ERR timeout is negative\r\n"},
	{"inf", "-ERR timeout is negative\r\n"},
	{"-inf", "-ERR timeout is negative\r\n"},
	{"nan", "-ERR timeout is not a float or out of range\r\n"},
	{"abc", "-ERR timeout is not a float or out of range\r\n"},
	{"", "-ERR timeout is not a float or out of range\r\n"},
	{" 0.001", "-ERR timeout is not a float or out of range\r\n"},
	{"0.001 ", "-ERR timeout is not a float or out of range\r\n"},
	{"1e", "-ERR timeout is not a float or out of range\r\n"},
	{"1.5s", "-ERR timeout is not a float or out of range\r\n"},
	{"1e5000", "-ERR timeout is not a float or out of range\r\n"},
	{"1e-5000", "-ERR timeout is not a float or out of range\r\n"},
}

// TestBlockingTimeoutAsRedis: BLPOP and BRPOP on a key that never comes
// answer what redis-server answers for every timeout above, small,
// negative, huge and not a number; a fractional one ends in a null array.
// A timeout that blocks is read for half a second without an answer.
func TestBlockingTimeoutAsRedis(t *testing.T) {
	redisAddr := startRedisServer(t)
	srv := startServer(t, memstore.New(t), "mem", nil)
	for _, target := range []struct{ name, addr string }{{"redis-server", redisAddr}, {"idemgate", srv.Addr()}} {
		for _, cmd := range []string{"BLPOP", "BRPOP"} {
			for _, tc := range blockingTimeouts {
				c := dialRaw(t, target.addr)
				c.send(array(cmd, "bt:never", tc.timeout))
				if tc.want == "blocks" {
					c.nc.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
					_, err := c.br.ReadByte()
					var ne net.Error
					if !errors.As(err, &ne) || !ne.Timeout() {
						t.Errorf("%s: %s %q: answered or closed (%v), want it blocked", target.name, cmd, tc.timeout, err)
					}
				} else if got := c.replies(1)[0]; got != tc.want {
					t.Errorf("%s: %s %q = %q, want %q", target.name, cmd, tc.timeout, got, tc.want)
				}
				c.nc.Close()
			}
		}
	}
}

// TestParseTimeout: the milliseconds a timeout waits, rounded up as Redis
// rounds them.
func TestParseTimeout(t *testing.T) {
	for _, tc := range []struct {
		in      string
		ms      int64
		forever bool
		refusal string
	}{
		{"0.001", 1, false, ""},
		{"0.0001", 1, false, ""},
		{"1e-300", 1, false, ""},
		{"0.0015", 2, false, ""},
		{"0.002", 2, false, ""},
		{"1", 1000, false, ""},
		{"2.5", 2500, false, ""},
		{"0", 0, true, ""},
		{"-0.001", 0, true, ""},
		{"-0.0011", 0, false, msgTimeoutNeg},
		{"9223372036854775", 0, true, ""}, // past maxWait: for ever
		{"9223372036854776", 0, false, msgTimeoutNeg},
		{"x", 0, false, msgTimeoutNaN},
	} {
		ms, forever, refusal := parseTimeout([]byte(tc.in))
		if ms != tc.ms || forever != tc.forever || refusal != tc.refusal {
			t.Errorf("parseTimeout(%q) = %d %v %q, want %d %v %q", tc.in, ms, forever, refusal, tc.ms, tc.forever, tc.refusal)
		}
	}
}
