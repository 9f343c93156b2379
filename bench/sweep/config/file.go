package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"
)

// maxFileBytes bounds a run file: settings are a few hundred bytes.
const maxFileBytes = 1 << 20

// File reads the run file at path (TOML) and applies what it states. Keys
// are the settings' file keys (README, "Run file"); a value may be a
// string, a number, a boolean or, for a list, an array; a blank value
// means "not said here", as in the environment. An unknown key is an
// error naming it, and so is the API key: secrets come from the
// environment only.
func File(path string) Source {
	return func(c *Config) error {
		values, err := readFile(path)
		if err != nil {
			return err
		}
		return applyFile(c, path, values)
	}
}

// applyFile sets what a run file's values (dotted keys) state on c.
func applyFile(c *Config, path string, values map[string]any) error {
	byKey := fileKeys()
	var errs []error
	for _, key := range sortedKeys(values) {
		s, ok := byKey[key]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: %s", path, unknownKey(key)))
			continue
		}
		v, err := fileText(values[key], s.sep)
		if err == nil && !isBlank(v) {
			err = s.set(c, v)
		}
		if err != nil {
			shown := values[key]
			if s.redact != nil {
				shown = redactValue(shown, s.redact)
			}
			errs = append(errs, fmt.Errorf("%s: %s = %s: %w", path, key, showValue(shown), err))
		}
	}
	c.File = path
	return errors.Join(errs...)
}

// fileKeys are the settings a run file may hold, by key (the table is
// built once: it is the same for every file).
var fileKeys = sync.OnceValue(func() map[string]setting {
	byKey := map[string]setting{}
	for _, s := range settings() {
		if s.key != "" {
			byKey[s.key] = s
		}
	}
	return byKey
})

// redactValue is a file value fit for an error: a string redacted, and so
// is each string of an array (a list of endpoints).
func redactValue(v any, redact func(string) string) any {
	switch x := v.(type) {
	case string:
		return redact(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = redactValue(e, redact)
		}
		return out
	}
	return v
}

