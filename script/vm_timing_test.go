package script

import (
	"context"
	"testing"
)

// BenchmarkRunStoring is a run of a script that stores into a table: its
// state's environment is compared before the state is pooled again.
func BenchmarkRunStoring(b *testing.B) {
	s, err := Compile([]byte(`local t = {} t.v = redis.call("GET", KEYS[1]) return t.v`))
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

// BenchmarkOpenVM is a new state with Redis's environment (a run after
// one that changed its environment pays it).
func BenchmarkOpenVM(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		v := getVM(Config{CallDepth: 200 + i%2 + 1})
		v.L.Close()
	}
}
