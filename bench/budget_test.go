package bench

import (
	"os"
	"testing"
)

// TestParsePerfCounts: perf stat -x, rows are summed; an event perf could
// not count, or no event at all, is "not counted" (-1), never zero.
func TestParsePerfCounts(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		want      int64
	}{
		{"three events", "# started on Tue Dec  1\n\n12,,syscalls:sys_enter_fsync,2000,100.00,,\n600,,syscalls:sys_enter_fdatasync,2000,100.00,,\n0,,syscalls:sys_enter_sync_file_range,2000,100.00,,\n", 612},
		{"not supported", "<not supported>,,syscalls:sys_enter_fsync,0,100.00,,\n", -1},
		{"not counted", "3,,syscalls:sys_enter_fsync,1,100.00,,\n<not counted>,,syscalls:sys_enter_fdatasync,0,0.00,,\n", -1},
		{"empty", "", -1},
		{"an error message", "Error:\nNo permission to enable syscalls:sys_enter_fsync event.\n", -1},
	} {
		if got := parsePerfCounts(tc.raw); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestProcCPU: this process's CPU from /proc/PID/stat is what getrusage
// says, to the 10 ms of a clock tick (and a little more for the time
// between the two reads).
func TestProcCPU(t *testing.T) {
	x := 0
	for i := 0; i < 50_000_000; i++ {
		x += i ^ x
	}
	_ = x
	got, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	want := readUsage().cpu
	if d := want - got; d < -20_000_000 || d > 100_000_000 {
		t.Errorf("/proc CPU %v, getrusage %v", got, want)
	}
	if _, err := procCPU(-5); err == nil {
		t.Error("a process that does not exist has no error")
	}
	if procWriteBytes(-5) != -1 {
		t.Error("a process that does not exist has write bytes")
	}
}
