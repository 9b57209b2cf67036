package resp

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/memstore"
)

// TestBulkLimitsAsRedis: malformed and over-long bulk lengths sent to
// redis-server and to the listener, both with a 1 MiB bulk limit (Redis's
// proto-max-bulk-len, the listener's MaxBulk): the same bytes answered,
// then the connection closed by both. Nothing of an over-long argument is
// read or held before the refusal.
func TestBulkLimitsAsRedis(t *testing.T) {
	redis := startRedisServer(t, "--proto-max-bulk-len", "1mb")
	srv := startServer(t, memstore.New(t), "mem", func(c *Config) { c.MaxBulk = 1 << 20 })
	for _, raw := range []string{
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048577\r\n", // one byte over
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2000000\r\n",
		"*1\r\n$-3\r\n",
		"*1\r\n$999999999999\r\n",
		"*1\r\n$99999999999999999999999\r\n",
		"*1\r\n$abc\r\n",
		"*1\r\n$\r\n",
	} {
		want, got := exchangeToClose(t, redis, raw), exchangeToClose(t, srv.Addr(), raw)
		if got != want {
			t.Errorf("%q: listener %q, redis-server %q", raw, got, want)
		}
	}
	// At the limit itself both take the value.
	val := make([]byte, 1<<20)
	for i := range val {
		val[i] = 'v'
	}
	at := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048576\r\n" + string(val) + "\r\n*1\r\n$4\r\nQUIT\r\n"
	if want, got := exchangeToClose(t, redis, at), exchangeToClose(t, srv.Addr(), at); got != want || want != "+OK\r\n+OK\r\n" {
		t.Errorf("a value of exactly 1 MiB: listener %q, redis-server %q; want +OK, then QUIT's +OK", got, want)
	}
}

// exchangeToClose sends raw on a new connection to addr and answers all
// that comes back until the server closes it (5 s at most).
func exchangeToClose(t *testing.T, addr, raw string) string {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(nc, raw); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(nc)
	if err != nil {
		return string(b) + " (not closed: " + err.Error() + ")"
	}
	return string(b)
}
