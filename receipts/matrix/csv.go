package matrix

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/vetbench/vetbench/receipts"
	"github.com/vetbench/vetbench/receipts/internal/docfile"
)

// Columns is the published CSV header, in order.
var Columns = []string{
	"phase", "context", "requests_at_once", "status", "total_tok_s", "per_request_tok_s",
	"ttft", "time_between_tokens", "average_active_requests", "completed_requests",
	"output_tokens", "measured_for",
}

// Phases as the CSV names them.
const (
	PhasePrefill   = "Prefill"
	PhaseSustained = "Sustained decode"
)

// Missing is how the pages write a figure that is not there.
const Missing = "—"

// Column indexes.
const (
	colPhase = iota
	colContext
	colRequests
	colStatus
	colTotal
	colPerRequest
	colTTFT
	colTBT
	colActive
	colCompleted
	colOutput
	colMeasured
)

// WriteCSV writes m in the published layout: the description as a "# "
// comment line, the header, the prefill rows, then the sustained decode
// cells, each in the matrix's order, with the pages' number formats
// ("62K", "1,001.5", "1,571 ms", "3.8 ms", "30.0 s", "—"). The layout has
// no column for a status reason, the prompt tokens or the exact context
// length: those stay in the JSON.
func WriteCSV(w io.Writer, m *Matrix) error {
	if err := m.Validate(); err != nil {
		return err
	}
	var b bytes.Buffer
	if m.Description != "" {
		b.WriteString("# " + m.Description + "\n")
	}
	cw := csv.NewWriter(&b)
	_ = cw.Write(Columns)
	for _, r := range m.Prefill {
		_ = cw.Write([]string{
			PhasePrefill, r.Context, strconv.Itoa(r.Requests), r.Status.Label(),
			fmtTokS(r.TokS), Missing, fmtMs0(r.TTFTMs), Missing, Missing,
			strconv.Itoa(r.Samples), Missing, Missing,
		})
	}
	for _, c := range m.Cells {
		_ = cw.Write([]string{
			PhaseSustained, c.Context, strconv.Itoa(c.Concurrency), c.Status.Label(),
			fmtTokS(c.TotalTokS), fmtTokS(c.PerRequestTokS), fmtMs0(c.TTFTMs), fmtMs1(c.TimeBetweenTokensMs),
			fmtOne(c.AverageActive), strconv.Itoa(c.CompletedRequests), fmtInt(c.OutputTokens), fmtSeconds(c.MeasuredSeconds),
		})
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write matrix csv: %w", err)
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("write matrix csv: %w", err)
	}
	return nil
}

// WriteCSVFile writes the CSV to path atomically, refusing to overwrite.
func WriteCSVFile(path string, m *Matrix) error {
	var b bytes.Buffer
	if err := WriteCSV(&b, m); err != nil {
		return err
	}
	return docfile.WriteNew(path, b.Bytes())
}

// ReplaceCSVFile is WriteCSVFile for a caller that was asked to overwrite.
func ReplaceCSVFile(path string, m *Matrix) error {
	var b bytes.Buffer
	if err := WriteCSV(&b, m); err != nil {
		return err
	}
	return docfile.Replace(path, b.Bytes())
}

// ReadCSVFile reads a matrix CSV at path.
func ReadCSVFile(path string) (*Matrix, error) {
	f, _, err := docfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open matrix csv: %w", err)
	}
	defer f.Close()
	return ReadCSV(f, path)
}

