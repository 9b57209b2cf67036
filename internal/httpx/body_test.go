package httpx

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

func TestBodyBudgetAccounting(t *testing.T) {
	b := NewBodyBudget(100, 0)
	if !b.take(60) || b.take(50) || !b.take(40) || b.take(1) {
		t.Fatal("take does not respect the bound")
	}
	b.give(60)
	if !b.take(60) {
		t.Fatal("give did not return the bytes")
	}
	if d := NewBodyBudget(0, 1<<20); d.max != 64<<20 {
		t.Fatalf("default budget %d, want 64 bodies", d.max)
	}
}

// TestReadUpTo: readUpTo reads what io.ReadAll of an io.LimitReader reads,
// and returns the same error, whatever the reader's pace and the buffer it
// starts from.
func TestReadUpTo(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 700) // past the pool's first 4 KiB
	broken := errors.New("broken off")
	readers := map[string]func(b []byte) io.Reader{
		"whole":    func(b []byte) io.Reader { return bytes.NewReader(b) },
		"one byte": func(b []byte) io.Reader { return iotest.OneByteReader(bytes.NewReader(b)) },
		"data and EOF at once": func(b []byte) io.Reader {
			return iotest.DataErrReader(bytes.NewReader(b))
		},
		"broken": func(b []byte) io.Reader { return io.MultiReader(bytes.NewReader(b), iotest.ErrReader(broken)) },
	}
	for name, reader := range readers {
		for _, n := range []int{0, 1, 99, 4096, 4097, len(data)} {
			for _, max := range []int{1, 100, 4097, len(data) + 1} {
				for _, start := range [][]byte{nil, make([]byte, 0, 8), make([]byte, 0, 4096)} {
					want, werr := io.ReadAll(io.LimitReader(reader(data[:n]), int64(max)))
					got, err := readUpTo(reader(data[:n]), start, max)
					if !bytes.Equal(got, want) || !errors.Is(err, werr) && err != werr {
						t.Fatalf("%s, %d bytes, max %d, from cap %d: readUpTo = %d bytes, %v; want %d bytes, %v",
							name, n, max, cap(start), len(got), err, len(want), werr)
					}
				}
			}
		}
	}
}
