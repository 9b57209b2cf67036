package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// readmeMaxLines bounds README.md: the front door, with the topics on the
// docs/ pages it links.
const readmeMaxLines = 300

// performanceMaxLines bounds docs/performance.md: a reference (what to
// expect on which hardware, how to measure, the current rows with their
// commands, the budget); how a figure came about goes to a dated note in
// docs/experiments/ or to the CHANGELOG.
const performanceMaxLines = 400

// TestPerformancePage holds docs/performance.md to a reference's length.
func TestPerformancePage(t *testing.T) {
	text, err := os.ReadFile("docs/performance.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(text), "\n"); n > performanceMaxLines {
		t.Errorf("docs/performance.md has %d lines, want at most %d: move the record of experiments to a dated note in docs/experiments/", n, performanceMaxLines)
	}
}

// TestREADMEPages checks the shape of the documentation: README is short,
// opens with the demo and the test command, links every docs/ page, and
// every relative link of README and docs/ reaches a file and, with a
// #fragment, a heading of that page.
func TestREADMEPages(t *testing.T) {
	text, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(text), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, want at most %d: move the topic to its docs/ page", n, readmeMaxLines)
	}
	blocks, err := readmeBlocks("README.md", string(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) == 0 || len(blocks[0].lines) != 2 ||
		!strings.HasPrefix(blocks[0].lines[0], "go run . demo ") || !strings.HasPrefix(blocks[0].lines[1], "go test -race ./... ") {
		t.Errorf("README.md's first ```sh block must be `go run . demo` and `go test -race ./...`; it is %q", blocks[0].lines)
	}
	pages := readmePages(t)
	headings := map[string]map[string]bool{}
	for _, p := range pages {
		b, err := os.ReadFile(filepath.FromSlash(p))
		if err != nil {
			t.Fatal(err)
		}
		headings[p] = headingAnchors(string(b))
	}
	links := 0
	for _, p := range pages {
		b, _ := os.ReadFile(filepath.FromSlash(p))
		for _, l := range relativeLinks(string(b)) {
			links++
			for _, problem := range checkLink(p, l, headings) {
				t.Errorf("%s: link %q: %s", p, l, problem)
			}
		}
	}
	t.Logf("%d relative links checked in %d pages", links, len(pages))
	if links < 30 {
		t.Errorf("found only %d relative links in README and docs/: the scan is broken", links)
	}
}

var (
	markdownLinkRe = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)\)`)
	inlineCodeRe   = regexp.MustCompile("`[^`]*`")
)

// relativeLinks are the link targets of a page outside code (fenced or
// inline) that are not absolute URLs.
func relativeLinks(text string) []string {
	var out []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range markdownLinkRe.FindAllStringSubmatch(inlineCodeRe.ReplaceAllString(line, ""), -1) {
			if target := m[1]; !strings.Contains(target, "://") && !strings.HasPrefix(target, "mailto:") {
				out = append(out, target)
			}
		}
	}
	return out
}

// headingAnchors are the fragments GitHub gives a page's headings:
// lowercased, punctuation but - and _ dropped, spaces as -, a repeated
// one suffixed -1, -2.
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

// checkLink says what is wrong with a link of page: a file that does not
// exist, a fragment no heading of its page has.
func checkLink(page, link string, headings map[string]map[string]bool) []string {
	path, frag, _ := strings.Cut(link, "#")
	target := page
	if path != "" {
		target = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(page), path)))
		if _, err := os.Stat(filepath.FromSlash(target)); err != nil {
			return []string{fmt.Sprintf("%s does not exist", target)}
		}
	}
	if frag == "" {
		return nil
	}
	h, ok := headings[target]
	if !ok {
		return []string{fmt.Sprintf("a fragment into %s, which is not a page of README or docs/", target)}
	}
	if !h[frag] {
		return []string{fmt.Sprintf("%s has no heading #%s", target, frag)}
	}
	return nil
}

// TestREADMEPagesChecks checks the link checker on pages of its own, so a
// broken one cannot pass every link.
func TestREADMEPagesChecks(t *testing.T) {
	page := "# Title\n\n## `idemgate serve`\n\n## Backup, restore and recovery\n\n## The operator's commands\n\n## Twice\n\n## Twice\n\n" +
		"```sh\n# not a heading\n[x](nowhere.md)\n```\n" +
		"See [a](#idemgate-serve), `[b](in-code.md)` and <https://example.com>, [c](https://example.com/x).\n"
	h := headingAnchors(page)
	for _, want := range []string{"title", "idemgate-serve", "backup-restore-and-recovery", "the-operators-commands", "twice", "twice-1"} {
		if !h[want] {
			t.Errorf("headingAnchors: no %q in %v", want, h)
		}
	}
	if h["not-a-heading"] {
		t.Errorf("headingAnchors took a comment in a code block for a heading: %v", h)
	}
	if got := relativeLinks(page); len(got) != 1 || got[0] != "#idemgate-serve" {
		t.Errorf("relativeLinks = %q, want only #idemgate-serve", got)
	}
	headings := map[string]map[string]bool{"README.md": h, "docs/config.md": {"fields": true}}
	for _, tc := range []struct {
		link     string
		problems int
	}{
		{"#idemgate-serve", 0},
		{"#no-such-heading", 1},
		{"docs/config.md#fields", 0},
		{"docs/config.md#nothing", 1},
		{"docs/nowhere.md", 1},
		{"CHANGELOG.md", 0},
		{"CHANGELOG.md#x", 1},
	} {
		if got := checkLink("README.md", tc.link, headings); len(got) != tc.problems {
			t.Errorf("checkLink(README.md, %q) = %q, want %d problems", tc.link, got, tc.problems)
		}
	}
}
