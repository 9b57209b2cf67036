package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/boltcheck"
	"github.com/idemgate/idemgate/ttl"
)

// Bucket names.
var (
	bucketMeta    = []byte("meta")
	bucketRecords = []byte("records")
	bucketTokens  = []byte("tokens")
	bucketKV      = []byte("kv")
	bucketReqIDs  = []byte("reqids")   // one child bucket per generation, see reqid.go
	bucketDigests = []byte("digests")  // digest key -> expiry (8) | record key, see suspect.go
	bucketSuspect = []byte("suspects") // revision (8) -> suspect entry, see suspect.go
	bucketOnce    = []byte("once")     // OnceKey(scope, key) -> claim, see once.go
	bucketLocks   = []byte("locks")    // lock name -> held lock, see lock.go
	bucketLockQ   = []byte("lockq")    // lock name, NUL, ticket (8) -> waiter, see lock.go
	allBuckets    = [][]byte{bucketMeta, bucketRecords, bucketTokens, bucketKV, bucketReqIDs, bucketDigests, bucketSuspect, bucketTTL, bucketRemoved, bucketOnce, bucketLapses, bucketLocks, bucketLockQ, bucketKVScan, bucketElems, bucketGraves}
	keyApplied    = []byte("applied")
	keyNow        = []byte("now")
	keyRev        = []byte("rev")
	keyFormat     = []byte("format")
	// currentFormat is the data file's format: 3 has the scan index ordered
	// by creation (kv_scan.go), which opening a file of format 1 (no index)
	// or 2 (an index ordered by hash) builds.
	currentFormat = []byte{3}
	formatNoScan  = []byte{1}
	formatHashed  = []byte{2}
)

