package bench

import (
	"strings"
	"testing"
)

func TestRaceVerdict(t *testing.T) {
	tests := []struct {
		name  string
		tally raceTally
		ok    bool
		says  string
	}{
		{"exact", raceTally{wins: []int{1, 1}, attempts: 16, refused: 14, settled: 3}, true, "2 won, 14 refused, 3 lost answers settled"},
		{"a token won twice", raceTally{wins: []int{1, 2}, attempts: 16, refused: 13}, false, "token 1 won 2 times"},
		{"a token never won", raceTally{wins: []int{1, 0}, attempts: 16, refused: 15}, false, "token 1 won 0 times"},
		{"an answer never settled", raceTally{wins: []int{1, 1}, attempts: 16, refused: 13, unsettled: 1, firstError: "status 503"}, false, "1 unsettled; last error: status 503"},
		{"answers missing", raceTally{wins: []int{1, 1}, attempts: 16, refused: 10}, false, "10 refused"},
	}
	for _, tt := range tests {
		msg, ok := tt.tally.verdict()
		if ok != tt.ok || !strings.Contains(msg, tt.says) {
			t.Errorf("%s: verdict = %q, %v; want %v and %q", tt.name, msg, ok, tt.ok, tt.says)
		}
	}
}
