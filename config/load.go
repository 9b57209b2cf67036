package config

// Reading a cluster file: its size, its bytes, its YAML, then its fields;
// every error names the file, the line and the field path.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// MaxFileSize bounds a cluster file: a larger one is refused before it is
// parsed (a cluster of hundreds of nodes and routes is a few hundred KiB).
const MaxFileSize = 1 << 20

// Load reads and validates the cluster file at path. Relative paths in the
// file (data_dir, tls, secret_file) are relative to its directory; errors
// name it as path is written.
func Load(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, &Error{File: path, Msg: pathErr(err)}
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, MaxFileSize+1))
	if err != nil {
		return nil, &Error{File: path, Msg: pathErr(err)}
	}
	if len(data) > MaxFileSize {
		return nil, &Error{File: path, Msg: fmt.Sprintf("the file is larger than %d bytes (1 MiB): is it the cluster file?", MaxFileSize)}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, &Error{File: path, Msg: pathErr(err)}
	}
	return parse(data, path, filepath.Dir(abs))
}

// pathErr is an I/O error without the path the caller prints already.
func pathErr(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// Parse parses and validates a cluster file held in memory; relative paths
// in it are relative to the working directory.
func Parse(data []byte) (*File, error) {
	if len(data) > MaxFileSize {
		return nil, &Error{Msg: fmt.Sprintf("the file is larger than %d bytes (1 MiB)", MaxFileSize)}
	}
	return parse(data, "", "")
}

func parse(data []byte, name, dir string) (*File, error) {
	f := &File{Name: name, Dir: dir, lines: map[string]int{}}
	root, err := readYAML(data)
	if err != nil {
		return nil, f.locate(err)
	}
	if root == nil {
		return nil, f.locate(fieldErr("nodes", "the file is empty: it describes the cluster, starting with nodes"))
	}
	if root.Kind != yaml.MappingNode {
		return nil, f.locate(&Error{Line: root.Line, Msg: "want a mapping of fields (nodes:, upstream:, routes: ...), not " + kindName(root)})
	}
	d := decoder{lines: f.lines}
	if err := d.mapping(root, reflect.ValueOf(f).Elem(), "", map[string]int{}); err != nil {
		return nil, f.locate(err)
	}
	if err := f.validate(); err != nil {
		return nil, f.locate(err)
	}
	return f, nil
}

// readYAML parses data into its one document's root node (nil for a file
// of comments only).
func readYAML(data []byte) (*yaml.Node, error) {
	if err := checkBytes(data); err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, syntaxErr(data, err)
	}
	var second yaml.Node
	if err := dec.Decode(&second); !errors.Is(err, io.EOF) {
		line := second.Line
		if err != nil {
			return nil, syntaxErr(data, err)
		}
		return nil, &Error{Line: line, Msg: "a second YAML document (after ---): the cluster file is one document"}
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	return doc.Content[0], nil
}

// checkBytes refuses what YAML does not allow, with its line and the field
// it is in (yaml.v3 says "control characters are not allowed" and not
// where).
func checkBytes(data []byte) error {
	line, col := 1, 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if badRune(r, size) {
			msg := fmt.Sprintf("control character %U at column %d: YAML allows none", r, col)
			if r == utf8.RuneError {
				msg = fmt.Sprintf("invalid UTF-8 (byte 0x%02x) at column %d: save the file as UTF-8", data[i], col)
			}
			return &Error{Line: line, Field: fieldAt(data, line, col), Msg: msg}
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += size
	}
	return nil
}

var (
	yamlLineRe = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
	// parserProblems are yaml.v3's parser errors (not its scanner's): it
	// counts their lines from 0.
	parserProblems = []string{"did not find expected ',' or ']'", "did not find expected ',' or '}'",
		"did not find expected <document start>", "did not find expected '-' indicator", "did not find expected key",
		"did not find expected node content", "found duplicate %YAML directive", "found incompatible YAML document",
		"found undefined tag handle", "found duplicate %TAG directive"}
	// keyRe is the field a line starts, "  - name:" or "routes:".
	keyRe = regexp.MustCompile(`^ *(?:- +)*[A-Za-z0-9_-]+:(?: |$)`)
)

// syntaxErr turns a yaml.v3 syntax error into an Error with its line and
// the field it is in, as far as the lines before it say.
func syntaxErr(data []byte, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 1 // yaml.v3 leaves the line out on the first one
	if m := yamlLineRe.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
		if slices.Contains(parserProblems, msg) {
			line++
		}
	}
	if text := lineText(data, line); strings.HasPrefix(strings.TrimLeft(text, " "), "\t") {
		msg += " (a tab: YAML indents with spaces)"
	}
	return &Error{Line: line, Field: fieldAt(data, line, 0), Msg: msg}
}

func lineText(data []byte, line int) string {
	lines := bytes.Split(data, []byte("\n"))
	if line < 1 || line > len(lines) {
		return ""
	}
	return string(lines[line-1])
}

// fieldAt is the path of the field a problem at line (and column, if not 0)
// is in, as far as the file says: for a bad byte, the file with its bad
// bytes replaced; for a syntax error, the lines above it, which parse on
// their own where the problem is the first. "" when they do not parse.
func fieldAt(data []byte, line, col int) string {
	if col > 0 {
		if p := lastField(repair(data), line, col); p != "" {
			return p
		}
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	if line < 1 || line > len(lines) {
		return ""
	}
	above := repair(bytes.Join(lines[:line-1], nil))
	// The field the problem line starts, when it starts one ("routes: [").
	if key := keyRe.Find(lines[line-1]); key != nil {
		withKey := append(append(append([]byte{}, above...), bytes.TrimRight(key, " ")...), '\n')
		if p := lastField(withKey, line, 0); p != "" {
			return p
		}
	}
	return lastField(above, line, 0)
}

// repair replaces what checkBytes refuses with '?'.
func repair(data []byte) []byte {
	out := make([]byte, 0, len(data))
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if badRune(r, size) {
			out = append(out, '?')
		} else {
			out = append(out, data[i:i+size]...)
		}
		i += size
	}
	return out
}

func badRune(r rune, size int) bool {
	return (r == utf8.RuneError && size == 1) || (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || (r >= 0x7f && r < 0xa0)
}

// lastField parses data and returns the path of its last field before
// (line, col).
func lastField(data []byte, line, col int) string {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return ""
	}
	last := ""
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				if k.Line > line || (k.Line == line && col > 0 && k.Column > col) {
					return
				}
				if !fieldNameRe.MatchString(k.Value) {
					return // no path to show
				}
				last = join(path, k.Value)
				walk(n.Content[i+1], last)
			}
		case yaml.SequenceNode:
			for i, item := range n.Content {
				if item.Line > line {
					return
				}
				last = fmt.Sprintf("%s[%d]", path, i)
				walk(item, last)
			}
		}
	}
	walk(doc.Content[0], "")
	return last
}
