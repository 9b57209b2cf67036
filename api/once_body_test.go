package api

import (
	"bytes"
	"encoding/json"
	"testing"
)

// decodeFenceBody is what the listener did with every holder's body
// before parseFenceBody: encoding/json, strict, nothing after the object.
func decodeFenceBody(b []byte) (fenceRequest, bool) {
	var req fenceRequest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if dec.Decode(&req) != nil || dec.More() {
		return req, false
	}
	return req, true
}

// FuzzFenceBody: whatever body parseFenceBody reads, encoding/json reads
// too, into the same fence and result (a result present or not alike).
func FuzzFenceBody(f *testing.F) {
	for _, s := range []string{
		`{"fence":1}`, `{"fence":7,"result":"c21zLTEtMg=="}`, `{"fence":7,"result":""}`,
		`{"fence":18446744073709551615,"result":"AA=="}` + "\n", `{"fence":18446744073709551616}`,
		`{"fence":07}`, `{"fence":0}`, `{"fence":1,"result":"AA"}`, `{"fence":1,"result":"A==="}`,
		`{"fence":1,"result":"\u0041A=="}`, `{"fence":1,"result":null}`, `{"fence":1} x`, `{"fence":1}{}`,
		`{"fence":1,"result":"AA==","x":1}`, `{"fence":1.0}`, `{"fence":-1}`, `{"fence":1e3}`, ` {"fence":1}`,
		`{"fence":1,"result":"AA==" }`, `{"fence":1,"result":"A\nA=="}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := parseFenceBody(b)
		if !ok {
			return
		}
		want, wok := decodeFenceBody(b)
		if !wok {
			t.Fatalf("parseFenceBody(%q) read a body encoding/json refuses", b)
		}
		if got.Fence == nil || want.Fence == nil || *got.Fence != *want.Fence {
			t.Fatalf("parseFenceBody(%q) fence = %v, encoding/json's %v", b, got.Fence, want.Fence)
		}
		if (got.Result == nil) != (want.Result == nil) || (got.Result != nil && !bytes.Equal(*got.Result, *want.Result)) {
			t.Fatalf("parseFenceBody(%q) result = %v, encoding/json's %v", b, got.Result, want.Result)
		}
	})
}

// TestFenceBodyShapes: the bodies clients send are read by parseFenceBody,
// not handed to the decoder.
func TestFenceBodyShapes(t *testing.T) {
	for _, s := range []string{`{"fence":1}`, `{"fence":7,"result":"c21zLTEtMg=="}`, `{"fence":7,"result":""}` + "\n"} {
		if _, ok := parseFenceBody([]byte(s)); !ok {
			t.Errorf("parseFenceBody(%q) = false, want it read", s)
		}
	}
}
