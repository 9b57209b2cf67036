package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Duration is a Go duration written as a string ("30s", "24h").
type Duration time.Duration

// UnmarshalYAML parses a Go duration. Its errors say what is wrong, not
// where: the caller knows the field and the line.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("want a duration such as 30s, 5m or 24h")
	}
	s := n.Value
	v, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || v < 0 {
		return fmt.Errorf("%q is not a duration (use 30s, 5m, 24h)", s)
	}
	*d = Duration(v)
	return nil
}

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Size is a byte count written as a number or with a unit (512KiB, 1MiB,
// 1MB, 2GiB).
type Size int64

// UnmarshalYAML parses a size; as Duration's, its errors say what, not
// where.
func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("want a size such as 1024, 512KiB or 1MiB")
	}
	v, err := ParseSize(n.Value)
	if err != nil {
		return err
	}
	*s = Size(v)
	return nil
}

var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1},
}

// ParseSize parses "1MiB", "512KB", "1024".
func ParseSize(raw string) (int64, error) {
	s := strings.TrimSpace(raw)
	mult := int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a size (use 1024, 512KiB, 1MiB)", raw)
	}
	return n * mult, nil
}
