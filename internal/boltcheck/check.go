// Package boltcheck tells whether a bbolt file is sound before bbolt opens
// it, so that a damaged file is an error and not a crash.
//
// bbolt trusts its file. It follows every page id and element offset it
// reads through its memory map without a bounds check: on a damaged file it
// faults (SIGSEGV; SIGBUS past the end of a truncated file) or panics. Both
// can happen in goroutines bbolt starts itself, where no recover and no
// debug.SetPanicOnFault of the caller reaches: opening a file read-write
// when its freelist is not synced (NoFreelistSync, as both of a node's files
// are) walks every bucket's pages in such a goroutine, and so does tx.Check.
// So tx.Check under recover is not enough.
//
// Check first reads the file itself, in file order into a read-only memory
// map (so the walks that follow, its own and bbolt's, find every page in
// the page cache), then with a bounds check on every id and offset (a file
// that shrinks meanwhile faults in the caller's goroutine, where it is
// recovered: mapped.go): the meta pages, the file's size against the high
// water mark, the freelist page (none of its pages may be in use), and
// every page reachable from the root bucket, inline buckets included. A
// file that passes can be walked by bbolt without a fault or an
// unrecoverable panic.
//
// A full check then runs bbolt's own (tx.Check: pages reachable and free),
// on a read-only open. That loads the freelist by the same unprotected walk
// (a file that does not sync its freelist has none to read), and that walk
// panics at its first finding while its goroutine keeps reading the map:
// once the file is closed it faults. So a full check first verifies key
// order itself, exactly as that walk does, the one thing it reports that
// the structural walk does not: it then finds nothing.
package boltcheck

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// FullCheckMaxBytes bounds the files a full check (key order, then
// bbolt's tx.Check) runs on when the caller does not insist: it reads every
// key and keeps a map entry per page, 0.45 s for a 387 MiB file in the page
// cache here (more from a cold disk), at every start. The structural walk
// that makes opening safe runs on every file (83 ms for that file): bbolt's
// own read-write open walks the same pages anyway (68 ms) when the file
// holds no free list, see the package comment.
const FullCheckMaxBytes = 256 << 20

// Damage is Check's error for a file that is not a sound bbolt file.
// Problem says what is wrong, starting with the page where it was found
// ("page 12: ...") when there is one.
type Damage struct {
	Problem string
}

func (d *Damage) Error() string { return d.Problem }

func damaged(format string, args ...any) error {
	return &Damage{Problem: fmt.Sprintf(format, args...)}
}

