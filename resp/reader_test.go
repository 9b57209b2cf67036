package resp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzReadRequest: any bytes parse into requests or stop with an error,
// never a panic; every argument respects the limits.
func FuzzReadRequest(f *testing.F) {
	for _, seed := range []string{
		"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", "PING\r\n", "SET \"a b\" 'c'\r\n", "*-1\r\n", "*1\r\n$-1\r\n",
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$99999999\r\n", "\"\\x41\\n\" x\n", "*1\r\n:1\r\n", "'unbalanced\r\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lim := readLimits{maxBulk: 1 << 10, maxArgs: 64, maxInline: 256, maxRequest: 2 << 10}
		// A budget smaller than what the limits allow: its refusal is
		// one of the reader's answers too.
		acct := &account{b: &budget{max: 1536}}
		r := reader{br: bufio.NewReaderSize(bytes.NewReader(data), 64), lim: lim, acct: acct}
		for i := 0; i < 1000; i++ {
			args, err := r.readRequest()
			if err != nil {
				var pe *ProtocolError
				if !errors.As(err, &pe) && err != io.EOF && err != io.ErrUnexpectedEOF && err != errBudget {
					t.Fatalf("error %T %v: neither a protocol error nor an end", err, err)
				}
				return
			}
			if len(args) > lim.maxArgs {
				t.Fatalf("%d arguments, over %d", len(args), lim.maxArgs)
			}
			total := 0
			for _, a := range args {
				if len(a) > lim.maxBulk && len(a) > lim.maxInline {
					t.Fatalf("an argument of %d bytes", len(a))
				}
				total += len(a)
			}
			if total > max(lim.maxRequest, lim.maxInline) || int64(total) > acct.n {
				t.Fatalf("a request of %d bytes, %d charged, cap %d", total, acct.n, lim.maxRequest)
			}
			acct.keep(0) // answered: as the connection gives them back
		}
	})
}

// TestSplitArgs: inline commands split as redis-cli's sdssplitargs does.
func TestSplitArgs(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  bool
	}{
		{"SET a b", []string{"SET", "a", "b"}, false},
		{"  GET   k  ", []string{"GET", "k"}, false},
		{`SET "a b" 'c d'`, []string{"SET", "a b", "c d"}, false},
		{`SET "\x41\n\t\"" ''`, []string{"SET", "A\n\t\"", ""}, false},
		{`SET 'it\'s'`, []string{"SET", "it's"}, false},
		{`SET "a`, nil, true},
		{`SET 'a`, nil, true},
		{`SET "a"b`, nil, true},
	}
	for _, tt := range tests {
		got, err := splitArgs([]byte(tt.in))
		if (err != nil) != tt.err {
			t.Errorf("splitArgs(%q) error = %v, want error %v", tt.in, err, tt.err)
			continue
		}
		if tt.err {
			continue
		}
		var s []string
		for _, a := range got {
			s = append(s, string(a))
		}
		if len(s) != len(tt.want) {
			t.Errorf("splitArgs(%q) = %q, want %q", tt.in, s, tt.want)
			continue
		}
		for i := range s {
			if s[i] != tt.want[i] {
				t.Errorf("splitArgs(%q) = %q, want %q", tt.in, s, tt.want)
				break
			}
		}
	}
}
