package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// ErrorSchema names the JSON error object a -json command writes on stdout
// when it fails, instead of its report: a CI step's `> out.json` is never
// empty, and says why.
const ErrorSchema = "vetbench.error/v1"

// jsonError is that object.
type jsonError struct {
	Schema  string   `json:"schema"`
	Command string   `json:"command"`
	Error   string   `json:"error"`
	Details []string `json:"details,omitempty"`
	Exit    int      `json:"exit"`
}

// failure says why command failed: on stderr, as "vetbench <command>:
// <msg>" and one indented line per detail, and with asJSON also as an
// error object on stdout. It returns code.
func failure(e *env, command string, asJSON bool, code int, msg string, details ...string) int {
	var b strings.Builder
	fmt.Fprintf(&b, "vetbench %s: %s\n", command, msg)
	for _, d := range details {
		fmt.Fprintf(&b, "  %s\n", d)
	}
	fmt.Fprint(e.stderr, b.String())
	if asJSON {
		if err := writeJSON(e.stdout, jsonError{Schema: ErrorSchema, Command: command, Error: msg, Details: details, Exit: code}); err != nil {
			fmt.Fprintf(e.stderr, "vetbench %s: %v\n", command, err)
		}
	}
	return code
}

// printReport prints a command's report: as JSON with asJSON, else by
// writeText.
func printReport(e *env, asJSON bool, v any, writeText func(io.Writer) error) error {
	if asJSON {
		return writeJSON(e.stdout, v)
	}
	return writeText(e.stdout)
}

// writeJSON writes v indented, a newline after it.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// wantsJSON says whether args ask for -json, for failures before (or of)
// flag parsing.
func wantsJSON(args []string) bool {
	return slices.ContainsFunc(args, func(a string) bool {
		return a == "-json" || a == "--json" || a == "-json=true" || a == "--json=true"
	})
}
