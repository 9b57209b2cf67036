package resp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgate/idemgate/internal/memstore"
	"github.com/idemgate/idemgate/internal/testsupport"
)

// TestPreAuthLimits: with tokens, a connection that has not authenticated
// may send AUTH, HELLO ... AUTH, PING and QUIT with a few short arguments;
// longer frames get Redis's unauthenticated-length errors and the
// connection is closed before they are read, anything else is NOAUTH, and
// the fifth refusal closes the connection. The limits end with AUTH, also
// for the request pipelined right behind it.
func TestPreAuthLimits(t *testing.T) {
	srv := startServer(t, memstore.New(t), "mem", func(c *Config) { c.Auth = testAuth })
	noAuth := "-NOAUTH Authentication required.\r\n"
	wrongPass := "-WRONGPASS invalid username-password pair or user is disabled.\r\n"
	value := strings.Repeat("v", 100000)
	setBig := "*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$100000\r\n" + value + "\r\n"
	tests := []struct {
		name    string
		send    string
		replies []string
		closes  bool
	}{
		{"the bomb's header", "*65536\r\n$3\r\nSET\r\n$4194304\r\n", []string{"-ERR Protocol error: unauthenticated multibulk length\r\n"}, true},
		{"11 arguments", "*11\r\n", []string{"-ERR Protocol error: unauthenticated multibulk length\r\n"}, true},
		{"a bulk of 4097 bytes", "*2\r\n$4\r\nAUTH\r\n$4097\r\n", []string{"-ERR Protocol error: unauthenticated bulk length\r\n"}, true},
		{"a 4 MiB bulk", "*1\r\n$4194304\r\n", []string{"-ERR Protocol error: unauthenticated bulk length\r\n"}, true},
		{"over the absolute limit first", "*1\r\n$999999999999\r\n", []string{"-ERR Protocol error: invalid bulk length\r\n"}, true},
		{"a 5000-byte inline line", "AUTH " + strings.Repeat("s", 5000) + "\r\n", []string{"-ERR Protocol error: too big inline request\r\n"}, true},
		{"10 arguments of 4096 bytes are read", "*10\r\n$4\r\nAUTH\r\n" + strings.Repeat("$4096\r\n"+strings.Repeat("s", 4096)+"\r\n", 9),
			[]string{"-ERR syntax error\r\n"}, false},
		{"PING is answered", "PING\r\nPING hi\r\n", []string{"+PONG\r\n", "$2\r\nhi\r\n"}, false},
		{"PINGs are not refusals", strings.Repeat("PING\r\n", 20) + "AUTH app-secret\r\nGET big\r\n",
			append(repeat("+PONG\r\n", 20), "+OK\r\n", "$-1\r\n"), false},
		{"the fifth refusal closes", strings.Repeat("GET k\r\n", 6), repeat(noAuth, 5), true},
		{"unknown and unsupported commands are NOAUTH", "FOO bar\r\nEVAL x 0\r\nCLIENT ID\r\nGET\r\n", repeat(noAuth, 4), false},
		{"WRONGPASS counts", strings.Repeat("AUTH nope\r\n", 4) + "HELLO 3 AUTH default nope\r\nAUTH app-secret\r\n",
			repeat(wrongPass, 5), true},
		{"HELLO without AUTH counts", "HELLO 3\r\nHELLO 2\r\nGET a\r\nGET b\r\nAUTH app-secret\r\n",
			[]string{"-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time\r\n",
				"-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time\r\n",
				noAuth, noAuth, "+OK\r\n"}, false},
		{"MULTI before AUTH opens nothing", "MULTI\r\nAUTH app-secret\r\nSET k 1\r\nGET k\r\n", []string{noAuth, "+OK\r\n", "+OK\r\n", "$1\r\n1\r\n"}, false},
		{"a large value right behind AUTH", "AUTH app-secret\r\n" + setBig + "STRLEN big\r\nGET k\r\n",
			[]string{"+OK\r\n", "+OK\r\n", ":100000\r\n", "$1\r\n1\r\n"}, false},
		{"HELLO AUTH ends them too", "HELLO 2 AUTH default app-secret\r\n" + setBig,
			[]string{"*14\r\n$6\r\nserver\r\n$8\r\nidemgate\r\n$7\r\nversion\r\n$5\r\n7.0.0\r\n$5\r\nproto\r\n:2\r\n$2\r\nid\r\n:…", "+OK\r\n"}, false},
		{"QUIT", "QUIT\r\n", []string{"+OK\r\n"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialRaw(t, srv.Addr())
			c.send(tt.send)
			got := c.replies(len(tt.replies))
			for i, want := range tt.replies {
				if prefix, ok := strings.CutSuffix(want, "…"); ok && strings.HasPrefix(got[i], prefix) {
					got[i] = want
				}
			}
			if strings.Join(got, "") != strings.Join(tt.replies, "") {
				t.Fatalf("replies = %q, want %q", got, tt.replies)
			}
			if tt.closes && !c.closed() {
				t.Fatal("the connection stayed open")
			}
			if !tt.closes {
				c.send("PING\r\n")
				c.expect("PING", []string{"+PONG\r\n"})
			}
		})
	}

	// A client library without a password hears NOAUTH for its first
	// command, after its connection set-up, and not a closed connection.
	ctx := ctxT(t, 20*time.Second)
	for _, proto := range []int{2, 3} {
		c := client(t, srv.Addr(), func(o *redis.Options) { o.Protocol = proto })
		if err := c.Get(ctx, "k").Err(); err == nil || err.Error() != "NOAUTH Authentication required." {
			t.Fatalf("resp%d: go-redis without a password: %v, want NOAUTH", proto, err)
		}
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// TestPreAuthBombBoundsMemory is the bomb of the audit: many connections
// at once announce 65536 arguments and a 4 MiB bulk, and send the 4 MiB,
// without AUTH. Each is closed after its header, the process's heap grows
// by little while they are open (before the limits it held every byte
// sent: 400 MiB here), and what it had is returned once they end.
func TestPreAuthBombBoundsMemory(t *testing.T) {
	srv := startServer(t, memstore.New(t), "mem", func(c *Config) { c.Auth = testAuth })
	const conns = 100
	before := readMem(t)
	payload := bytes.Repeat([]byte("x"), 4<<20)
	ncs := make([]net.Conn, conns)
	var sent sync.WaitGroup
	for i := range ncs {
		nc, err := net.DialTimeout("tcp", srv.Addr(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(30 * time.Second))
		ncs[i] = nc
		sent.Add(1)
		go func() {
			defer sent.Done()
			// Fails once the server has closed: what it refused to read.
			io.WriteString(nc, "*65536\r\n$3\r\nSET\r\n$4194304\r\n")
			nc.Write(payload)
			io.WriteString(nc, "\r\n")
		}()
	}
	sent.Wait()
	during := readMem(t) // what the server holds once every bomb was sent, and the 4 MiB sent
	runtime.KeepAlive(payload)
	for i, nc := range ncs {
		got, err := io.ReadAll(bufio.NewReader(nc))
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("connection %d: still open after its bomb (read %q)", i, got)
		}
		// The reply, unless the server's close reset the connection
		// before it was read (the rest of the bomb was never read).
		if want := "-ERR Protocol error: unauthenticated multibulk length\r\n"; !strings.HasPrefix(want, string(got)) {
			t.Fatalf("connection %d: read %q, want %q", i, got, want)
		}
		nc.Close()
	}
	testsupport.WaitFor(t, "the bomb's connections to end", 20*time.Second, func() bool { return srv.clients() == 0 })
	after := readMem(t)
	t.Logf("%d bomb connections: heap in use %d KiB before, %d KiB once they were sent, %d KiB after they ended; RSS %d KiB, %d KiB, %d KiB",
		conns, before.heap>>10, during.heap>>10, after.heap>>10, before.rss>>10, during.rss>>10, after.rss>>10)
	if grew := during.heap - before.heap; grew > 64<<20 {
		t.Fatalf("the heap grew by %d MiB for %d unauthenticated connections", grew>>20, conns)
	}
	if before.rss > 0 && after.rss-before.rss > 64<<20 {
		t.Fatalf("RSS %d MiB after the connections ended, %d MiB before", after.rss>>20, before.rss>>20)
	}
}

// mem is the process's heap in use (after a GC) and resident size (0
// where /proc/self/status has none).
type mem struct{ heap, rss int64 }

func readMem(t *testing.T) mem {
	t.Helper()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m := mem{heap: int64(ms.HeapInuse)}
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				m.rss = kb << 10
			}
		}
	}
	return m
}
