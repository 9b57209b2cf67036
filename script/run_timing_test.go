package script

import (
	"context"
	"testing"
)

// BenchmarkRun is one run of redsync's release script: a VM, its
// libraries, the compiled script, two calls.
func BenchmarkRun(b *testing.B) {
	s, err := Compile([]byte(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0 end`))
	if err != nil {
		b.Fatal(err)
	}
	keys, argv := [][]byte{[]byte("k")}, [][]byte{[]byte("k")}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if r, err := s.Run(context.Background(), DefaultConfig(), keys, argv, &echoCaller{}); err != nil || r.Kind == Error {
			b.Fatal(r, err)
		}
	}
}
