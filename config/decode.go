package config

// The file is decoded by walking its YAML node tree beside File's types,
// not by yaml.v3's Decoder: the walk knows the field path of every value
// ("routes[0].ttl"), so an unknown field, a list where a mapping belongs or
// a word where a number belongs is reported with its path and line, and it
// records every path's line for the errors validation finds later.

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// maxValues bounds the values one file may expand to. Aliases let a small
// file name the same subtree many times (the "billion laughs"); no cluster
// file comes near this.
const maxValues = 100_000

type decoder struct {
	lines  map[string]int // field path → line of its key or list item
	values int            // values decoded so far, aliases expanded
}

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

// value decodes n into v, the field at path.
func (d *decoder) value(n *yaml.Node, v reflect.Value, path string) error {
	if err := d.count(path); err != nil {
		return err
	}
	line := n.Line
	if l, ok := d.lines[path]; ok {
		line = l // the key's line: "nodes:" rather than the mapping below it
	}
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil // left out, as yaml.v3 treats it: the zero value
	}
	t := v.Type()
	if reflect.PointerTo(t).Implements(unmarshalerType) || t.Kind() < reflect.Array || t.Kind() == reflect.String {
		return d.scalar(n, v, path, line)
	}
	switch t.Kind() {
	case reflect.Pointer:
		p := reflect.New(t.Elem())
		if err := d.value(n, p.Elem(), path); err != nil {
			return err
		}
		v.Set(p)
		return nil
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return &Error{Field: path, Line: line, Msg: "want a list ([a, b] or lines starting with \"- \"), not " + kindName(n)}
		}
		s := reflect.MakeSlice(t, len(n.Content), len(n.Content))
		for i, item := range n.Content {
			at := fmt.Sprintf("%s[%d]", path, i)
			d.lines[at] = item.Line
			if err := d.value(item, s.Index(i), at); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return &Error{Field: path, Line: line, Msg: "want a mapping (field: value), not " + kindName(n)}
		}
		return d.mapping(n, v, path, map[string]int{})
	}
	return &Error{Field: path, Line: line, Msg: fmt.Sprintf("no decoder for Go type %s (a bug in idemgate)", t)}
}

// count counts one more value decoded, at path, and refuses the file past
// maxValues, naming the outermost field being decoded (the alias that
// expands is in it; the value past the limit may be anywhere an anchor is).
func (d *decoder) count(path string) error {
	if d.values++; d.values <= maxValues {
		return nil
	}
	outer := path
	if i := strings.IndexByte(path, '.'); i >= 0 {
		outer = path[:i]
	}
	return &Error{Field: outer, Line: d.lines[outer], Msg: fmt.Sprintf("the file expands to more than %d values (aliases nested in aliases?)", maxValues)}
}

// mapping decodes the fields of mapping n into struct v; set holds the
// fields already set (and their lines), so that a field given twice is an
// error and a merged mapping ("<<: *defaults") only fills what n leaves out.
func (d *decoder) mapping(n *yaml.Node, v reflect.Value, path string, set map[string]int) error {
	fields := yamlFields(v.Type())
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merges = append(merges, val)
			continue
		}
		name := k.Value
		at := join(path, name)
		idx, ok := fields[name]
		if k.Kind != yaml.ScalarNode || !ok {
			if k.Kind != yaml.ScalarNode || !fieldNameRe.MatchString(name) {
				at = join(path, truncate(strconv.Quote(name)))
			}
			return &Error{Field: at, Line: k.Line, Msg: "unknown field (known here: " + strings.Join(fieldNames(v.Type()), ", ") + ")"}
		}
		if first, dup := set[name]; dup {
			return &Error{Field: at, Line: k.Line, Msg: fmt.Sprintf("set twice (first on line %d)", first)}
		}
		set[name] = k.Line
		if _, known := d.lines[at]; !known { // a merged field keeps the line of the key that set it
			d.lines[at] = k.Line
		}
		if err := d.value(val, v.Field(idx), at); err != nil {
			return err
		}
	}
	return d.merge(merges, v, path, set)
}

