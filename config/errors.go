package config

import (
	"fmt"
	"strings"
)

// Error is a config error: the file, the line and the field path it is
// about, and what is wrong, printed on one line as a compiler would:
//
//	config: cluster.yaml:20: routes[0].ttl: "24hours" is not a duration (use 30s, 5m, 24h)
//
// File is empty for a file parsed from memory (Parse), Line is 0 where no
// line applies (a file too large to read, a flag), Field is empty for an
// error of the file as a whole (YAML syntax before any field).
type Error struct {
	File  string
	Line  int
	Field string
	Msg   string
	// at is the field whose line the error takes when Field is absent
	// from the file ("upstream" is required where "routes" is).
	at string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("config: ")
	switch {
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	case e.File != "":
		b.WriteString(e.File + ": ")
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	// One line whatever the message quotes: a person reads it, and serve
	// prints it as one line.
	b.WriteString(strings.Join(strings.Fields(e.Msg), " "))
	return b.String()
}

// Detail is err as a command prints it after its own name ("idemgate
// serve: cluster.yaml:20: routes[0].ttl: ..."): without the "config: "
// this package's errors begin with, which would say where the error came
// from twice.
func Detail(err error) string { return strings.TrimPrefix(err.Error(), "config: ") }

// fieldErr is a validation error about field; parse adds the file and the
// line.
func fieldErr(field, format string, args ...any) error {
	return &Error{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// fieldErrAt is fieldErr for a field the file may leave out: the error
// takes the line of the field at.
func fieldErrAt(field, at, format string, args ...any) error {
	return &Error{Field: field, Msg: fmt.Sprintf(format, args...), at: at}
}

// Errorf is an error about field of f (a path such as "tls.cert" or
// "nodes[1].listen"), with f's file name and the field's line: for checks
// made after parsing, by the packages that use the file.
func (f *File) Errorf(field, format string, args ...any) *Error {
	return &Error{File: f.Name, Line: f.lineOf(field), Field: field, Msg: fmt.Sprintf(format, args...)}
}

// lineOf is the line of a field path: the line of its key, or, for a field
// the file leaves out, of the nearest enclosing one it has ("routes[0]" for
// a missing "routes[0].path").
func (f *File) lineOf(path string) int {
	for p := path; p != ""; p = parentPath(p) {
		if l := f.lines[p]; l > 0 {
			return l
		}
	}
	return 0
}

// parentPath is the enclosing path: "routes[0].ttl" → "routes[0]" →
// "routes" → "".
func parentPath(p string) string {
	if strings.HasSuffix(p, "]") {
		if i := strings.LastIndexByte(p, '['); i >= 0 {
			return p[:i]
		}
	}
	if i := strings.LastIndexAny(p, ".["); i >= 0 {
		return p[:i]
	}
	return ""
}

// locate fills what err does not say yet of where it is: the file's name,
// and the line of its field (or of its at field). Errors other than *Error
// pass through.
func (f *File) locate(err error) error {
	ce, ok := err.(*Error)
	if !ok {
		return err
	}
	if ce.File == "" {
		ce.File = f.Name
	}
	if ce.Line == 0 {
		ce.Line = f.lineOf(ce.Field)
	}
	if ce.Line == 0 && ce.at != "" {
		ce.Line = f.lineOf(ce.at)
	}
	return ce
}
