package judgments

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Printable is s fit to print on one line: every rune that is not
// printable (strconv.IsPrint; the space excepted) — control characters
// (ESC, CR, LF, TAB, NUL, DEL, C1), bidirectional overrides and
// isolates, zero-width characters — and every byte that is not UTF-8 is
// written as its Go escape (\x1b, \r, \u202e, \xff). A server's text
// (an error body, a model name) printed on a terminal then cannot move
// the cursor, clear or retitle the screen, overwrite a line or reverse
// what follows; printable text, in any script, is kept as it is.
func Printable(s string) string {
	if isPrintable(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x` + strconv.FormatUint(uint64(s[i])|0x100, 16)[1:])
		case r == ' ' || strconv.IsPrint(r):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

func isPrintable(s string) bool {
	for _, r := range s {
		if r != ' ' && !strconv.IsPrint(r) {
			return false
		}
	}
	return true
}
