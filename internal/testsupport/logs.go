package testsupport

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Logs captures what a logger writes, safe beside the goroutines writing
// (a Buffer): give it to slog.NewJSONHandler and read the lines back.
type Logs struct{ Buffer }

// JSON is every line written so far, each decoded as a JSON object; a line
// that is not one is an error naming it.
func (l *Logs) JSON() ([]map[string]any, error) {
	var out []map[string]any
	for _, line := range strings.Split(l.String(), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			return nil, fmt.Errorf("not a JSON line: %q: %w", line, err)
		}
		out = append(out, m)
	}
	return out, nil
}

// Count is how many JSON lines have message msg and, for each pair of
// attrs (key, value), that attribute with that value (compared as
// fmt.Sprint renders it). Lines that are not JSON count for nothing.
func (l *Logs) Count(msg string, attrs ...string) int {
	lines, _ := l.JSON()
	n := 0
next:
	for _, m := range lines {
		if m["msg"] != msg {
			continue
		}
		for i := 0; i+1 < len(attrs); i += 2 {
			if v, ok := m[attrs[i]]; !ok || fmt.Sprint(v) != attrs[i+1] {
				continue next
			}
		}
		n++
	}
	return n
}