// readFile parses the file into dotted keys ("twin.profile") and values.
func readFile(path string) (map[string]any, error) {
	// Only a regular file: a named pipe would block the open forever.
	if fi, err := os.Stat(path); err != nil {
		if pe, ok := err.(*fs.PathError); ok {
			pe.Op = "open" // what was asked
		}
		return nil, fmt.Errorf("run file: %w", err)
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("run file %s: not a regular file (%s)", path, fi.Mode().Type())
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("run file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("run file %s: %w", path, err)
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("run file %s: larger than %d bytes", path, maxFileBytes)
	}
	return parseFile(path, data)
}

// parseFile parses a run file's text into dotted keys and values, its
// nesting checked before the TOML parser sees it.
func parseFile(path string, data []byte) (map[string]any, error) {
	if err := checkDepth(data); err != nil {
		return nil, fmt.Errorf("run file %s:%w", path, err)
	}
	var doc map[string]any
	if _, err := toml.Decode(string(data), &doc); err != nil {
		return nil, fmt.Errorf("run file %s: %w", path, err)
	}
	out := map[string]any{}
	flatten("", doc, out)
	return out, nil
}

func flatten(prefix string, m map[string]any, out map[string]any) {
	for k, v := range m {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		if t, ok := v.(map[string]any); ok {
			flatten(key, t, out)
			continue
		}
		out[key] = v
	}
}

// unknownKey says what is wrong with a key no setting has, and names the
// keys its table does have.
func unknownKey(key string) string {
	switch key {
	case "api_key", "target.api_key":
		return fmt.Sprintf("%s: the API key is never read from a file; set %s", key, EnvAPIKey)
	case "force":
		return fmt.Sprintf("force: never kept in a file; pass -force (or %s=1, make bench FORCE=1) each time", EnvForce)
	case "config":
		return "config: a run file cannot name another"
	}
	table, _, dotted := strings.Cut(key, ".")
	if !dotted {
		table = ""
	}
	var known []string
	for _, s := range settings() {
		t, rest, ok := strings.Cut(s.key, ".")
		switch {
		case s.key == "":
		case table == "" && !ok:
			known = append(known, s.key)
		case table != "" && !ok && s.key == table:
			known = append(known, "")
		case table == "" && ok:
			known = append(known, "["+t+"]")
		case ok && t == table:
			known = append(known, rest)
		}
	}
	known = dedupe(known)
	if table != "" && slices.Contains(known, "") {
		return fmt.Sprintf("unknown key %q: %s is a setting, not a table", key, table)
	}
	if len(known) == 0 {
		return fmt.Sprintf("unknown table [%s] (key %q)", table, key)
	}
	where := "top-level keys"
	if table != "" {
		where = "keys of [" + table + "]"
	}
	return fmt.Sprintf("unknown key %q (%s: %s)", key, where, strings.Join(known, ", "))
}

// dedupe keeps the first of each string, in order.
func dedupe(ss []string) []string {
	var out []string
	for _, s := range ss {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// fileText turns a file value into the text the setting's parser reads.
func fileText(v any, sep string) (string, error) {
	switch x := v.(type) {
	case []any:
		if sep == "" {
			return "", errors.New("want one value, not an array")
		}
		parts := make([]string, len(x))
		for i, e := range x {
			s, err := scalarText(e)
			if err != nil {
				return "", fmt.Errorf("element %d: %w", i, err)
			}
			if strings.Contains(s, sep) {
				return "", fmt.Errorf("element %d (%q) holds %q, which separates elements", i, s, sep)
			}
			parts[i] = s
		}
		return strings.Join(parts, sep), nil
	case []map[string]any:
		return "", errors.New("want a value, not an array of tables")
	}
	return scalarText(v)
}

func scalarText(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	case bool:
		return strconv.FormatBool(x), nil
	}
	return "", fmt.Errorf("want a string, number or boolean, not %T", v)
}

func showValue(v any) string {
	if s, ok := v.(string); ok {
		return tomlString(s)
	}
	if b, err := json.Marshal(v); err == nil {
		return string(b)
	}
	return fmt.Sprint(v)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// WriteSettings writes c as a run file: every setting a file may hold,
// with its effective value, top-level keys first, then [target], [twin]
// and [fixtures]. It never writes the API key; out is left out, since the
// file lies in the run directory and a copy is meant for the next run.
// File(path) reads it back to the same settings.
func WriteSettings(w io.Writer, c Config) error {
	var b strings.Builder
	b.WriteString("# vetbench run settings: the effective configuration of this run (defaults,\n" +
		"# then the run file, the environment and the flags). Never the API key.\n" +
		"# Run again with these: vetbench run -config settings.toml -out NEW_DIR\n" +
		"#                  or: make bench CONFIG=settings.toml OUT=NEW_DIR\n")
	if c.File != "" {
		fmt.Fprintf(&b, "# read from run file %s\n", c.File)
	}
	tables := map[string][]string{}
	var order []string
	for _, s := range settings() {
		if s.key == "" || s.show == nil {
			continue
		}
		v := s.show(&c)
		if v == "" {
			continue
		}
		table, key, ok := strings.Cut(s.key, ".")
		if !ok {
			table, key = "", s.key
		}
		if _, seen := tables[table]; !seen {
			order = append(order, table)
		}
		tables[table] = append(tables[table], key+" = "+v)
	}
	// TOML wants top-level keys before the first table.
	slices.SortStableFunc(order, func(a, b string) int {
		switch {
		case a == "" && b != "":
			return -1
		case a != "" && b == "":
			return 1
		}
		return 0
	})
	for _, t := range order {
		b.WriteString("\n")
		if t != "" {
			b.WriteString("[" + t + "]\n")
		}
		for _, line := range tables[t] {
			b.WriteString(line + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// tomlString is s as a TOML basic string. Go's JSON string encoding is one,
// but for DEL, which TOML wants escaped: TOML's escapes include JSON's, and
// Go writes no others.
func tomlString(s string) string {
	b, _ := json.Marshal(s)
	return strings.ReplaceAll(string(b), "\x7f", `\u007f`)
}

func tomlStrings(ss []string) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = tomlString(s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func tomlInts(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(n)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// tomlFloat is f as a TOML float (always with a fraction or exponent).
func tomlFloat(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEn") {
		s += ".0"
	}
	return s
}