// Config configures the state machine's data file.
type Config struct {
	// Path of the bbolt file.
	Path string
	// NoSync skips bbolt's fsync on commit. The Raft log is fsynced and
	// holds every entry, so nothing acknowledged depends on this file being
	// durable: a process crash keeps the page cache; after power loss the
	// file may be behind (Raft replays what it lacks, see the applied-index
	// skip) or torn. So a file not closed cleanly is checked on open, and a
	// damaged one is moved aside and rebuilt from the newest snapshot and
	// the log (package raftstore does the rebuild).
	NoSync bool
	// CommitEvery is how many log entries one transaction of the data
	// file gathers before it commits (amortised commits, commit.go): 0 or
	// 1 commits at the end of every batch Raft hands over.
	CommitEvery int
	// CommitInterval is how long, at most, an applied entry waits in an
	// open transaction before it commits (with CommitEvery above 1).
	CommitInterval time.Duration
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

// MaxCommitEvery bounds Config.CommitEvery.
const MaxCommitEvery = 1 << 20

// Validate checks the config.
func (c Config) Validate() error {
	if c.Path == "" {
		return errors.New("fsm: Path is empty")
	}
	if c.CommitEvery < 0 || c.CommitEvery > MaxCommitEvery {
		return fmt.Errorf("fsm: CommitEvery %d: want 0 to %d", c.CommitEvery, MaxCommitEvery)
	}
	if c.CommitEvery > 1 && (c.CommitInterval <= 0 || c.CommitInterval > time.Minute) {
		return fmt.Errorf("fsm: CommitInterval %s: want more than 0 and at most 1m with CommitEvery %d", c.CommitInterval, c.CommitEvery)
	}
	return nil
}

// FSM is the replicated state machine. It implements raft.BatchingFSM.
type FSM struct {
	cfg    Config
	logger *slog.Logger

	mu sync.RWMutex // guards db: Restore swaps it
	db *bolt.DB

	applied atomic.Uint64                     // last applied Raft index
	durable atomic.Uint64                     // the applied index the data file holds (commit.go)
	pend    pending                           // the write transaction kept open (commit.go)
	now     atomic.Int64                      // the state machine's clock
	rev     atomic.Uint64                     // the last command's revision (applier.nextRev)
	cluster atomic.Pointer[command.ClusterID] // the cluster's id, once given (cluster.go)
	graves  atomic.Int64                      // the graveyard's collections (grave.go)

	// Statistics for metrics; local, not replicated state.
	records [4]atomic.Int64 // by State
	expired [8]atomic.Int64 // by ttl.Kind

	// onRemove, if set, is told the keys of records removed by a batch,
	// after it commits (caches of completed records drop them).
	onRemove atomic.Pointer[func(keys [][]byte)]
	// onGrant, if set, is told the locks a batch granted, after it commits
	// (the waiters of this node's requests learn of their grant).
	onGrant atomic.Pointer[func(grants []command.LockGrant)]
	// kvObs, if set, is told the KV keys each batch changed (kvfeed.go);
	// feed is the apply goroutine's buffer of them.
	kvObs atomic.Pointer[kvObserverBox]
	feed  kvFeed

	failOnce sync.Once
	failed   chan struct{}
	failErr  atomic.Value
}

var _ raft.BatchingFSM = (*FSM)(nil)

// Open opens (creating if needed) the state machine's data file.
func Open(cfg Config) (*FSM, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	f := &FSM{cfg: cfg, logger: cfg.Logger, failed: make(chan struct{})}
	db, err := openChecked(cfg, cfg.Logger)
	if err != nil {
		return nil, err
	}
	f.db = db
	if err := f.load(); err != nil {
		db.Close()
		return nil, err
	}
	return f, nil
}

// initialMmapSize is the address space mapped for a data file from the
// start. bbolt remaps when the file outgrows its map, and a remap waits for
// every open read transaction: a snapshot or a backup of millions of keys
// holds one for seconds, and every write would wait with it. Mapped
// address space costs no memory until it is read (etcd maps 10 GB for the
// same reason); a file beyond it still works, bbolt remapping it as it grows. A
// variable only so that a test can make bbolt remap a small file.
var initialMmapSize = 8 << 30

// openDB opens (creating if needed) a data file that passed its check. A
// panic of bbolt's in this goroutine (a problem the check leaves to bbolt:
// keys out of order in a file too large for tx.Check) is returned as a
// *boltcheck.Damage.
func openDB(path string, noSync bool) (_ *bolt.DB, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("fsm: %w", err)
	}
	defer func() {
		if r := recover(); r != nil {
			err = &boltcheck.Damage{Problem: fmt.Sprintf("bbolt panicked opening it: %v", r)}
		}
	}()
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout:         time.Second,
		NoFreelistSync:  true,
		FreelistType:    bolt.FreelistMapType,
		NoSync:          noSync,
		NoGrowSync:      noSync, // bbolt fsyncs a file it grows, even with NoSync: a stall of every dirty page, for nothing the log does not hold
		InitialMmapSize: initialMmapSize,
	})
	if err != nil {
		return nil, fmt.Errorf("fsm: open %s: %w", path, err)
	}
	old := false
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bucketMeta)
		switch f := meta.Get(keyFormat); {
		case f == nil:
			return meta.Put(keyFormat, currentFormat)
		case string(f) == string(formatNoScan):
			old = true
		case string(f) == string(formatHashed):
			// Its index is in another order: emptied, and marked to be
			// built, at once (buildScanIndex).
			old = true
			if err := tx.DeleteBucket(bucketKVScan); err != nil {
				return err
			}
			if _, err := tx.CreateBucket(bucketKVScan); err != nil {
				return err
			}
			return meta.Put(keyFormat, formatNoScan)
		case string(f) != string(currentFormat):
			return fmt.Errorf("data format %v, and this build reads formats 1 to %d: a newer build wrote this file", f, currentFormat[0])
		}
		return nil
	})
	if err == nil && old {
		err = buildScanIndex(db)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("fsm: open %s: %w", path, err)
	}
	return db, nil
}

