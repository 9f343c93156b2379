package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

var (
	mdLink     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading  = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	htmlAnchor = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	inlineCode = regexp.MustCompile("`[^`]*`")
)

// slug is GitHub's anchor for a heading: lower case, letters, digits,
// '-', '_' and spaces kept (spaces become '-'), everything else dropped.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// mdAnchors reads the anchors a Markdown page offers: its headings' slugs
// (a repeated one numbered -1, -2 …, as GitHub does) and <a id="…">.
func mdAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	anchors, seen := map[string]bool{}, map[string]int{}
	fenced := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		if m := mdHeading.FindStringSubmatch(line); m != nil {
			s := slug(m[1])
			if n, dup := seen[s]; dup {
				seen[s] = n + 1
				s += "-" + strconv.Itoa(n+1)
			} else {
				seen[s] = 0
			}
			anchors[s] = true
		}
	}
	return anchors
}

// TestDocLinks: every relative link of README.md and docs/*.md names a
// file that exists and, with #anchor into a Markdown page, a heading (or
// <a id>) of that page, so a reader following one lands where it says.
func TestDocLinks(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	pages = append(pages, filepath.Join(root, "README.md"))
	anchors := map[string]map[string]bool{}
	for _, page := range pages {
		data, err := os.ReadFile(page)
		require.NoError(t, err)
		fenced := false
		for n, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				fenced = !fenced
				continue
			}
			if fenced {
				continue
			}
			for _, m := range mdLink.FindAllStringSubmatch(inlineCode.ReplaceAllString(line, ""), -1) {
				link := m[1]
				if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
					continue
				}
				where := filepath.Base(page) + ":" + strconv.Itoa(n+1) + ": " + link
				file, anchor, _ := strings.Cut(link, "#")
				target := page
				if file != "" {
					target = filepath.Join(filepath.Dir(page), file)
				}
				_, err := os.Stat(target)
				require.NoError(t, err, where)
				if anchor == "" || !strings.HasSuffix(target, ".md") {
					continue
				}
				if anchors[target] == nil {
					anchors[target] = mdAnchors(t, target)
				}
				require.True(t, anchors[target][anchor], "%s: no heading or <a id> %q in %s", where, anchor, filepath.Base(target))
			}
		}
	}
}