// ReadCSV reads the published CSV layout. The matrix it returns is of
// SourcePublished, target live, with the comment line as its description.
// An error is a *receipts.SchemaError with the file, the line and column
// of the field, and the column name as its path.
func ReadCSV(r io.Reader, name string) (*Matrix, error) {
	data, err := docfile.Read(r)
	if err != nil {
		return nil, &receipts.SchemaError{File: name, Msg: err.Error()}
	}
	m := &Matrix{Schema: Schema, Source: SourcePublished, Target: receipts.Target{Kind: receipts.TargetLive}}
	offset := 0 // lines before the CSV proper
	if bytes.HasPrefix(data, []byte("#")) {
		line, rest, _ := bytes.Cut(data, []byte("\n"))
		m.Description = strings.TrimPrefix(strings.TrimSuffix(strings.TrimPrefix(string(line), "#"), "\r"), " ")
		data, offset = rest, 1
	}
	cr := csv.NewReader(bytes.NewReader(data))
	cr.FieldsPerRecord = -1
	rd := &rowReader{cr: cr, file: name, offset: offset, pos: cr.FieldPos}
	header, err := rd.next()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &receipts.SchemaError{File: name, Msg: "no header row"}
		}
		return nil, err
	}
	for i, col := range Columns {
		if i >= len(header) || header[i] != col {
			got := "nothing"
			if i < len(header) {
				got = strconv.Quote(header[i])
			}
			return nil, rd.fieldErr(min(i, max(len(header)-1, 0)), col, "header column %d is %s, want %q", i+1, got, col)
		}
	}
	if len(header) != len(Columns) {
		return nil, rd.fieldErr(len(Columns), "", "header has %d columns, want %d", len(header), len(Columns))
	}
	for {
		rec, err := rd.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if err := rd.row(m, rec); err != nil {
			return nil, err
		}
	}
	m.Identity.Digest = m.IdentityDigest()
	if err := m.validate(name); err != nil {
		return nil, err
	}
	return m, nil
}

type rowReader struct {
	cr     *csv.Reader
	file   string
	offset int
	// pos is the line and column of field i of the record just read.
	pos func(i int) (line, column int)
}

func (rd *rowReader) next() ([]string, error) {
	rec, err := rd.cr.Read()
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return nil, &receipts.SchemaError{File: rd.file, Line: pe.Line + rd.offset, Column: pe.Column, Msg: pe.Err.Error()}
	}
	return rec, err
}

func (rd *rowReader) fieldErr(i int, column, format string, args ...any) error {
	line, col := rd.pos(i)
	return &receipts.SchemaError{File: rd.file, Line: line + rd.offset, Column: col, Path: column, Msg: fmt.Sprintf(format, args...)}
}

// row reads one record into m.
func (rd *rowReader) row(m *Matrix, rec []string) error {
	if len(rec) != len(Columns) {
		return rd.fieldErr(0, "", "%d fields, want %d", len(rec), len(Columns))
	}
	var firstErr error
	get := func(i int, parse func(string) error) {
		if firstErr != nil {
			return
		}
		if err := parse(rec[i]); err != nil {
			firstErr = rd.fieldErr(i, Columns[i], "%v", err)
		}
	}
	phase := rec[colPhase]
	if phase != PhasePrefill && phase != PhaseSustained {
		return rd.fieldErr(colPhase, Columns[colPhase], "%q is neither %q nor %q", phase, PhasePrefill, PhaseSustained)
	}
	context := rec[colContext]
	get(colContext, func(s string) error {
		if _, ok := ContextSize(s); !ok {
			return fmt.Errorf("%q is not a context label such as 8K", s)
		}
		return nil
	})
	var requests, completed int
	var status Status
	get(colRequests, intInto(&requests))
	get(colStatus, func(s string) error {
		st, ok := ParseLabel(s)
		if !ok {
			return fmt.Errorf("unknown status %q", s)
		}
		status = st
		return nil
	})
	get(colCompleted, intInto(&completed))
	if phase == PhasePrefill {
		r := Prefill{Context: context, Requests: requests, Status: status, Samples: completed}
		get(colTotal, optTokS(&r.TokS))
		get(colTTFT, optUnit(&r.TTFTMs, " ms"))
		for _, i := range []int{colPerRequest, colTBT, colActive, colOutput, colMeasured} {
			get(i, func(s string) error {
				if s != Missing {
					return fmt.Errorf("%q in a prefill row, which has no such figure (want %s)", s, Missing)
				}
				return nil
			})
		}
		m.Prefill = append(m.Prefill, r)
		return firstErr
	}
	c := Cell{Context: context, Concurrency: requests, Status: status, CompletedRequests: completed}
	get(colTotal, optTokS(&c.TotalTokS))
	get(colPerRequest, optTokS(&c.PerRequestTokS))
	get(colTTFT, optUnit(&c.TTFTMs, " ms"))
	get(colTBT, optUnit(&c.TimeBetweenTokensMs, " ms"))
	get(colActive, optUnit(&c.AverageActive, ""))
	get(colOutput, optInt(&c.OutputTokens))
	get(colMeasured, optUnit(&c.MeasuredSeconds, " s"))
	m.Cells = append(m.Cells, c)
	return firstErr
}