// Check examines the bbolt file at path, which must exist and must not be
// open for writing. It returns a *Damage for a damaged file, and another
// error when it could not look (the file cannot be opened, another process
// holds it). full adds bbolt's own consistency check (tx.Check), which
// costs a read of every page: callers pass it for files up to
// FullCheckMaxBytes and for files not closed cleanly.
func Check(path string, full bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	w := &walker{size: st.Size()}
	err = walkMapped(w, f, func() error {
		if err := w.run(); err != nil || !full {
			return err
		}
		for _, root := range w.roots {
			if _, err := w.keyOrder(root, nil, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || !full {
		return err
	}
	return consistency(path)
}

// The layout of a bbolt file (go.etcd.io/bbolt/internal/common), in the
// machine's byte order, as bbolt writes it through its memory map.
const (
	pageHeaderSize   = 16 // id u64 | flags u16 | count u16 | overflow u32
	elementSize      = 16 // branch: pos u32 | ksize u32 | pgid u64; leaf: flags u32 | pos u32 | ksize u32 | vsize u32
	bucketHeaderSize = 16 // root pgid u64 | sequence u64
	metaSumOffset    = 56 // FNV-64a of the meta's first 56 bytes follows them
	metaMagic        = 0xED0CDAED
	metaVersion      = 2
	noFreelist       = ^uint64(0)
	branchPage       = 0x01
	leafPage         = 0x02
	freelistPage     = 0x10
	bucketLeafFlag   = 0x01
)

var ne = binary.NativeEndian

type meta struct {
	pageSize uint64
	root     uint64
	freelist uint64
	pgid     uint64 // high water mark: pages [0, pgid) are in use or free
	txid     uint64
}

// parseMeta reads the meta stored in a page whose header starts at b[0].
func parseMeta(b []byte) (meta, error) {
	if len(b) < pageHeaderSize+metaSumOffset+8 {
		return meta{}, errors.New("short")
	}
	m := b[pageHeaderSize:]
	switch {
	case ne.Uint32(m[0:]) != metaMagic:
		return meta{}, errors.New("not a bbolt meta page (bad magic)")
	case ne.Uint32(m[4:]) != metaVersion:
		return meta{}, fmt.Errorf("bbolt format version %d, want %d", ne.Uint32(m[4:]), metaVersion)
	}
	h := fnv.New64a()
	h.Write(m[:metaSumOffset])
	if h.Sum64() != ne.Uint64(m[metaSumOffset:]) {
		return meta{}, errors.New("checksum mismatch")
	}
	return meta{pageSize: uint64(ne.Uint32(m[8:])), root: ne.Uint64(m[16:]), freelist: ne.Uint64(m[32:]),
		pgid: ne.Uint64(m[40:]), txid: ne.Uint64(m[48:])}, nil
}

// walker reads a file's pages (through its memory map, see mapped.go),
// checking every id and offset before it is used, as bbolt would follow
// them.
type walker struct {
	f     io.ReaderAt
	size  int64
	m     meta
	ps    uint64   // page size
	seen  []uint64 // bitmap of pages reached so far, [0, m.pgid)
	todo  []ref    // pages still to visit
	roots []uint64 // the root pages of the buckets not stored inline
	free  []uint64 // the synced freelist's ids, sorted (none when not synced)
}

// ref is a page to visit and where its id was found (for the message):
// from, or else element elem of page parent. The walk queues a ref per
// branch element; formatting where each came from cost a fifth of the walk.
type ref struct {
	id     uint64
	from   string
	parent uint64
	elem   int
}

func (r ref) where() string {
	if r.from != "" {
		return r.from
	}
	return fmt.Sprintf("page %d element %d", r.parent, r.elem)
}

func (w *walker) run() error {
	if w.size == 0 {
		return damaged("the file is empty (0 bytes)")
	}
	if err := w.readMetas(); err != nil {
		return err
	}
	if w.m.pgid < 2 || w.m.pgid > uint64(w.size)/w.ps {
		return damaged("the file is %d bytes, shorter than the %d pages of %d bytes its meta page says it holds (truncated?)",
			w.size, w.m.pgid, w.ps)
	}
	w.seen = make([]uint64, (w.m.pgid+63)/64)
	w.mark(0)
	w.mark(1)
	if w.m.freelist != noFreelist {
		if err := w.freelist(); err != nil {
			return err
		}
	}
	w.todo = append(w.todo, ref{id: w.m.root, from: "the meta page's root bucket"})
	w.roots = append(w.roots, w.m.root)
	for len(w.todo) > 0 {
		r := w.todo[len(w.todo)-1]
		w.todo = w.todo[:len(w.todo)-1]
		if err := w.page(r); err != nil {
			return err
		}
	}
	return w.freeInUse()
}

// readMetas finds the page size and the meta bbolt will use: the valid one
// of the two with the higher transaction id.
func (w *walker) readMetas() error {
	var buf [4096]byte
	n, _ := w.f.ReadAt(buf[:], 0)
	if n < pageHeaderSize+metaSumOffset+8 {
		return damaged("the file is %d bytes, too short for a meta page", w.size)
	}
	m0, err0 := parseMeta(buf[:n])
	if err0 == nil {
		w.ps = m0.pageSize
	} else {
		// Page 0 is unreadable: find page 1 at each page size bbolt
		// supports, as bbolt does.
		for i := 0; i <= 14 && w.ps == 0; i++ {
			pos := int64(1024) << i
			if pos >= w.size {
				break
			}
			if n, _ := w.f.ReadAt(buf[:], pos); n > 0 {
				if m, err := parseMeta(buf[:n]); err == nil {
					w.ps = m.pageSize
				}
			}
		}
		if w.ps == 0 {
			return damaged("page 0: meta page invalid (%v) and no valid second meta page found", err0)
		}
	}
	if w.ps < 1024 || w.ps&(w.ps-1) != 0 || w.ps > 1<<24 {
		return damaged("page 0: page size %d is not one bbolt writes", w.ps)
	}
	var err1 error
	m1 := meta{}
	if n, _ := w.f.ReadAt(buf[:], int64(w.ps)); n > 0 {
		m1, err1 = parseMeta(buf[:n])
	} else {
		err1 = errors.New("missing")
	}
	switch {
	case err0 == nil && err1 == nil && m0.pageSize != m1.pageSize:
		return damaged("pages 0 and 1: the meta pages disagree on the page size (%d, %d)", m0.pageSize, m1.pageSize)
	case err0 != nil && err1 != nil:
		return damaged("pages 0 and 1: both meta pages are invalid (%v; %v)", err0, err1)
	case err1 != nil || (err0 == nil && m0.txid >= m1.txid):
		w.m = m0
	default:
		w.m = m1
	}
	return nil
}

// mark records that page id was reached, and reports whether it was before.
func (w *walker) mark(id uint64) (again bool) {
	word, bit := id/64, uint64(1)<<(id%64)
	again = w.seen[word]&bit != 0
	w.seen[word] |= bit
	return again
}

// header reads page id's header and its span (the page and its overflow),
// checking that the page is where it says it is and inside the file.
func (w *walker) header(r ref, want uint16) (flags uint16, count int, span uint64, err error) {
	if r.id < 2 || r.id >= w.m.pgid {
		return 0, 0, 0, damaged("page %d: %s points to it, outside the file's %d pages", r.id, r.where(), w.m.pgid)
	}
	var h [pageHeaderSize]byte
	if _, err := w.f.ReadAt(h[:], int64(r.id*w.ps)); err != nil {
		return 0, 0, 0, damaged("page %d: cannot read it: %v", r.id, err)
	}
	id, flags, overflow := ne.Uint64(h[0:]), ne.Uint16(h[8:]), uint64(ne.Uint32(h[12:]))
	count = int(ne.Uint16(h[10:]))
	switch {
	case id != r.id:
		return 0, 0, 0, damaged("page %d: its header says it is page %d (overwritten?)", r.id, id)
	case flags&want == 0 || flags&(flags-1) != 0:
		return 0, 0, 0, damaged("page %d: %s points to it, but it is not a %s page (flags %#x)", r.id, r.where(), kind(want), flags)
	case overflow >= w.m.pgid-r.id:
		return 0, 0, 0, damaged("page %d: %d overflow pages run past the file's %d pages", r.id, overflow, w.m.pgid)
	}
	for i := r.id; i <= r.id+overflow; i++ {
		if w.mark(i) {
			return 0, 0, 0, damaged("page %d: reached twice (from %s): pages form a cycle or are shared", i, r.where())
		}
	}
	return flags, count, (overflow + 1) * w.ps, nil
}

func kind(flags uint16) string {
	var k []string
	for _, f := range []struct {
		bit  uint16
		name string
	}{{branchPage, "branch"}, {leafPage, "leaf"}, {freelistPage, "freelist"}} {
		if flags&f.bit != 0 {
			k = append(k, f.name)
		}
	}
	return strings.Join(k, " or ")
}

// read reads n bytes of page id's span from off. From the memory map they
// are the map's own bytes, valid until the walk ends.
func (w *walker) read(id, off, n uint64) ([]byte, error) {
	if m, ok := w.f.(mapped); ok {
		if at := id*w.ps + off; at+n >= at && at+n <= uint64(len(m)) {
			return m[at : at+n : at+n], nil
		}
	}
	b := make([]byte, n)
	if _, err := w.f.ReadAt(b, int64(id*w.ps+off)); err != nil {
		return nil, damaged("page %d: cannot read it: %v", id, err)
	}
	return b, nil
}

// freelist checks the synced freelist page: its ids are read as one array
// of count entries, and must be pages of the file.
func (w *walker) freelist() error {
	r := ref{id: w.m.freelist, from: "the meta page's freelist"}
	_, count, span, err := w.header(r, freelistPage)
	if err != nil {
		return err
	}
	start := uint64(pageHeaderSize)
	n := uint64(count)
	if count == 0xFFFF { // the real count is the first element
		b, err := w.read(r.id, pageHeaderSize, 8)
		if err != nil {
			return err
		}
		n, start = ne.Uint64(b), start+8
	}
	if n > (span-start)/8 {
		return damaged("page %d: freelist of %d ids does not fit its %d bytes", r.id, n, span)
	}
	b, err := w.read(r.id, start, n*8)
	if err != nil {
		return err
	}
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = ne.Uint64(b[i*8:])
		if ids[i] < 2 || ids[i] >= w.m.pgid {
			return damaged("page %d: freelist holds page %d, outside the file's %d pages", r.id, ids[i], w.m.pgid)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] {
			return damaged("page %d: freelist holds page %d twice", r.id, ids[i])
		}
	}
	w.free = ids
	return nil
}

// freeInUse checks, once every reachable page is marked, that the synced
// freelist holds none of them: bbolt would hand such a page to its next
// commit and overwrite live data with it. A node opens its files with the
// free list the last clean close wrote, and trusts it from then on.
func (w *walker) freeInUse() error {
	for _, id := range w.free {
		if w.seen[id/64]&(1<<(id%64)) != 0 {
			return damaged("page %d: the freelist (page %d) holds it, but it is in use", id, w.m.freelist)
		}
	}
	return nil
}

// page checks one branch or leaf page: its elements lie inside its span,
// a branch's children are queued, a leaf's buckets are checked.
func (w *walker) page(r ref) error {
	flags, count, span, err := w.header(r, branchPage|leafPage)
	if err != nil {
		return err
	}
	if flags == branchPage && count == 0 {
		return damaged("page %d: branch page with no elements", r.id)
	}
	elems := uint64(pageHeaderSize + count*elementSize)
	if elems > span {
		return damaged("page %d: %d elements do not fit its %d bytes", r.id, count, span)
	}
	b, err := w.read(r.id, 0, elems)
	if err != nil {
		return err
	}
	for i := 0; i < count; i++ {
		off := uint64(pageHeaderSize + i*elementSize)
		e := b[off : off+elementSize]
		if flags == branchPage {
			pos, ksize := uint64(ne.Uint32(e[0:])), uint64(ne.Uint32(e[4:]))
			if off+pos+ksize > span {
				return damaged("page %d: branch element %d's key lies outside the page", r.id, i)
			}
			w.todo = append(w.todo, ref{id: ne.Uint64(e[8:]), parent: r.id, elem: i})
			continue
		}
		eflags, pos, ksize, vsize := ne.Uint32(e[0:]), uint64(ne.Uint32(e[4:])), uint64(ne.Uint32(e[8:])), uint64(ne.Uint32(e[12:]))
		if off+pos+ksize+vsize > span {
			return damaged("page %d: leaf element %d's key and value lie outside the page", r.id, i)
		}
		if eflags&bucketLeafFlag == 0 {
			continue
		}
		at := fmt.Sprintf("page %d element %d", r.id, i)
		if vsize < bucketHeaderSize {
			return damaged("page %d: bucket at element %d has a %d-byte header, want %d", r.id, i, vsize, bucketHeaderSize)
		}
		vstart := off + pos + ksize
		hdr, err := w.read(r.id, vstart, bucketHeaderSize)
		if err != nil {
			return err
		}
		if root := ne.Uint64(hdr); root != 0 {
			w.todo = append(w.todo, ref{id: root, from: "the bucket at " + at})
			w.roots = append(w.roots, root)
			continue
		}
		v, err := w.read(r.id, vstart, vsize)
		if err != nil {
			return err
		}
		if err := w.inline(v, at); err != nil {
			return err
		}
	}
	return nil
}

// inline checks a bucket stored in its parent's value: a bucket header
// (root 0) and a leaf page that must lie inside the value.
func (w *walker) inline(v []byte, at string) error {
	p := v[bucketHeaderSize:]
	if len(p) < pageHeaderSize {
		return damaged("%s: inline bucket too short for its page", at)
	}
	if flags := ne.Uint16(p[8:]); flags != leafPage {
		return damaged("%s: inline bucket's page is not a leaf page (flags %#x)", at, flags)
	}
	count := int(ne.Uint16(p[10:]))
	if pageHeaderSize+count*elementSize > len(p) {
		return damaged("%s: inline bucket's %d elements do not fit", at, count)
	}
	for i := 0; i < count; i++ {
		off := uint64(pageHeaderSize + i*elementSize)
		e := p[off : off+elementSize]
		eflags, pos, ksize, vsize := ne.Uint32(e[0:]), uint64(ne.Uint32(e[4:])), uint64(ne.Uint32(e[8:])), uint64(ne.Uint32(e[12:]))
		if off+pos+ksize+vsize > uint64(len(p)) {
			return damaged("%s: inline bucket's element %d lies outside it", at, i)
		}
		if eflags&bucketLeafFlag == 0 {
			continue
		}
		sub := p[off+pos+ksize : off+pos+ksize+vsize]
		where := fmt.Sprintf("%s, inline element %d", at, i)
		if len(sub) < bucketHeaderSize {
			return damaged("%s: bucket header too short", where)
		}
		if root := ne.Uint64(sub); root != 0 {
			w.todo = append(w.todo, ref{id: root, from: "the bucket at " + where})
			w.roots = append(w.roots, root)
			continue
		}
		if err := w.inline(sub, where); err != nil {
			return err
		}
	}
	return nil
}

// node reads the keys (and a branch's children) of a page the structural
// walk passed: every offset is known to lie inside the page.
func (w *walker) node(id uint64) (branch bool, keys [][]byte, kids []uint64, err error) {
	var h [pageHeaderSize]byte
	if _, err := w.f.ReadAt(h[:], int64(id*w.ps)); err != nil {
		return false, nil, nil, damaged("page %d: cannot read it: %v", id, err)
	}
	branch = ne.Uint16(h[8:]) == branchPage
	count := int(ne.Uint16(h[10:]))
	span := (uint64(ne.Uint32(h[12:])) + 1) * w.ps
	// A page with overflow pages can be large (one big value): read its
	// elements and then each key, not the whole span.
	n := span
	if span > 4*w.ps {
		n = uint64(pageHeaderSize + count*elementSize)
	}
	b, err := w.read(id, 0, n)
	if err != nil {
		return false, nil, nil, err
	}
	for i := 0; i < count; i++ {
		off := uint64(pageHeaderSize + i*elementSize)
		e := b[off:]
		pos, ksize := uint64(ne.Uint32(e[4:])), uint64(ne.Uint32(e[8:]))
		if branch {
			pos, ksize = uint64(ne.Uint32(e[0:])), uint64(ne.Uint32(e[4:]))
			kids = append(kids, ne.Uint64(e[8:]))
		}
		start := off + pos
		if start+ksize <= n {
			keys = append(keys, b[start:start+ksize])
			continue
		}
		k, err := w.read(id, start, ksize)
		if err != nil {
			return false, nil, nil, err
		}
		keys = append(keys, k)
	}
	return branch, keys, kids, nil
}

// keyOrder checks that the keys under page id are in order and within
// [lo, hi) (nil: unbounded), and returns the subtree's largest key: bbolt's
// recursivelyCheckPageKeyOrderInternal and verifyKeyOrder (tx_check.go),
// the same comparisons in the same order, so that a file passing it gives
// bbolt's walk nothing to report.
func (w *walker) keyOrder(id uint64, lo, hi []byte) (max []byte, err error) {
	branch, keys, kids, err := w.node(id)
	if err != nil {
		return nil, err
	}
	running := lo
	for i, k := range keys {
		if err := verifyKeyOrder(id, i, k, running, hi); err != nil {
			return nil, err
		}
		if !branch {
			running = k
			continue
		}
		next := hi
		if i < len(keys)-1 {
			next = keys[i+1]
		}
		if max, err = w.keyOrder(kids[i], k, next); err != nil {
			return nil, err
		}
		running = max
	}
	if !branch && len(keys) > 0 {
		return keys[len(keys)-1], nil
	}
	return max, nil
}

func verifyKeyOrder(id uint64, i int, key, prev, hi []byte) error {
	switch {
	case i == 0 && prev != nil && bytes.Compare(prev, key) > 0:
		return damaged("page %d: its first key %x is below its parent's key %x", id, key, prev)
	case i > 0 && bytes.Compare(prev, key) >= 0:
		return damaged("page %d: key %d (%x) is not above the one before it (%x)", id, i, key, prev)
	case hi != nil && bytes.Compare(key, hi) >= 0:
		return damaged("page %d: key %d (%x) is not below its parent's next key %x", id, i, key, hi)
	}
	return nil
}

// consistency runs bbolt's check on a file the walker passed, in a
// goroutine of its own that turns a panic, or a fault reading the map (the
// file shrank meanwhile), into an error.
func consistency(path string) error {
	done := make(chan error, 1)
	go func() {
		debug.SetPanicOnFault(true)
		defer func() {
			if r := recover(); r != nil {
				done <- damaged("bbolt's check panicked: %v", r)
			}
		}()
		done <- txCheck(path)
	}()
	return <-done
}

func txCheck(path string) error {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if errors.Is(err, berrors.ErrTimeout) {
		return fmt.Errorf("%s is open in another process", path)
	}
	if err != nil {
		return damaged("bbolt cannot open it: %v", err)
	}
	defer db.Close()
	var problems []string
	n := 0
	err = db.View(func(tx *bolt.Tx) error {
		// Drain the channel: bbolt's checking goroutine holds the
		// transaction until it has sent every error.
		for err := range tx.Check() {
			if n++; len(problems) < 3 {
				problems = append(problems, err.Error())
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	msg := strings.Join(problems, "; ")
	if n > len(problems) {
		msg += fmt.Sprintf(" (and %d more)", n-len(problems))
	}
	return damaged("%s", msg)
}
