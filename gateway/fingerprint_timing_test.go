package gateway

import (
	"strings"
	"testing"

	"github.com/idemgate/idemgate/config"
)

// BenchmarkFingerprint: what fingerprint: json costs over raw, per
// request, for a small and a 16 KiB order body. Run:
//
//	go test -run XXX -bench Fingerprint -benchmem ./gateway
func BenchmarkFingerprint(b *testing.B) {
	small := []byte(`{"amount":100,"currency":"eur","customer":"cus_42","meta":{"request_time":"2026-11-30T17:00:00Z"}}`)
	var items []string
	for i := range 200 {
		items = append(items, `{"sku":"sku-`+itoa(i)+`","qty":1,"price":1999,"note":"gift wrap"}`)
	}
	large := []byte(`{"customer":"cus_42","items":[` + strings.Join(items, ",") + `],"meta":{"request_time":"t"}}`)
	ignore, _ := config.ParsePointer("/meta/request_time")
	for _, body := range []struct {
		name string
		b    []byte
	}{{"small", small}, {"16KiB", large}} {
		b.Run("raw/"+body.name, func(b *testing.B) {
			b.SetBytes(int64(len(body.b)))
			for b.Loop() {
				fingerprint([]byte("POST"), []byte("/pay"), nil, nil, body.b)
			}
		})
		b.Run("json/"+body.name, func(b *testing.B) {
			b.SetBytes(int64(len(body.b)))
			for b.Loop() {
				n, err := parseJSONBody(body.b)
				if err != nil {
					b.Fatal(err)
				}
				fingerprint([]byte("POST"), []byte("/pay"), nil, nil, canonicalJSON(nil, n, [][]string{ignore}))
			}
		})
	}
}
