package reconcile

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/idemgate/idemgate/api"
)

// maxInputLine bounds one line of either input: an export line is a few
// hundred bytes, a statement's row rarely more; a file with a longer line
// is not one of them and is refused rather than read into memory whole.
const maxInputLine = 1 << 20

// readExport reads an export: every line one record, then the end
// line; an export without it (cut off, or failed part way) is refused,
// for a reconciliation over part of the records would report charges
// without records that have them.
func readExport(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--export: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxInputLine)
	var out []Record
	var end *api.ExportEnd
	for n := 1; sc.Scan(); n++ {
		if end != nil {
			return nil, fmt.Errorf("%s:%d: a line after the end line", path, n)
		}
		var l struct {
			api.ExportLine
			api.ExportEnd
		}
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			return nil, fmt.Errorf("%s:%d: not a line of a records export: %v", path, n, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("%s:%d: more than one JSON value on the line", path, n)
		}
		if l.End || l.Error != "" || (l.Key == "" && l.Scope == "") {
			e := l.ExportEnd
			end = &e
			continue
		}
		created, err := time.Parse(time.RFC3339Nano, l.CreatedAt)
		if err != nil || l.Scope == "" || l.Key == "" || l.State == "" {
			return nil, fmt.Errorf("%s:%d: a record needs scope, key, state and an RFC 3339 created_at", path, n)
		}
		out = append(out, Record{Scope: l.Scope, Tenant: l.Tenant, Key: l.Key, State: l.State, StatusCode: l.StatusCode,
			ReconcileID: l.ReconcileID, CreatedAt: created, fingerprint: l.Fingerprint})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w (a line longer than %d bytes is no export line)", path, err, maxInputLine)
	}
	switch {
	case end == nil:
		return nil, fmt.Errorf("%s: no end line: the export was cut off; fetch it again", path)
	case end.Error != "":
		return nil, fmt.Errorf("%s: the export failed part way: %s", path, end.Error)
	case !end.End || end.Records != int64(len(out)):
		return nil, fmt.Errorf("%s: the end line counts %d records, the file has %d", path, end.Records, len(out))
	}
	return out, nil
}

// lineLimit fails a read once a line grows past max bytes: csv.Reader
// reads a row whole, however long.
type lineLimit struct {
	r   *bufio.Reader
	max int
	cur int
}

func (l *lineLimit) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	for _, c := range p[:n] {
		if l.cur++; c == '\n' {
			l.cur = 0
		} else if l.cur > l.max {
			return 0, fmt.Errorf("a line longer than %d bytes", l.max)
		}
	}
	return n, err
}

// readLedger reads the statement: a header row naming the columns,
// then one charge per row, every row as many fields as the header.
func readLedger(path, keyCol, idCol string) ([]Charge, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--ledger: %w", err)
	}
	defer f.Close()
	cr := csv.NewReader(&lineLimit{r: bufio.NewReader(f), max: maxInputLine})
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("%s: empty; want a header row naming the columns", path)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	ki, ii := -1, -1
	for i, h := range header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")) // a spreadsheet's byte-order mark
		for _, c := range []struct {
			name string
			at   *int
		}{{keyCol, &ki}, {idCol, &ii}} {
			if c.name != "" && strings.EqualFold(h, c.name) {
				if *c.at >= 0 {
					return nil, fmt.Errorf("%s: the header names column %q twice", path, c.name)
				}
				*c.at = i
			}
		}
	}
	if ki < 0 {
		return nil, fmt.Errorf("%s: --ledger-key: no column %q in the header %q", path, keyCol, strings.Join(header, ","))
	}
	if idCol != "" && ii < 0 {
		return nil, fmt.Errorf("%s: --ledger-id: no column %q in the header %q", path, idCol, strings.Join(header, ","))
	}
	var out []Charge
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		line, _ := cr.FieldPos(0)
		r := Charge{Line: line, Key: strings.TrimSpace(rec[ki])}
		if ii >= 0 {
			r.ID = strings.TrimSpace(rec[ii])
		}
		out = append(out, r)
	}
}