// merge applies YAML merge keys: each mapping named fills the fields not
// set yet, the first named winning, as yaml.v3 does.
func (d *decoder) merge(merges []*yaml.Node, v reflect.Value, path string, set map[string]int) error {
	for _, m := range merges {
		line := m.Line
		for m.Kind == yaml.AliasNode {
			m = m.Alias
		}
		sources := []*yaml.Node{m}
		if m.Kind == yaml.SequenceNode {
			sources = m.Content
		}
		for _, src := range sources {
			if err := d.count(path); err != nil {
				return err
			}
			for src.Kind == yaml.AliasNode {
				src = src.Alias
			}
			if src.Kind != yaml.MappingNode {
				return &Error{Field: path, Line: line, Msg: "<<: want a mapping or a list of mappings to merge, not " + kindName(src)}
			}
			if err := d.mergeOne(src, v, path, set); err != nil {
				return err
			}
		}
	}
	return nil
}

// mergeOne fills from mapping src the fields of v that are not set yet.
func (d *decoder) mergeOne(src *yaml.Node, v reflect.Value, path string, set map[string]int) error {
	own := map[string]int{}
	for name, line := range set {
		own[name] = line
	}
	// src's own fields are checked (unknown, twice) as any mapping's, into
	// a scratch value; only those v lacks are copied.
	scratch := reflect.New(v.Type()).Elem()
	given := map[string]int{}
	if err := d.mapping(src, scratch, path, given); err != nil {
		return err
	}
	fields := yamlFields(v.Type())
	for name, line := range given {
		if _, done := own[name]; done {
			continue
		}
		v.Field(fields[name]).Set(scratch.Field(fields[name]))
		set[name] = line
	}
	return nil
}

// scalar decodes a leaf value: a string, number, bool, or a type that
// parses itself (Duration, Size).
func (d *decoder) scalar(n *yaml.Node, v reflect.Value, path string, line int) error {
	want := describe(v.Type())
	if n.Kind != yaml.ScalarNode {
		return &Error{Field: path, Line: line, Msg: "want " + want + ", not " + kindName(n)}
	}
	if k := v.Kind(); k >= reflect.Int && k <= reflect.Uint64 && !reflect.PointerTo(v.Type()).Implements(unmarshalerType) && n.ShortTag() != "!!int" {
		// yaml.v3 would truncate 1.5 to 1; a count is whole.
		return &Error{Field: path, Line: line, Msg: fmt.Sprintf("%s: want %s", truncate(strconv.Quote(n.Value)), want)}
	}
	if err := n.Decode(v.Addr().Interface()); err != nil {
		if _, yamlErr := err.(*yaml.TypeError); yamlErr {
			return &Error{Field: path, Line: line, Msg: fmt.Sprintf("%s: want %s", truncate(strconv.Quote(n.Value)), want)}
		}
		return &Error{Field: path, Line: line, Msg: err.Error()}
	}
	return nil
}

// describe names what a value of type t is written as, for errors.
func describe(t reflect.Type) string {
	switch {
	case t == reflect.TypeFor[Duration]():
		return "a duration such as 30s, 5m or 24h"
	case t == reflect.TypeFor[Size]():
		return "a size such as 1024, 512KiB or 1MiB"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number, 0 or more"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	}
	return "a string"
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	}
	return truncate(strconv.Quote(n.Value))
}

// truncate keeps an error line short whatever the file holds.
func truncate(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

var fieldNameRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// yamlFields maps the yaml names of t's fields to their index; fields
// tagged "-" are not in the file.
func yamlFields(t reflect.Type) map[string]int {
	m := map[string]int{}
	for i := 0; i < t.NumField(); i++ {
		if name := yamlName(t.Field(i)); name != "" {
			m[name] = i
		}
	}
	return m
}

// fieldNames are t's yaml names in declaration order.
func fieldNames(t reflect.Type) []string {
	var names []string
	for i := 0; i < t.NumField(); i++ {
		if name := yamlName(t.Field(i)); name != "" {
			names = append(names, name)
		}
	}
	return names
}

func yamlName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "-" {
		return ""
	}
	if name == "" {
		return strings.ToLower(f.Name)
	}
	return name
}
