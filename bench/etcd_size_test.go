package bench

import (
	"fmt"
	"io"
	"testing"
)

// TestEtcdSize loads a real 3-member etcd twice, at two sizes: every member
// holds every key (EtcdSize checks it), and the larger load takes a larger
// database, before and after defragmentation.
func TestEtcdSize(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two 3-member etcd clusters")
	}
	bin, why := FindEtcd("auto", io.Discard)
	if bin == "" {
		t.Skip("no etcd: " + why)
	}
	small, err := EtcdSize(bin, EtcdSizeConfig{Keys: 300, Lease: true}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	large, err := EtcdSize(bin, EtcdSizeConfig{Keys: 20_000, Lease: true}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s%s", small, large)
	for i := range 3 {
		s, l := small.Loaded[i], large.Loaded[i]
		// The file itself starts at 16 MiB (etcd's initial size), so as
		// loaded only what is in use and the directory tell them apart.
		if l.DBInUse <= s.DBInUse || l.DirBytes <= s.DirBytes {
			t.Errorf("member %s: 20,000 keys take db %d (in use %d), dir %d; 300 keys %d (%d), %d: want more",
				s.Name, l.DBBytes, l.DBInUse, l.DirBytes, s.DBBytes, s.DBInUse, s.DirBytes)
		}
		// 20,000 values of 100 bytes are 2 MB however they are stored.
		if d := large.Defragmented[i]; d.DBBytes < 2_000_000 || d.DBInUse < 2_000_000 || d.DBBytes <= small.Defragmented[i].DBBytes {
			t.Errorf("member %s after defragmentation: db %d (in use %d) for 20,000 keys, %d for 300", s.Name, d.DBBytes, d.DBInUse, small.Defragmented[i].DBBytes)
		}
	}
}

// BenchmarkEtcdSize is etcd's side of "fsm.db ≤ 2× etcd's db": 1M keys of
// 100 bytes, without and with a lease, per member as loaded and after
// compaction and defragmentation. Run it once:
//
//	go test -run XXX -bench EtcdSize -benchtime 1x -timeout 30m ./bench
func BenchmarkEtcdSize(b *testing.B) {
	bin, why := FindEtcd("auto", io.Discard)
	if bin == "" {
		b.Skip("no etcd: " + why)
	}
	const keys = 1_000_000
	for _, lease := range []bool{false, true} {
		b.Run(fmt.Sprintf("keys=%d/lease=%v", keys, lease), func(b *testing.B) {
			for range b.N {
				r, err := EtcdSize(bin, EtcdSizeConfig{Keys: keys, Lease: lease}, io.Discard)
				if err != nil {
					b.Fatal(err)
				}
				b.Logf("\n%s", r)
				m, d := r.Loaded[0], r.Defragmented[0]
				b.ReportMetric(float64(m.DBBytes)/keys, "db-B/key")
				b.ReportMetric(float64(m.DBInUse)/keys, "inuse-B/key")
				b.ReportMetric(float64(d.DBBytes)/keys, "defrag-db-B/key")
				b.ReportMetric(float64(d.DirBytes)/keys, "defrag-dir-B/key")
				b.ReportMetric(r.LoadTime.Seconds(), "load-s")
			}
		})
	}
}
