package command

import (
	"bytes"
	"errors"
	"math/big"
	"regexp"
	"strings"
)

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

// AddLongDouble is x + y rounded to a long double; false when the sum is
// infinite or NaN.
func AddLongDouble(x, y *big.Float) (*big.Float, bool) {
	if x.IsInf() || y.IsInf() {
		return nil, false // inf, or inf - inf: NaN
	}
	z := new(big.Float).SetPrec(longDoublePrec).SetMode(big.ToNearestEven).Add(x, y)
	if z.Sign() != 0 && z.MantExp(nil) > longDoubleMaxExp {
		return nil, false
	}
	return z, true
}

// FormatLongDouble prints f as Redis's ld2string does in its human mode:
// %.17Lf, then trailing zeros and a trailing point dropped, "-0" as "0".
func FormatLongDouble(f *big.Float) []byte {
	b := []byte(f.Text('f', 17))
	b = bytes.TrimRight(b, "0")
	b = bytes.TrimSuffix(b, []byte("."))
	if string(b) == "-0" {
		b = []byte("0")
	}
	return b
}

// NewLongDouble is zero at a long double's precision.
func NewLongDouble() *big.Float { return new(big.Float).SetPrec(longDoublePrec) }