// load reads the persisted applied index and clock and recounts records.
func (f *FSM) load() error {
	return f.db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		f.applied.Store(getUint64(meta.Get(keyApplied)))
		f.durable.Store(f.applied.Load())
		f.now.Store(int64(getUint64(meta.Get(keyNow))))
		f.rev.Store(getUint64(meta.Get(keyRev)))
		f.loadClusterID(meta)
		f.graves.Store(countGraves(tx))
		var counts [4]int64
		err := tx.Bucket(bucketRecords).ForEach(func(k, v []byte) error {
			if len(v) > 1 && v[1] >= byte(command.StateInFlight) && v[1] <= byte(command.StateUnknown) {
				counts[v[1]]++
			}
			return nil
		})
		for i := range counts {
			f.records[i].Store(counts[i])
		}
		return err
	})
}

// Close writes the free list, syncs and closes the data file, and marks it
// closed cleanly.
func (f *FSM) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.db == nil {
		return nil
	}
	var err error
	f.pend.mu.Lock()
	if f.stopped() {
		f.dropPending()
	} else {
		err = f.commitPending()
	}
	if f.pend.timer != nil {
		f.pend.timer.Stop()
	}
	f.pend.mu.Unlock()
	if err == nil && !f.stopped() {
		err = writeFreelist(f.db)
	}
	if serr := f.db.Sync(); err == nil {
		err = serr
	}
	if cerr := f.db.Close(); err == nil {
		err = cerr
	}
	f.db = nil
	if err == nil && f.cfg.NoSync && !f.stopped() {
		err = writeFileSync(f.cfg.Path+cleanSuffix, strings.NewReader("closed cleanly\n"))
	}
	return err
}

// writeFreelist commits the file's free list once, so that the next open
// reads it instead of rebuilding it by walking every page (seconds per
// million keys from a cold disk). Every commit of a running node skips it
// (NoFreelistSync, a write per commit saved) and marks the file's list
// unsynced, so the open of a file left by a crash rebuilds the list.
func writeFreelist(db *bolt.DB) error {
	db.NoFreelistSync = false
	defer func() { db.NoFreelistSync = true }()
	if err := db.Update(func(*bolt.Tx) error { return nil }); err != nil {
		return fmt.Errorf("fsm: write the free list: %w", err)
	}
	return nil
}

// AppliedIndex is the last Raft index applied: every read sees it. It is
// in the data file once its transaction commits (DurableIndex).
func (f *FSM) AppliedIndex() uint64 { return f.applied.Load() }

// Now is the state machine's clock (unix nanoseconds): the largest leader
// stamp applied so far.
func (f *FSM) Now() int64 { return f.now.Load() }

// Failed is closed when the state machine could not commit to its data file
// and stopped applying. The node must stop; a restart replays the log.
func (f *FSM) Failed() <-chan struct{} { return f.failed }

// FailErr is the error that made the state machine stop, or nil.
func (f *FSM) FailErr() error {
	if err, ok := f.failErr.Load().(error); ok {
		return err
	}
	return nil
}

func (f *FSM) fail(err error) {
	f.failOnce.Do(func() {
		f.failErr.Store(err)
		f.logger.Error("state machine stopped: cannot commit", "error", err)
		close(f.failed)
	})
}

// SetRecordObserver registers fn to be told, after each commit, the keys of
// records that batch removed (released, expired, taken over). It runs on
// the apply path: it must be quick and must not call back into the FSM.
func (f *FSM) SetRecordObserver(fn func(keys [][]byte)) { f.onRemove.Store(&fn) }

// RecordCount returns how many records are stored in state s.
func (f *FSM) RecordCount(s command.State) int64 {
	if s < command.StateInFlight || s > command.StateUnknown {
		return 0
	}
	return f.records[s].Load()
}

// ExpiredCount returns how many entries of kind k this replica has expired.
func (f *FSM) ExpiredCount(k ttl.Kind) int64 {
	if !k.Valid() {
		return 0
	}
	return f.expired[k].Load()
}

// Apply applies one committed log. Prefer ApplyBatch.
func (f *FSM) Apply(l *raft.Log) interface{} {
	return f.ApplyBatch([]*raft.Log{l})[0]
}

