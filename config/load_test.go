package config

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestBadFiles loads every file in testdata/bad and checks the error names
// the file as it was given, the line and the field path its first line
// promises:
//
//	# want: LINE FIELD      (FIELD "-": the error is the file's, no field)
//	# node: ID              (optional: then CheckFiles(ID), the files a node reads)
func TestBadFiles(t *testing.T) {
	paths, err := filepath.Glob("testdata/bad/*.yaml")
	if err != nil || len(paths) < 20 {
		t.Fatalf("testdata/bad holds %d files (%v), want at least 20", len(paths), err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			line, field, node := wantOf(t, path)
			f, err := Load(path)
			if err == nil && node != "" {
				err = f.CheckFiles(node)
			}
			if err == nil {
				t.Fatalf("Load(%s) succeeded, want an error at line %d naming %q", path, line, field)
			}
			prefix := fmt.Sprintf("config: %s:%d: ", path, line)
			if field != "" {
				prefix += field + ": "
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, prefix) || strings.Contains(msg, "\n") || len(msg) <= len(prefix) {
				t.Fatalf("error = %q, want one line starting %q and saying what is wrong", msg, prefix)
			}
			var ce *Error
			if !errors.As(err, &ce) || ce.File != path || ce.Line != line || ce.Field != field {
				t.Fatalf("error = %#v, want *Error{File: %q, Line: %d, Field: %q}", err, path, line, field)
			}
		})
	}
}

func wantOf(t *testing.T, path string) (line int, field, node string) {
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Scan()
	want, ok := strings.CutPrefix(sc.Text(), "# want: ")
	lineText, field, _ := strings.Cut(want, " ")
	line, err = strconv.Atoi(lineText)
	if !ok || err != nil || field == "" {
		t.Fatalf("%s: first line %q, want \"# want: LINE FIELD\"", path, sc.Text())
	}
	if field == "-" {
		field = ""
	}
	sc.Scan()
	node, _ = strings.CutPrefix(sc.Text(), "# node: ")
	if !strings.HasPrefix(sc.Text(), "# node: ") {
		node = ""
	}
	return line, field, node
}

// TestHugeFile: a file over MaxFileSize is refused by its size, before it
// is parsed (no line or field applies).
func TestHugeFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.yaml")
	data := []byte(base + strings.Repeat("# padding, as a runaway generator might write it\n", MaxFileSize/48+1))
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	want := fmt.Sprintf("config: %s: the file is larger than %d bytes", path, MaxFileSize)
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("Load(huge) = %v, want %q...", err, want)
	}
	if _, err := Parse(data); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("Parse(huge) = %v, want it refused by size", err)
	}
}

// TestMissingFile: one line with the path and the reason.
func TestMissingFile(t *testing.T) {
	for _, path := range []string{"missing.yaml", filepath.Join(t.TempDir(), "nope", "cluster.yaml")} {
		_, err := Load(path)
		want := "config: " + path + ": no such file or directory"
		if err == nil || err.Error() != want {
			t.Errorf("Load(%s) = %v, want %q", path, err, want)
		}
	}
	if _, err := Load(t.TempDir()); err == nil || strings.Contains(err.Error(), "\n") {
		t.Errorf("Load(a directory) = %v, want one line", err)
	}
}

