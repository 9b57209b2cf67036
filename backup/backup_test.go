package backup

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/fsm"
)

// validBackup is a small backup file's bytes: a state machine of 20 keys,
// spooled as a one-node cluster's at term 1 (as bench's bulk path and the
// in-memory store write theirs).
func validBackup(t *testing.T) []byte {
	t.Helper()
	dir := t.TempDir()
	f, err := fsm.Open(fsm.Config{Path: filepath.Join(dir, "fsm.db"), NoSync: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := 1; i <= 20; i++ {
		c := command.KVSetCommand(command.KVSetRequest{Key: fmt.Appendf(nil, "k-%d", i), Value: fmt.Appendf(nil, "value-k-%d", i)})
		c.Stamp = time.Now().UnixNano() // what the leader would stamp
		if err, ok := f.Apply(&raft.Log{Index: uint64(i), Term: 1, Type: raft.LogCommand, Data: c.Encode(nil)}).(error); ok {
			t.Fatal(err)
		}
	}
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	b, err := Spool(dir, snap, Meta{Term: 1, Node: "n1", Servers: []Server{{ID: "n1", Raft: "127.0.0.1:1", Voter: true}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	out, err := io.ReadAll(b)
	if err != nil || int64(len(out)) != b.Size || b.Meta.Index != 20 {
		t.Fatalf("spooled %d of %d bytes at index %d, %v; want all of them at index 20", len(out), b.Size, b.Meta.Index, err)
	}
	return out
}

// oneVoter is the cluster the tests restore into: one node, which is
// never started here (nothing listens on its address).
var oneVoter = []Voter{{ID: "n1", RaftAddr: "127.0.0.1:1"}}

// TestBackupHostile: every damaged, truncated or foreign file is refused
// with ErrInvalid by Verify and by Restore, and a refused Restore
// leaves no trace: the data directory is not even created.
func TestBackupHostile(t *testing.T) {
	good := validBackup(t)
	metaLen := int(binary.BigEndian.Uint32(good[9:13]))
	firstChunk := headerLen + metaLen
	with := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	flip := func(at int) []byte { return with(func(b []byte) []byte { b[at] ^= 0x40; return b }) }
	random := make([]byte, 64<<10)
	rand.Read(random)
	type tc struct {
		name string
		file []byte
	}
	tests := []tc{
		{"empty", nil},
		{"random bytes", random},
		{"wrong magic", with(func(b []byte) []byte { copy(b, "IDGSNAP\x01"); return b })},
		{"wrong version", with(func(b []byte) []byte { b[8] = 2; return b })},
		{"metadata length 4 GiB", with(func(b []byte) []byte { binary.BigEndian.PutUint32(b[9:], 0xffffffff); return b })},
		{"metadata length 0", with(func(b []byte) []byte { binary.BigEndian.PutUint32(b[9:], 0); return b })},
		{"metadata longer than the file", with(func(b []byte) []byte { binary.BigEndian.PutUint32(b[9:], maxMetaBytes); return b })},
		{"chunk length 4 GiB", with(func(b []byte) []byte { binary.BigEndian.PutUint32(b[firstChunk:], 0xffffffff); return b })},
		{"chunk length one short", with(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[firstChunk:], binary.BigEndian.Uint32(b[firstChunk:])-1)
			return b
		})},
		{"end mark first", with(func(b []byte) []byte { binary.BigEndian.PutUint32(b[firstChunk:], 0); return b })},
		{"a byte after the checksum", append(append([]byte(nil), good...), 0)},
		{"the file twice", append(append([]byte(nil), good...), good...)},
		{"checksum zeroed", with(func(b []byte) []byte { copy(b[len(b)-32:], make([]byte, 32)); return b })},
		{"a snapshot of the state machine alone", good[firstChunk+4 : len(good)-36]},
		{"the metadata names another index", func() []byte {
			// A file whose checksum is right but whose metadata lies.
			br, _ := newReader(bytes.NewReader(good))
			payload, _ := io.ReadAll(br)
			meta := br.Meta
			meta.Index++
			return encodeBackup(t, meta, payload)
		}()},
	}
	for _, at := range []int{0, 8, 9, 12, 13, firstChunk - 1, firstChunk, firstChunk + 3, firstChunk + 4, firstChunk + 20, len(good) / 2, len(good) - 37, len(good) - 33, len(good) - 1} {
		tests = append(tests, tc{fmt.Sprintf("a flipped byte at %d of %d", at, len(good)), flip(at)})
	}
	for _, cut := range []int{1, 8, 12, 13, firstChunk - 1, firstChunk, firstChunk + 4, firstChunk + 100, len(good) / 2, len(good) - 36, len(good) - 32, len(good) - 1} {
		tests = append(tests, tc{fmt.Sprintf("truncated to %d of %d bytes", cut, len(good)), good[:cut]})
	}
	dir := t.TempDir()
	for i, tt := range tests {
		if _, _, err := Verify(bytes.NewReader(tt.file)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Verify = %v, want ErrInvalid", tt.name, err)
		}
		path := filepath.Join(dir, fmt.Sprintf("bad-%d.snap", i))
		if err := os.WriteFile(path, tt.file, 0o600); err != nil {
			t.Fatal(err)
		}
		dataDir := filepath.Join(dir, fmt.Sprintf("data-%d", i))
		if _, err := Restore(Config{NodeID: "n1", DataDir: dataDir}, path, oneVoter); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Restore = %v, want ErrInvalid", tt.name, err)
		}
		if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: a refused restore left %s behind (%v)", tt.name, dataDir, err)
		}
	}
	// The good file, for contrast, restores.
	path := filepath.Join(dir, "good.snap")
	os.WriteFile(path, good, 0o600)
	if _, err := Restore(Config{NodeID: "n1", DataDir: filepath.Join(dir, "data-good")}, path, oneVoter); err != nil {
		t.Fatalf("the good file: Restore = %v", err)
	}
}

// encodeBackup writes a backup file by the format's description (backup.go),
// independently of writer: meta as given, payload in chunks.
func encodeBackup(t *testing.T, meta Meta, payload []byte) []byte {
	t.Helper()
	js, err := json.Marshal(meta)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.WriteString("\x89IDGBAK\n")
	b.WriteByte(1)
	binary.Write(&b, binary.BigEndian, uint32(len(js)))
	b.Write(js)
	for len(payload) > 0 {
		n := min(len(payload), 1000)
		binary.Write(&b, binary.BigEndian, uint32(n))
		b.Write(payload[:n])
		payload = payload[n:]
	}
	b.Write([]byte{0, 0, 0, 0})
	sum := sha256.Sum256(b.Bytes())
	b.Write(sum[:])
	return b.Bytes()
}

// TestBackupFormatByHand: a file written by the format's description
// (encodeBackup), with chunks of another size than the writer's, reads
// back: the reader follows the description, not the writer's habits.
func TestBackupFormatByHand(t *testing.T) {
	good := validBackup(t)
	br, err := newReader(bytes.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	payload, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	meta, _, err := Verify(bytes.NewReader(encodeBackup(t, br.Meta, payload)))
	if err != nil || meta.Index != br.Meta.Index {
		t.Fatalf("Verify of the hand-written file = %+v, %v", meta, err)
	}
}

// FuzzVerifyBackup: no input makes the reader panic, allocate beyond its
// bounds, or accept a file whose checksum does not match.
func FuzzVerifyBackup(f *testing.F) {
	f.Add([]byte("\x89IDGBAK\n\x01\x00\x00\x00\x02{}\x00\x00\x00\x00"))
	f.Add([]byte("\x89IDGBAK\n\x01\xff\xff\xff\xff"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		meta, _, err := Verify(bytes.NewReader(b))
		if err == nil {
			// Only a file ending in the SHA-256 of the rest verifies.
			if len(b) < 32 || sha256.Sum256(b[:len(b)-32]) != [32]byte(b[len(b)-32:]) {
				t.Fatalf("accepted a file without a matching checksum (%+v)", meta)
			}
		}
	})
}
