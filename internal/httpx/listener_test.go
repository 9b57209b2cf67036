package httpx

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"syscall"
	"testing"
)

// flakyListener fails its first accepts with errs, then accepts from ln.
type flakyListener struct {
	net.Listener
	errs []error
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if len(l.errs) > 0 {
		err := l.errs[0]
		l.errs = l.errs[1:]
		return nil, err
	}
	return l.Listener.Accept()
}

// TestAcceptSurvivesDescriptorShortage: out of file descriptors, the
// listener waits and accepts again instead of returning (fasthttp would stop
// serving, and the node would exit).
func TestAcceptSurvivesDescriptorShortage(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	emfile := &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	enfile := &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.ENFILE)}
	rl := &retryListener{Listener: &flakyListener{Listener: ln, errs: []error{emfile, enfile, emfile}},
		name: "test listener", logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	go func() {
		if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
			defer c.Close()
			c.Read(make([]byte, 1))
		}
	}()
	c, err := rl.Accept()
	if err != nil {
		t.Fatalf("Accept = %v, want a connection after the shortage passed", err)
	}
	c.Close()
	// A closed listener still ends Serve.
	ln.Close()
	if _, err := rl.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept on a closed listener = %v", err)
	}
}
