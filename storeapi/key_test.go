package storeapi

import (
	"bytes"
	"errors"
	"testing"
)

// TestCheckKVKey: a key is reserved exactly when its first byte is NUL,
// whatever follows and however long it is; a NUL anywhere else, or a byte
// next to NUL, is an ordinary key.
func TestCheckKVKey(t *testing.T) {
	huge := bytes.Repeat([]byte("k"), 1<<20)
	for _, tc := range []struct {
		name     string
		key      []byte
		reserved bool
	}{
		{"nil", nil, false},
		{"empty", []byte{}, false},
		{"plain", []byte("order-1"), false},
		{"NUL inside", []byte("a\x00b"), false},
		{"NUL last", []byte("a\x00"), false},
		{"0x01 first", []byte("\x01node/n1"), false},
		{"0xff first", []byte("\xffx"), false},
		{"huge", huge, false},
		{"NUL alone", []byte{0}, true},
		{"node record", []byte("\x00node/n1"), true},
		{"NUL NUL", []byte{0, 0}, true},
		{"huge reserved", append([]byte{0}, huge...), true},
	} {
		err := CheckKVKey(tc.key)
		if tc.reserved != errors.Is(err, ErrReservedKey) || (!tc.reserved && err != nil) {
			t.Errorf("%s: CheckKVKey = %v, want reserved %v", tc.name, err, tc.reserved)
		}
	}
}