// TestStoreOnly: a file without upstream and routes is a cluster of the
// store and the API; listen is optional there (checked when given, and
// ignored); routes still need an upstream.
func TestStoreOnly(t *testing.T) {
	f, err := Parse([]byte("nodes:\n  - {id: n1, raft: '127.0.0.1:7001', api: '127.0.0.1:9001'}\n  - {id: n2, raft: '127.0.0.1:7002', api: '127.0.0.1:9002', listen: '127.0.0.1:8002'}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Gateway() || len(f.Routes) != 0 {
		t.Fatalf("store-only file: Gateway() = %v, routes = %v", f.Gateway(), f.Routes)
	}
	_, err = Parse([]byte("nodes: [{id: n1, raft: '127.0.0.1:7001', api: '127.0.0.1:9001', listen: 'nowhere'}]\n"))
	if err == nil || !strings.Contains(err.Error(), "line 1: nodes[0].listen: ") {
		t.Fatalf("a bad listen in a store-only file: %v, want it named", err)
	}
	_, err = Parse([]byte("nodes: [{id: n1, raft: '127.0.0.1:7001', api: '127.0.0.1:9001'}]\nupstream: http://127.0.0.1:3000\n"))
	if err == nil || !strings.Contains(err.Error(), "line 1: nodes[0].listen: address is required") {
		t.Fatalf("upstream without listen: %v, want nodes[0].listen required", err)
	}
}

// TestPathsRelativeToTheFile: data_dir, tls and secret_file in a file are
// relative to the file's directory, whatever the working directory; a file
// parsed from memory keeps them relative to the working directory.
func TestPathsRelativeToTheFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "etc", "secrets"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "etc", "secrets", "ops"), []byte("idg_0123456789abcdef0123\n"), 0o600)
	text := base + "data_dir: data/{id}\ntls: {ca: certs/ca.pem, cert: 'certs/{id}.pem', key: 'certs/{id}-key.pem'}\n" +
		"api: {tokens: [{name: ops, role: admin, secret_file: secrets/ops}]}\n"
	if err := os.WriteFile(filepath.Join(dir, "etc", "cluster.yaml"), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(dir, "elsewhere")
	os.Mkdir(elsewhere, 0o700)
	t.Chdir(elsewhere)
	f, err := Load("../etc/cluster.yaml") // relative to the working directory, as a user types it
	if err != nil {
		t.Fatal(err)
	}
	etc := filepath.Join(dir, "etc")
	for _, c := range []struct{ what, got, want string }{
		{"data_dir", f.DataDirFor("n1"), filepath.Join(etc, "data", "n1")},
		{"tls.ca", f.Path(f.TLS.CA, "n1"), filepath.Join(etc, "certs", "ca.pem")},
		{"tls.cert", f.Path(f.TLS.Cert, "n1"), filepath.Join(etc, "certs", "n1.pem")},
	} {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q (beside the file)", c.what, c.got, c.want)
		}
	}
	if f.API.Tokens[0].Hash == [32]byte{} {
		t.Error("secret_file was not read beside the file")
	}
	err = f.CheckFiles("n1")
	if want := "config: ../etc/cluster.yaml:5: tls.ca: " + filepath.Join(etc, "certs", "ca.pem") + ": no such file"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("CheckFiles = %v, want %q...", err, want)
	}
	mem, err := Parse([]byte(base + "data_dir: data/{id}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := mem.DataDirFor("n1"); got != "data/n1" {
		t.Errorf("Parse: data_dir = %q, want it relative to the working directory", got)
	}
}

// TestMergeKeys: YAML merge keys work as yaml.v3 has them: the mapping's
// own fields win, the merged ones fill the rest, and each field's line is
// where it is written.
func TestMergeKeys(t *testing.T) {
	f, err := Parse([]byte(base + `routes:
  - &pay {name: pay, path: /pay, ttl: 1h, on_in_flight: wait}
  - <<: *pay
    name: refund
    path: /refund
    bogus_after_merge: 1
`))
	if err == nil || !strings.Contains(err.Error(), "line 9: routes[1].bogus_after_merge: unknown field") {
		t.Fatalf("unknown field beside a merge: %v", err)
	}
	f, err = Parse([]byte(base + `routes:
  - &pay {name: pay, path: /pay, ttl: 1h, on_in_flight: wait}
  - <<: *pay
    name: refund
    path: /refund
    ttl: 2h
`))
	if err != nil {
		t.Fatal(err)
	}
	r := f.Routes[1]
	if r.Name != "refund" || r.Path != "/refund" || r.TTL.D().Hours() != 2 || r.OnInFlight != "wait" {
		t.Fatalf("merged route = %+v", r)
	}
	if f.lineOf("routes[1].ttl") != 9 || f.lineOf("routes[1].on_in_flight") != 5 {
		t.Fatalf("lines: ttl %d (want 9), on_in_flight %d (want 5)", f.lineOf("routes[1].ttl"), f.lineOf("routes[1].on_in_flight"))
	}
}
