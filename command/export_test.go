package command

import (
	"time"

	"github.com/idemgate/idemgate/ttl"
)

// Test-only views of the table for the external tests (package
// command_test), which apply commands with package fsm.

// ExtraFields reports the fields c sets that its row does not list.
func ExtraFields(c *Command) uint16 { return uint16(setFields(c) &^ c.Type.spec().uses) }

// WithJunk is c with every field its row does not list set to something
// valid that another command would read.
func WithJunk(c Command) Command { return withJunk(c, c.Type.spec().uses) }

// setFields is the set of c's fields that are not zero.
func setFields(c *Command) field {
	var f field
	for _, x := range []struct {
		set bool
		f   field
	}{
		{len(c.Key) > 0, fKey}, {len(c.Value) > 0, fValue}, {c.TTL != 0, fTTL}, {c.Timeout != 0, fTimeout},
		{c.Fence != 0, fFence}, {c.Version != 0, fVersion}, {c.Mode != 0, fMode}, {c.Flags != 0, fFlags},
		{c.Status != 0, fStatus}, {len(c.Headers) > 0, fHeaders}, {len(c.Body) > 0, fBody},
		{len(c.Entries) > 0, fEntries}, {len(c.DigestKey) > 0, fDigestKey}, {c.Window != 0, fWindow},
	} {
		if x.set {
			f |= x.f
		}
	}
	return f
}

// withJunk is c with every field it does not use set to something valid
// that another command would read.
func withJunk(c Command, uses field) Command {
	junk := Command{Key: []byte("junk"), Value: []byte("junk"), TTL: 3 * time.Hour, Timeout: 4 * time.Hour,
		Fence: 999, Version: 777, Mode: SetXX, Flags: 0x1f, Status: 299,
		Headers: []Header{{Name: []byte("X-Junk"), Value: []byte("j")}}, Body: []byte("junk"),
		Entries: []ttl.Entry{{Kind: ttl.KindKV, Key: []byte("k"), At: 1}}, DigestKey: []byte("junk"), Window: 7 * time.Minute}
	for _, x := range []struct {
		f   field
		set func()
	}{
		{fKey, func() { c.Key = junk.Key }}, {fValue, func() { c.Value = junk.Value }},
		{fTTL, func() { c.TTL = junk.TTL }}, {fTimeout, func() { c.Timeout = junk.Timeout }},
		{fFence, func() { c.Fence = junk.Fence }}, {fVersion, func() { c.Version = junk.Version }},
		{fMode, func() { c.Mode = junk.Mode }}, {fFlags, func() { c.Flags = junk.Flags }},
		{fStatus, func() { c.Status = junk.Status }}, {fHeaders, func() { c.Headers = junk.Headers }},
		{fBody, func() { c.Body = junk.Body }}, {fEntries, func() { c.Entries = junk.Entries }},
		{fDigestKey, func() { c.DigestKey = junk.DigestKey }}, {fWindow, func() { c.Window = junk.Window }},
	} {
		if uses&x.f == 0 {
			x.set()
		}
	}
	return c
}
