package config

import "fmt"

// maxFileDepth bounds how deep a run file nests: arrays and inline tables
// inside each other, and the segments of a dotted key or a table header.
// The deepest setting is two levels ([twin] profile, matrix.contexts);
// the TOML parser's cost grows with the square of the nesting (a 40 KB
// file of nested arrays took 59 s and 3.9 GB), so depth is refused before
// it parses, as JSON's is.
const maxFileDepth = 16

// checkDepth scans a TOML document once and fails at the first bracket,
// brace or key dot that goes deeper than maxFileDepth, with its line and
// column. Strings (basic, literal, multi-line) and comments are skipped;
// a dot between two digits is a number's. It does not validate syntax:
// the parser that runs after it does.
func checkDepth(data []byte) error {
	depth, dots := 0, 0
	line, col := 1, 0
	for i := 0; i < len(data); i++ {
		c := data[i]
		col++
		switch {
		case c == '\n':
			line, col, dots = line+1, 0, 0
		case c == '#':
			for i+1 < len(data) && data[i+1] != '\n' {
				i++
			}
		case c == '"' || c == '\'':
			end := skipString(data, i)
			for _, b := range data[i:end] {
				if b == '\n' {
					line, col = line+1, 0
				} else {
					col++
				}
			}
			i = end - 1
			col--
		case c == '[' || c == '{':
			if depth++; depth > maxFileDepth {
				return fmt.Errorf("%d:%d: nested deeper than %d levels (arrays and inline tables)", line, col, maxFileDepth)
			}
		case c == ']' || c == '}':
			depth--
		case c == '.' && !(i > 0 && isDigit(data[i-1]) && i+1 < len(data) && isDigit(data[i+1])):
			if dots++; dots >= maxFileDepth {
				return fmt.Errorf("%d:%d: a dotted key of more than %d parts", line, col, maxFileDepth)
			}
		}
	}
	return nil
}

// skipString returns the index just past the string that starts at i
// (data[i] is its quote), or len(data) when it never ends.
func skipString(data []byte, i int) int {
	q := data[i]
	multi := i+2 < len(data) && data[i+1] == q && data[i+2] == q
	j := i + 1
	if multi {
		j = i + 3
	}
	for ; j < len(data); j++ {
		switch {
		case q == '"' && data[j] == '\\':
			j++ // the escaped byte
		case data[j] == q && !multi:
			return j + 1
		case data[j] == q && j+2 < len(data) && data[j+1] == q && data[j+2] == q:
			return j + 3
		case data[j] == '\n' && !multi:
			return j // an unended string: the parser says so
		}
	}
	return len(data)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
