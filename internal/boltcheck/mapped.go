package boltcheck

import (
	"io"
	"os"
	"runtime/debug"

	"golang.org/x/sys/unix"
)

// The walk reads a file's pages through a read-only memory map, not one
// pread per page header and another per page's elements: in the page cache
// a pread cost 2.4 µs here, 0.38 s per million keys (79k pages), and at ten
// million keys the walk alone took seconds of a restart's budget. Every
// offset the walk reads is checked against the file's size first, exactly
// as with pread (mapped.ReadAt is a bounds-checked copy); what a map adds
// is a fault if the file shrinks while it is walked, and walkMapped turns
// that into a *Damage, in the caller's goroutine, where it can.

// mapped is a file's memory map read as an io.ReaderAt.
type mapped []byte

func (m mapped) ReadAt(b []byte, off int64) (int, error) {
	if off < 0 || off >= int64(len(m)) {
		return 0, io.EOF
	}
	n := copy(b, m[off:])
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

// walkMapped runs fn on w with w.f reading f through a memory map of its
// first w.size bytes, or through pread where the file cannot be mapped
// (an empty file, no address space for it).
func walkMapped(w *walker, f *os.File, fn func() error) (err error) {
	w.f = f
	if w.size <= 0 || int64(int(w.size)) != w.size {
		return fn()
	}
	data, merr := unix.Mmap(int(f.Fd()), 0, int(w.size), unix.PROT_READ, unix.MAP_SHARED)
	if merr != nil {
		return fn()
	}
	defer unix.Munmap(data)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if _, fault := r.(interface{ Addr() uintptr }); !fault {
			panic(r)
		}
		err = damaged("reading it faulted (%v): it is shorter than it was when the check began", r)
	}()
	w.f = mapped(data)
	return fn()
}
