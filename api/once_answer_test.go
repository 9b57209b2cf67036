package api

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/idemgate/idemgate/internal/httpx"
)

// TestOnceAnswersAsEncodingJSON: the appended once answers are the bytes
// encoding/json writes for the struct and maps they replace (what the
// listener answered before), newline included.
func TestOnceAnswersAsEncodingJSON(t *testing.T) {
	marshal := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b) + "\n"
	}
	berlin := time.FixedZone("CET", 3600)
	times := []time.Time{
		{},
		time.Unix(0, 0),
		time.Unix(1767225600, 0), // whole seconds: no fraction
		time.Unix(1767225600, 120000000).In(berlin),     // trailing zeros of the fraction dropped
		time.Unix(1767225600, 123456789).In(time.Local), // in another zone: written in UTC
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
	}
	fences := []uint64{1, 42, math.MaxUint64}
	results := []*[]byte{nil, nonNil(nil), nonNil([]byte("sms-1-2")), nonNil([]byte{0, 0xff, '"', '<', '\\', 0x80})}
	for _, fence := range fences {
		for _, end := range times {
			for _, over := range []bool{false, true} {
				want := marshal(beginAnswer{State: "begun", Fence: fence, LeaseExpiresAt: httpx.RFC3339(end), TakenOver: over})
				if got := string(appendBeginAnswer(nil, "begun", fence, end, over, nil)); got != want {
					t.Errorf("begun answer = %s, want %s", got, want)
				}
			}
			want := marshal(map[string]any{"fence": fence, "lease_expires_at": httpx.RFC3339(end)})
			if got := string(appendHolderAnswer(nil, answerRenewed, fence, end)); got != want {
				t.Errorf("renew answer = %s, want %s", got, want)
			}
		}
		for _, r := range results {
			want := marshal(beginAnswer{State: "completed", Fence: fence, Result: r})
			if got := string(appendBeginAnswer(nil, "completed", fence, time.Time{}, false, r)); got != want {
				t.Errorf("completed answer = %s, want %s", got, want)
			}
		}
		if got, want := string(appendHolderAnswer(nil, answerCompleted, fence, time.Time{})), marshal(map[string]any{"state": "completed", "fence": fence}); got != want {
			t.Errorf("complete answer = %s, want %s", got, want)
		}
		if got, want := string(appendHolderAnswer(nil, answerReleased, fence, time.Time{})), marshal(map[string]any{"released": true, "fence": fence}); got != want {
			t.Errorf("release answer = %s, want %s", got, want)
		}
	}
}
