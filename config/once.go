package config

import (
	"fmt"
	"time"
)

// Once configures once claims (POST /v1/once/{scope}/{key}/begin): how long
// each scope keeps a claim, its result with it, after its begin and again
// after its complete. The design article's guide: a form token 30m, a
// payment 24h, a general API 1h, a message consumed 7d, a scheduled job 30d.
type Once struct {
	// Retention is that of every scope the list does not name.
	Retention Duration    `yaml:"retention"`
	Scopes    []OnceScope `yaml:"scopes"`
}

// OnceScope is one scope's retention.
type OnceScope struct {
	Name      string   `yaml:"name"`
	Retention Duration `yaml:"retention"`
}

// DefaultOnceRetention is once.retention left out.
const DefaultOnceRetention = 24 * time.Hour

// MaxOnceRetention bounds a retention: a year, beyond which a claim is
// not a deduplication window but data to keep elsewhere.
const MaxOnceRetention = 366 * 24 * time.Hour

// RetentionOf is scope's retention; DefaultOnceRetention where the file
// was not validated (a File built in code leaves it zero).
func (o Once) RetentionOf(scope string) time.Duration {
	d := o.Retention.D()
	for _, s := range o.Scopes {
		if s.Name == scope {
			d = s.Retention.D()
		}
	}
	if d <= 0 {
		return DefaultOnceRetention
	}
	return d
}

func (o *Once) validate() error {
	if o.Retention == 0 {
		o.Retention = Duration(DefaultOnceRetention)
	}
	if err := checkRetention("once.retention", o.Retention); err != nil {
		return err
	}
	names := map[string]bool{}
	for i := range o.Scopes {
		s := &o.Scopes[i]
		at := fmt.Sprintf("once.scopes[%d]", i)
		if err := checkID(at+".name", s.Name); err != nil {
			return err
		}
		if names[s.Name] {
			return fieldErr(at+".name", "%q: named twice", s.Name)
		}
		names[s.Name] = true
		if s.Retention == 0 {
			s.Retention = o.Retention
		}
		if err := checkRetention(at+".retention", s.Retention); err != nil {
			return err
		}
	}
	return nil
}

func checkRetention(field string, d Duration) error {
	if d < 0 || d.D() > MaxOnceRetention || d.D() < time.Second {
		return fieldErr(field, "%s: want 1s to %s", d.D(), MaxOnceRetention)
	}
	return nil
}
