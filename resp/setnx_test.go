package resp

import (
	"testing"

	"github.com/idemgate/idemgate/internal/memstore"
)

// TestEverySETNXOnALiveKeyIsARead: SETNX and every SET NX (with GET,
// KEEPTTL, EX) on a key that is live are answered from a read, as the
// state machine would answer them, and add no log entry; in a pipeline
// each still sees the writes sent before it (a DEL, a SET), and the writes
// after it see it. A reserved key is refused, a bad one answered, the
// state unchanged.
func TestEverySETNXOnALiveKeyIsARead(t *testing.T) {
	m := memstore.New(t)
	srv := startServer(t, m, "mem", nil)
	c := dialRaw(t, srv.Addr())
	c.send("SET lock a\r\n")
	c.expect("SET", []string{"+OK\r\n"})
	before, _ := m.Indexes()
	refused := []struct{ send, reply string }{
		{"SETNX lock b\r\n", ":0\r\n"},
		{"SET lock b NX\r\n", "$-1\r\n"},
		{"SET lock b NX GET\r\n", "$1\r\na\r\n"},
		{"SET lock b NX KEEPTTL\r\n", "$-1\r\n"},
		{"SET lock b EX 60 NX\r\n", "$-1\r\n"},
		{"GET lock\r\n", "$1\r\na\r\n"},
	}
	var batch string
	var want []string
	for _, r := range refused {
		c.send(r.send)
		c.expect(r.send, []string{r.reply})
		batch, want = batch+r.send, append(want, r.reply)
	}
	c.send(batch) // the same, pipelined
	c.expect("the refusals pipelined", want)
	if after, _ := m.Indexes(); after != before {
		t.Fatalf("%d refused SETNX grew the log from %d to %d", 2*len(refused)-2, before, after)
	}

	for _, tt := range []struct {
		name, send string
		replies    []string
	}{
		{"a DEL before it in the pipeline", "DEL lock\r\nSETNX lock c\r\nGET lock\r\n",
			[]string{":1\r\n", ":1\r\n", "$1\r\nc\r\n"}},
		{"a SET before it, an INCR after", "SET n 1\r\nSETNX n 2\r\nINCR n\r\nSET n 9 NX GET\r\nINCR n\r\n",
			[]string{"+OK\r\n", ":0\r\n", ":2\r\n", "$1\r\n2\r\n", ":3\r\n"}},
		{"a GETDEL between two", "SETNX lock d\r\nGETDEL lock\r\nSETNX lock e\r\nSETNX lock f\r\nGET lock\r\n",
			[]string{":0\r\n", "$1\r\nc\r\n", ":1\r\n", ":0\r\n", "$1\r\ne\r\n"}},
		{"a reserved key", "SETNX \x00node/n1 evil\r\nSET \x00node/n1 evil NX\r\n",
			[]string{"-ERR reserved key: keys that begin with a NUL byte are idemgate's own\r\n", "-ERR reserved key: keys that begin with a NUL byte are idemgate's own\r\n"}},
		{"too few arguments", "SETNX lock\r\n", []string{"-ERR wrong number of arguments for 'setnx' command\r\n"}},
		{"NX and XX", "SET lock x NX XX\r\nGET lock\r\n", []string{"-ERR syntax error\r\n", "$1\r\ne\r\n"}},
	} {
		c.send(tt.send)
		c.expect(tt.name, tt.replies)
	}
}
