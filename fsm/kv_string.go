package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// The string edits of Redis that depend on the value they change, each one
// command so that racing edits never lose one: SETRANGE and APPEND
// (kv_setrange), INCRBYFLOAT (kv_incrfloat). Both keep the key's lifetime.

// kvSetRange writes c.Value into the key's value at an offset (Body: the
// offset and the longest the value may become, 8 big-endian bytes each),
// padding with zero bytes, as Redis's SETRANGE does; with FlagRangeAppend
// the offset is the value's length (APPEND). An absent key is an empty
// value; nothing is written for an empty c.Value (but APPEND creates an
// absent key, empty, as Redis does). The result carries the
// value's new length (decimal, in Value); CodeTooLong when it would pass
// the bound, and nothing changed.
func (a *applier) kvSetRange(tx *bolt.Tx, c *Command, rev uint64) *Result {
	return a.kvSetRangeIn(boltKV{a, tx}, c, rev)
}

func (a *applier) kvSetRangeIn(kv kvStore, c *Command, rev uint64) *Result {
	off, limit := binary.BigEndian.Uint64(c.Body), binary.BigEndian.Uint64(c.Body[8:])
	old, exists, err := a.liveKV(kv, c.Key)
	if err != nil {
		return &Result{Code: CodeStorage}
	}
	if notString(old, exists) {
		return &Result{Code: CodeWrongType}
	}
	n := uint64(len(old.Value))
	if c.Flags&FlagRangeAppend != 0 {
		off = n
	}
	length := func(n uint64) []byte { return strconv.AppendUint(nil, n, 10) }
	if len(c.Value) == 0 && (exists || c.Flags&FlagRangeAppend == 0) { // APPEND of nothing still creates the key
		r := &Result{Code: CodeOK, Value: length(n)}
		if exists {
			r.Version, r.ExpiresAt = old.Version, old.ExpiresAt
		}
		return r
	}
	if off > limit || uint64(len(c.Value)) > limit-off {
		return &Result{Code: CodeTooLong}
	}
	v := make([]byte, max(n, off+uint64(len(c.Value))))
	copy(v, old.Value)
	copy(v[off:], c.Value)
	e := KVEntry{Version: rev, Created: rev, ExpiresAt: old.ExpiresAt, Value: v}
	return a.storeKV(kv, c.Key, &e, old, exists, length(uint64(len(v))))
}

// kvIncrFloat adds the increment in c.Value to the key's value (absent:
// 0), both read as C's strtold reads them, in the 80-bit long double
// arithmetic of Redis on x86-64 (a 64-bit mantissa), and stores the sum
// as Redis prints it (%.17Lf without trailing zeros), so every replica,
// and Redis, computes the same text. The result carries it (Value);
// CodeNotFloat for a value that is not a number, CodeNotFinite when the
// sum would be infinite or NaN; nothing changed then.
func (a *applier) kvIncrFloat(tx *bolt.Tx, c *Command, rev uint64) *Result {
	return a.kvIncrFloatIn(boltKV{a, tx}, c, rev)
}

func (a *applier) kvIncrFloatIn(kv kvStore, c *Command, rev uint64) *Result {
	old, exists, err := a.liveKV(kv, c.Key)
	if err != nil {
		return &Result{Code: CodeStorage}
	}
	if notString(old, exists) {
		return &Result{Code: CodeWrongType}
	}
	cur := new(big.Float).SetPrec(longDoublePrec)
	if exists {
		if cur, err = ParseLongDouble(old.Value); err != nil {
			return &Result{Code: CodeNotFloat}
		}
	}
	incr, err := ParseLongDouble(c.Value)
	if err != nil {
		return &Result{Code: CodeNotFloat}
	}
	sum, ok := addLongDouble(cur, incr)
	if !ok {
		return &Result{Code: CodeNotFinite}
	}
	e := KVEntry{Version: rev, Created: rev, ExpiresAt: old.ExpiresAt, Value: formatLongDouble(sum)}
	return a.storeKV(kv, c.Key, &e, old, exists, e.Value)
}

