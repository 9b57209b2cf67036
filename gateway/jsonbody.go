package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// A JSON body, read for a route with fingerprint: json or key: json:/...
// It is read into a tree once per request; the key is looked up in it and
// its canonical form is hashed.

// maxJSONDepth bounds the nesting of a JSON body: the tree is built by
// recursion, and no request body of an API nests deeper.
const maxJSONDepth = 64

// JSON body errors; the gateway answers each with 400 invalid-json.
var (
	errJSONDepth     = fmt.Errorf("the JSON body nests deeper than %d levels", maxJSONDepth)
	errJSONTrailing  = errors.New("the body holds more than one JSON value")
	errJSONEmpty     = errors.New("the body is empty, not JSON")
	errJSONKeyString = errors.New("the idempotency key in the JSON body is not a string")
)

// jsonNode is one value of a JSON body: an object (members, in the order
// sent), an array, or a scalar kept as its token (a json.Number keeps a
// number as written, so 1.0 and 1 differ, as they may to the upstream).
type jsonNode struct {
	kind    byte // '{', '[', or 0 for a scalar
	names   []string
	members []*jsonNode // of an object, beside names; of an array
	scalar  any         // string, json.Number, bool or nil
}

// parseJSONBody reads body as exactly one JSON value. An object that
// names a member twice is refused: parsers disagree on which one counts
// (encoding/json takes the last, others the first), so the upstream could
// act on a value the fingerprint and the key never saw.
func parseJSONBody(body []byte) (*jsonNode, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, errJSONEmpty
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	n, err := parseJSONValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errJSONTrailing
	}
	return n, nil
}

func parseJSONValue(dec *json.Decoder, depth int) (*jsonNode, error) {
	if depth > maxJSONDepth {
		return nil, errJSONDepth
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, jsonSyntaxErr(err)
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return &jsonNode{scalar: tok}, nil
	}
	n := &jsonNode{kind: byte(d)}
	switch d {
	case '{':
		seen := map[string]bool{}
		for dec.More() {
			nt, err := dec.Token()
			if err != nil {
				return nil, jsonSyntaxErr(err)
			}
			name := nt.(string) // the decoder yields only strings here
			if seen[name] {
				return nil, fmt.Errorf("the JSON body names member %.64q twice in one object", name)
			}
			seen[name] = true
			v, err := parseJSONValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			n.names, n.members = append(n.names, name), append(n.members, v)
		}
	case '[':
		for dec.More() {
			v, err := parseJSONValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			n.members = append(n.members, v)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return nil, jsonSyntaxErr(err)
	}
	return n, nil
}

// jsonSyntaxErr words a decoder error without quoting the body.
func jsonSyntaxErr(err error) error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("the body is not valid JSON (at byte %d)", se.Offset)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("the body is not valid JSON (it ends too early)")
	}
	return errors.New("the body is not valid JSON")
}

// lookup returns the value ptr (split reference tokens) points at, or nil.
func (n *jsonNode) lookup(ptr []string) *jsonNode {
	for _, tok := range ptr {
		if n == nil {
			return nil
		}
		n = n.child(tok)
	}
	return n
}

// child returns the member named tok of an object, or the element at
// index tok of an array (decimal, no leading zeros, as RFC 6901 says).
func (n *jsonNode) child(tok string) *jsonNode {
	switch n.kind {
	case '{':
		for i, name := range n.names {
			if name == tok {
				return n.members[i]
			}
		}
	case '[':
		if tok == "0" || (tok != "" && tok[0] != '0') {
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(n.members) {
				return n.members[i]
			}
		}
	}
	return nil
}