// ApplyBatch applies committed logs in one bbolt transaction, which
// commits at the end of the batch, or, with amortised commits
// (Config.CommitEvery, commit.go), once enough entries or time have gone
// into it. Each response is a *Result, or nil for logs that are not
// commands or were applied before a restart.
func (f *FSM) ApplyBatch(logs []*raft.Log) []interface{} {
	out := make([]interface{}, len(logs))
	if f.stopped() {
		return storageFailure(out)
	}
	f.mu.RLock()
	defer f.mu.RUnlock()

	a := applier{f: f, now: f.now.Load(), applied: f.applied.Load(), rev: f.rev.Load()}
	var delta [4]int64
	var expired [8]int64
	a.recordDelta, a.expiredDelta = &delta, &expired
	a.kvStart()
	f.pend.mu.Lock()
	tx, fresh, err := f.writeTx()
	if err != nil {
		f.pend.mu.Unlock()
		f.fail(err)
		return storageFailure(out)
	}
	last, n, size := a.applied, 0, 0
	for i, l := range logs {
		if l.Index <= a.applied && !mutantNoAppliedIndexSkip {
			continue // applied before a restart (hashicorp/raft #523)
		}
		last = l.Index
		n++
		size += len(l.Data)
		if l.Type != raft.LogCommand {
			continue
		}
		a.dropped = 0 // the budget is an entry's, whatever the batch (grave.go)
		out[i] = a.applyEntry(tx, l)
	}
	if last == a.applied {
		if fresh {
			tx.Rollback()
		}
		f.pend.mu.Unlock()
		return out
	}
	if err := a.putMeta(tx, last); err != nil {
		f.pend.tx = tx
		f.dropPending()
		f.fail(err)
	} else {
		f.settle(tx, n, size, last) // a failed commit stops the state machine
	}
	f.pend.mu.Unlock()
	if f.stopped() {
		return storageFailure(out)
	}
	f.applied.Store(last)
	f.now.Store(a.now)
	f.rev.Store(a.rev)
	f.graves.Add(a.graveDelta)
	if !a.clusterSet.IsZero() {
		f.cluster.Store(&a.clusterSet)
	}
	if fn := f.onRemove.Load(); fn != nil && len(a.removed) > 0 {
		(*fn)(a.removed)
	}
	if fn := f.onGrant.Load(); fn != nil && len(a.grants) > 0 {
		(*fn)(a.grants)
	}
	a.kvFinish()
	for i := range delta {
		f.records[i].Add(delta[i])
	}
	for i := range expired {
		f.expired[i].Add(expired[i])
	}
	return out
}

func (f *FSM) stopped() bool {
	select {
	case <-f.failed:
		return true
	default:
		return false
	}
}

func storageFailure(out []interface{}) []interface{} {
	for i := range out {
		out[i] = &command.Result{Code: command.CodeStorage}
	}
	return out
}

// applier holds the state of one batch's transaction.
type applier struct {
	f            *FSM
	now          int64
	applied      uint64
	rev          uint64 // the last revision given (nextRev)
	recordDelta  *[4]int64
	expiredDelta *[8]int64
	cmd          command.Command
	removed      [][]byte            // keys of records removed in this batch
	grants       []command.LockGrant // locks granted in this batch
	gens         *bolt.Bucket        // the request-id generations' parent, once opened
	gen          *bolt.Bucket        // the current generation, once opened
	genNo        int64
	clusterSet   command.ClusterID // the cluster id this batch gave, if it did
	readOnly     bool              // a read of the applied state (ReadTx), in a read-only transaction
	cursors      []*bolt.Cursor
	// The KV feed (kvfeed.go): someone listened when the batch began;
	// every key changed was to be told; how many KV changes it made.
	kvWatch, kvAll bool
	kvCount        int
	// The graveyard (grave.go): the element entries this log entry has
	// dropped at once; the collections this batch buried less those it
	// reclaimed.
	dropped    uint64
	graveDelta int64
}