// The x87 long double: a 64-bit mantissa, binary exponents up to 16384
// (big.Float's: the mantissa in [0.5, 1)), subnormals down to 2^-16445.
const (
	longDoublePrec   = 64
	longDoubleMaxExp = 16384
	longDoubleMinExp = -16444
	maxFloatText     = 5*1024 - 1 // Redis's MAX_LONG_DOUBLE_CHARS, less its NUL
)

// strtold's syntax, whole: decimal or hexadecimal, or infinity (NaN is
// refused, as Redis refuses it).
var (
	decFloat = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)
	hexFloat = regexp.MustCompile(`^[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)([pP][+-]?[0-9]+)?$`)
	infFloat = regexp.MustCompile(`^[+-]?(?i:inf|infinity)$`)
)

// ParseLongDouble reads a number as Redis's string2ld does: strtold over
// all the bytes, refusing an empty argument, leading space, trailing
// bytes (a NUL included), NaN, and what overflows or underflows to zero;
// an infinity is read as one.
func ParseLongDouble(b []byte) (*big.Float, error) {
	if len(b) == 0 || len(b) > maxFloatText {
		return nil, ErrNotFloat
	}
	f := new(big.Float).SetPrec(longDoublePrec)
	s := string(b) // a NUL inside fails the patterns: strtold did not read it all
	switch {
	case infFloat.MatchString(s):
		return f.SetInf(s[0] == '-'), nil
	case decFloat.MatchString(s), hexFloat.MatchString(s):
	default:
		return nil, ErrNotFloat
	}
	if _, _, err := f.Parse(s, 0); err != nil {
		return nil, ErrNotFloat
	}
	if !inLongDouble(f) || (f.Sign() == 0 && nonZeroMantissa(s)) {
		return nil, ErrNotFloat // ERANGE: overflow, or underflow to zero
	}
	return f, nil
}

// nonZeroMantissa: the number s (decFloat or hexFloat) has a digit other
// than 0 before its exponent.
func nonZeroMantissa(s string) bool {
	s = strings.TrimLeft(s, "+-")
	exp := "eE"
	if len(s) > 1 && (s[1] == 'x' || s[1] == 'X') {
		s, exp = s[2:], "pP"
	}
	if i := strings.IndexAny(s, exp); i >= 0 {
		s = s[:i]
	}
	return strings.Trim(s, "0.") != ""
}

// inLongDouble: f, rounded to a long double, is finite and, unless zero,
// not rounded to zero.
func inLongDouble(f *big.Float) bool {
	if f.IsInf() || f.Sign() == 0 {
		return !f.IsInf()
	}
	exp := f.MantExp(nil)
	return exp <= longDoubleMaxExp && exp >= longDoubleMinExp
}

// addLongDouble is x + y rounded to a long double; false when the sum is
// infinite or NaN.
func addLongDouble(x, y *big.Float) (*big.Float, bool) {
	if x.IsInf() || y.IsInf() {
		return nil, false // inf, or inf - inf: NaN
	}
	z := new(big.Float).SetPrec(longDoublePrec).SetMode(big.ToNearestEven).Add(x, y)
	if z.Sign() != 0 && z.MantExp(nil) > longDoubleMaxExp {
		return nil, false
	}
	return z, true
}

// formatLongDouble prints f as Redis's ld2string does in its human mode:
// %.17Lf, then trailing zeros and a trailing point dropped, "-0" as "0".
func formatLongDouble(f *big.Float) []byte {
	b := []byte(f.Text('f', 17))
	b = bytes.TrimRight(b, "0")
	b = bytes.TrimSuffix(b, []byte("."))
	if string(b) == "-0" {
		b = []byte("0")
	}
	return b
}

func checkKVSetRange(c *Command) error {
	switch {
	case c.Flags&^FlagRangeAppend != 0:
		return errors.New("unknown setrange flags")
	case len(c.Body) != 16:
		return errors.New("a setrange's offset and bound are 16 bytes")
	}
	return nil
}

func checkKVIncrFloat(c *Command) error {
	if _, err := ParseLongDouble(c.Value); err != nil {
		return errors.New("the increment is not a number")
	}
	return nil
}
