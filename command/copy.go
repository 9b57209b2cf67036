package command

// Bytes read from bbolt are valid only for the life of the transaction that
// read them: when the file grows bbolt unmaps and remaps it (touching the old
// mapping then faults), and pages freed by one transaction are reused by a
// later one (the old bytes silently become another key's). So nothing this
// package returns may alias them. Every reader decodes what it got from
// bbolt (the decoders alias their input, which keeps wire decoding cheap)
// and then calls the type's Clone before the value leaves the transaction.
// TestReadsDoNotAliasTheMap checks every exported read for it.

// Clone returns a deep copy of r whose slices share no memory with r's: one
// allocation holds all of its bytes.
func (r *Record) Clone() *Record {
	if r == nil {
		return nil
	}
	c := *r
	n := len(r.Fingerprint) + len(r.Body)
	for _, h := range r.Headers {
		n += len(h.Name) + len(h.Value)
	}
	buf := make([]byte, 0, n)
	c.Fingerprint, buf = carve(buf, r.Fingerprint)
	if r.Headers != nil {
		c.Headers = make([]Header, len(r.Headers))
		for i, h := range r.Headers {
			c.Headers[i].Name, buf = carve(buf, h.Name)
			c.Headers[i].Value, buf = carve(buf, h.Value)
		}
	}
	c.Body, _ = carve(buf, r.Body)
	return &c
}

// Clone returns a deep copy of r, its Record included.
func (r *Result) Clone() *Result {
	if r == nil {
		return nil
	}
	c := *r
	buf := make([]byte, 0, len(r.Value)+len(r.Suspect))
	c.Value, buf = carve(buf, r.Value)
	c.Suspect, _ = carve(buf, r.Suspect)
	c.Record = r.Record.Clone()
	return &c
}

// Clone returns a copy of e with a Value of its own.
func (e KVEntry) Clone() KVEntry {
	e.Value, _ = carve(nil, e.Value)
	return e
}

// Clone returns a copy of s with keys of their own.
func (s Suspect) Clone() Suspect {
	buf := make([]byte, 0, len(s.Key)+len(s.Earlier))
	s.Key, buf = carve(buf, s.Key)
	s.Earlier, _ = carve(buf, s.Earlier)
	return s
}

// carve appends b to buf and returns the appended part, capped so that an
// append to it cannot run into the next part, and the grown buf. buf must
// have room for b (so it is never reallocated under earlier parts); nil
// stays nil, so a copy decodes and encodes exactly as its original.
func carve(buf, b []byte) (part, grown []byte) {
	if b == nil {
		return nil, buf
	}
	if buf == nil {
		buf = make([]byte, 0, len(b))
	}
	start := len(buf)
	buf = append(buf, b...)
	return buf[start:len(buf):len(buf)], buf
}