// cursor returns the batch's cursor on b. bbolt gives every Get a cursor
// of its own, whose stack grows from nothing on every descent: an
// allocation or two per level of the tree, for each read of each command.
// One cursor per bucket, repositioned by Seek (which restarts from the
// bucket's root, so it sees the batch's own writes), reuses its stack.
func (a *applier) cursor(b *bolt.Bucket) *bolt.Cursor {
	for _, c := range a.cursors {
		if c.Bucket() == b {
			return c
		}
	}
	c := b.Cursor()
	a.cursors = append(a.cursors, c)
	return c
}

// get is b.Get(key) through the batch's cursor on b: the value under key,
// or nil (no such key, or a nested bucket's).
func (a *applier) get(b *bolt.Bucket, key []byte) []byte {
	k, v := a.cursor(b).Seek(key)
	if !bytes.Equal(k, key) {
		return nil
	}
	return v
}

// applyEntry applies one command entry: a command, or a batch of them.
func (a *applier) applyEntry(tx *bolt.Tx, l *raft.Log) interface{} {
	if !IsBatch(l.Data) {
		return a.applyOne(tx, l.Data, a.nextRev(l.Index))
	}
	cmds, err := splitBatch(l.Data)
	if err != nil {
		return &command.Result{Code: command.CodeBadCommand}
	}
	out := make(Results, len(cmds))
	for i, data := range cmds {
		out[i] = a.applyOne(tx, data, a.nextRev(l.Index))
	}
	return out
}

// nextRev is the revision of the next command, in the entry at index: its
// KV version, its record's fencing token, its suspect's id. Unique and
// increasing: the entry's index when the previous command's revision is
// below it (always, for entries of one command, so a log of such entries
// gives every command its entry's index), else one more than
// the previous one (the second and later commands of a batch, and the
// entries after it until the indexes catch up).
func (a *applier) nextRev(index uint64) uint64 {
	a.rev = max(index, a.rev+1)
	return a.rev
}

func (a *applier) applyOne(tx *bolt.Tx, data []byte, rev uint64) *command.Result {
	c := &a.cmd
	if err := command.Decode(data, c); err != nil {
		return &command.Result{Code: command.CodeBadCommand}
	}
	if c.Stamp > a.now {
		a.now = c.Stamp
	}
	if mutantWallClockInApply {
		a.now = time.Now().UnixNano()
	}
	// What changes nothing when applied twice is not remembered (the
	// command table says which).
	spec := &commands[c.Type]
	dedup := !c.ReqID.IsZero() && spec.remembered && (spec.settled == nil || !spec.settled(c))
	if dedup {
		if r := a.recall(tx, c.ReqID); r != nil {
			return r
		}
	}
	r := spec.apply(a, tx, c, rev)
	if dedup {
		if err := a.remember(tx, c.ReqID, r); err != nil {
			return &command.Result{Code: command.CodeStorage}
		}
	}
	return r
}

// noop is TypeNoop's apply: the stamp moved the clock, and a step of the
// graveyard's elements is reclaimed (grave.go); nothing a reader sees
// changes.
func (a *applier) noop(tx *bolt.Tx, _ *command.Command, _ uint64) *command.Result {
	if err := a.reclaim(tx); err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	return &command.Result{Code: command.CodeOK}
}

func (a *applier) putMeta(tx *bolt.Tx, applied uint64) error {
	meta := tx.Bucket(bucketMeta)
	if err := meta.Put(keyApplied, binary.BigEndian.AppendUint64(nil, applied)); err != nil {
		return err
	}
	if err := meta.Put(keyRev, binary.BigEndian.AppendUint64(nil, a.rev)); err != nil {
		return err
	}
	return meta.Put(keyNow, binary.BigEndian.AppendUint64(nil, uint64(a.now)))
}

// expiry turns a TTL into an absolute expiry on the state machine's clock.
func (a *applier) expiry(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return a.now + int64(d)
}

func getUint64(b []byte) uint64 {
	if len(b) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}
