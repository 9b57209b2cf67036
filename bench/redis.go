package bench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"
)

// Redis is a redis-server the bench started: one node, no replication, with
// every write fsynced (appendonly yes, appendfsync always), as users who
// pick Redis for idempotency keys run it at best.
type Redis struct {
	addr string
	dir  string
	p    *proc
}

// StartRedis starts bin on a free loopback port in a temporary directory.
func StartRedis(bin string) (*Redis, error) {
	dir, err := os.MkdirTemp("", "idemgate-bench-redis-")
	if err != nil {
		return nil, err
	}
	addr, err := freePort()
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(addr)
	p, err := startProc(dir, "redis", bin, "--port", port, "--bind", "127.0.0.1", "--dir", dir,
		"--appendonly", "yes", "--appendfsync", "always", "--save", "", "--protected-mode", "no")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	r := &Redis{addr: addr, dir: dir, p: p}
	if !waitUntil(10*time.Second, func() bool {
		c, err := dialRESP(addr)
		if err != nil {
			return false
		}
		defer c.close()
		_, v, err := c.do("PING")
		return err == nil && v == "PONG"
	}) {
		r.Stop()
		return nil, fmt.Errorf("redis-server did not answer on %s (log in %s)", addr, dir)
	}
	return r, nil
}

// Stop kills the server and removes its files.
func (r *Redis) Stop() {
	r.p.stop()
	os.RemoveAll(r.dir)
}

// respConn is a minimal RESP2 client: enough for SET NX PX and GETDEL.
type respConn struct {
	c net.Conn
	r *bufio.Reader
	w *bufio.Writer
}

func dialRESP(addr string) (*respConn, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil, err
	}
	return &respConn{c: c, r: bufio.NewReader(c), w: bufio.NewWriter(c)}, nil
}

func (c *respConn) close() { c.c.Close() }

// dialRESPs opens n connections to addr: one per client.
func dialRESPs(addr string, n int) ([]*respConn, error) {
	conns := make([]*respConn, 0, n)
	for range n {
		c, err := dialRESP(addr)
		if err != nil {
			closeAll(conns)
			return nil, err
		}
		conns = append(conns, c)
	}
	return conns, nil
}

func closeAll(conns []*respConn) {
	for _, c := range conns {
		c.close()
	}
}

var errNilReply = errors.New("nil reply")

// do sends one command and returns the reply's type byte and value;
// errNilReply for a nil bulk string.
func (c *respConn) do(args ...string) (byte, string, error) {
	c.c.SetDeadline(time.Now().Add(10 * time.Second))
	c.send(args...)
	if err := c.w.Flush(); err != nil {
		return 0, "", err
	}
	return c.reply()
}

// send buffers one command; several sent before a Flush are a pipeline.
func (c *respConn) send(args ...string) {
	fmt.Fprintf(c.w, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(c.w, "$%d\r\n%s\r\n", len(a), a)
	}
}

// reply reads one reply: its type byte and value; errNilReply for a nil
// bulk string.
func (c *respConn) reply() (byte, string, error) {
	line, err := c.r.ReadString('\n')
	if err != nil {
		return 0, "", err
	}
	if len(line) < 3 {
		return 0, "", fmt.Errorf("short reply %q", line)
	}
	kind, body := line[0], line[1:len(line)-2]
	switch kind {
	case '+', ':':
		return kind, body, nil
	case '-':
		return kind, "", errors.New(body)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil {
			return 0, "", err
		}
		if n < 0 {
			return kind, "", errNilReply
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, buf); err != nil {
			return 0, "", err
		}
		return kind, string(buf[:n]), nil
	}
	return 0, "", fmt.Errorf("unexpected reply %q", line)
}

// RedisKV measures SET key v NX PX 60000 on fresh keys, then GETDEL of
// them, over one connection per client.
func RedisKV(r *Redis, cfg RunConfig) []Stats {
	conns, err := dialRESPs(r.addr, cfg.Clients)
	if err != nil {
		return []Stats{{Name: "redis SET NX (baseline)", Skipped: err.Error()}}
	}
	defer closeAll(conns)
	id := runID()
	var created atomicMax
	cfg.Name = "redis SET NX (baseline)"
	set := Run(cfg, func(c int, seq int64) error {
		_, v, err := conns[c].do("SET", fmt.Sprintf("k-%s-%d", id, seq), "v", "NX", "PX", "60000")
		if err == nil && v != "OK" {
			err = fmt.Errorf("SET NX answered %q", v)
		}
		if err == nil {
			created.set(seq + 1)
		}
		return err
	})
	_, _, err = conns[0].do("SET", fmt.Sprintf("k-%s-0", id), "w", "NX", "PX", "60000")
	set.Check, set.CheckOK, set.Baseline = "SET NX on an existing key: "+errString(err), errors.Is(err, errNilReply), true
	cfg.Name, cfg.Requests = "redis GETDEL (baseline)", created.get()
	get := Run(cfg, func(c int, seq int64) error {
		_, v, err := conns[c].do("GETDEL", fmt.Sprintf("k-%s-%d", id, seq))
		if errors.Is(err, errNilReply) {
			return nil
		}
		if err == nil && v != "v" {
			err = fmt.Errorf("GETDEL returned %q", v)
		}
		return err
	})
	_, _, err = conns[0].do("GETDEL", fmt.Sprintf("k-%s-0", id))
	get.Check, get.CheckOK, get.Baseline = "second GETDEL: "+errString(err), errors.Is(err, errNilReply), true
	return []Stats{set, get}
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}