// parseNumber reads "1,001.5", "62K" or "19.3K".
func parseNumber(s string) (float64, error) {
	mult := 1.0
	if t, ok := strings.CutSuffix(s, "K"); ok {
		s, mult = t, 1000
	}
	clean := strings.ReplaceAll(s, ",", "")
	if clean == "" || strings.HasPrefix(clean, "+") || strings.ContainsAny(clean, "eEnN") {
		return 0, fmt.Errorf("not a number")
	}
	v, err := strconv.ParseFloat(clean, 64)
	if err != nil || bad(v) || v < 0 {
		return 0, fmt.Errorf("not a number >= 0")
	}
	return v * mult, nil
}

func intInto(dst *int) func(string) error {
	return func(s string) error {
		n, err := strconv.Atoi(strings.ReplaceAll(s, ",", ""))
		if err != nil || n < 0 {
			return fmt.Errorf("%q is not a whole number >= 0", s)
		}
		*dst = n
		return nil
	}
}

func optInt(dst **int) func(string) error {
	return func(s string) error {
		if s == Missing {
			return nil
		}
		var n int
		if err := intInto(&n)(s); err != nil {
			return err
		}
		*dst = &n
		return nil
	}
}

func optTokS(dst **float64) func(string) error {
	return func(s string) error {
		if s == Missing {
			return nil
		}
		v, err := parseNumber(s)
		if err != nil {
			return fmt.Errorf("%q: %v (want tok/s such as 1,001.5 or 62K)", s, err)
		}
		*dst = &v
		return nil
	}
}

// optUnit reads a number with a unit suffix (" ms", " s", or none).
func optUnit(dst **float64, unit string) func(string) error {
	return func(s string) error {
		if s == Missing {
			return nil
		}
		num, ok := strings.CutSuffix(s, unit)
		if !ok || (unit == "" && strings.HasSuffix(s, "K")) {
			return fmt.Errorf("%q does not end in %q", s, unit)
		}
		v, err := parseNumber(num)
		if err != nil {
			return fmt.Errorf("%q: %v", s, err)
		}
		*dst = &v
		return nil
	}
}

// commas groups the integer part of a decimal string in thousands.
func commas(s string) string {
	intPart, frac, hasFrac := strings.Cut(s, ".")
	var b strings.Builder
	for i, r := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if hasFrac {
		b.WriteString("." + frac)
	}
	return b.String()
}

// fmtTokS: 10,000 and above as thousands with one decimal ("13.1K",
// "62K"), below with one decimal ("9,049.3").
func fmtTokS(v *float64) string {
	if v == nil {
		return Missing
	}
	if *v >= 10000 {
		s := strconv.FormatFloat(*v/1000, 'f', 1, 64)
		return strings.TrimSuffix(s, ".0") + "K"
	}
	return commas(strconv.FormatFloat(*v, 'f', 1, 64))
}

func fmtMs0(v *float64) string {
	if v == nil {
		return Missing
	}
	return commas(strconv.FormatFloat(math.Round(*v), 'f', 0, 64)) + " ms"
}

func fmtMs1(v *float64) string {
	if v == nil {
		return Missing
	}
	return commas(strconv.FormatFloat(*v, 'f', 1, 64)) + " ms"
}

func fmtOne(v *float64) string {
	if v == nil {
		return Missing
	}
	return commas(strconv.FormatFloat(*v, 'f', 1, 64))
}

func fmtSeconds(v *float64) string {
	if v == nil {
		return Missing
	}
	return commas(strconv.FormatFloat(*v, 'f', 1, 64)) + " s"
}

func fmtInt(v *int) string {
	if v == nil {
		return Missing
	}
	return commas(strconv.Itoa(*v))
}
