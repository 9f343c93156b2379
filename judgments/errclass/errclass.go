// Package errclass names why a request to the server failed with a stable
// word that receipts, reports and counts group by: "timeout",
// "connection_reset", "http_500", "missing_candidate", … One function (Of)
// holds the vocabulary for every client of vetbench — judgments, streams,
// probes — so the same failure has the same name wherever it is recorded;
// Go type names (*fmt.wrapError) never are one.
//
// Of first looks for why a request ended early — a cancel, a deadline, or
// a cause a package names with NewCause (a stall watch that cancels its own
// request is "stalled", not "canceled") — anywhere in the error tree; then
// for what went wrong, depth first in wrapping order, the first error it
// can name winning. A package with errors of its own names them with New
// or an ErrorClass method.
package errclass

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/url"
	"strconv"
	"syscall"

	"github.com/vetbench/vetbench/judgments"
)

// Classes. HTTP statuses are "http_<code>" (HTTP).
const (
	Canceled           = "canceled"           // the caller cancelled (Ctrl-C)
	Timeout            = "timeout"            // a deadline ran out (VETBENCH_TIMEOUT, a client timeout)
	ConnectionRefused  = "connection_refused" // nothing listens at the endpoint
	ConnectionReset    = "connection_reset"   // the server closed or reset the connection without an answer
	Unreachable        = "unreachable"        // no route to the host, or its name does not resolve
	TruncatedBody      = "truncated_body"     // an answer whose body ended early
	MalformedBody      = "malformed_body"     // an answer whose body is not the JSON expected
	MissingCandidate   = "missing_candidate"  // a requested control has no logprob
	DuplicateCandidate = "duplicate_candidate"
	NonFinite          = "non_finite"         // a null/NaN/Inf logprob
	ImpossibleLogprob  = "impossible_logprob" // a logprob above 0 or below vLLM's floor, or every candidate at the floor
	BodyTooLarge       = "body_too_large"     // an answer over its kind's cap (chat, tokenize, a stream)
	Redirect           = "redirect"           // a redirect refused (another origin, too many)
	NoLogprobs         = "no_logprobs"        // an answer without logprobs
	UnexpectedToken    = "unexpected_token"   // a logprob for a token nobody asked for
	NoTokenizer        = "no_tokenizer"       // the server has no /tokenize
	Transport          = "transport"          // another network error
	Other              = "other"              // none of the above
)

// HTTP is the class of a non-200 answer: "http_<code>".
func HTTP(code int) string { return "http_" + strconv.Itoa(code) }

// Classed is an error that names its own class.
type Classed interface {
	error
	ErrorClass() string
}

// New returns a sentinel error with text msg and class class, for a
// package's own errors.Is targets.
func New(class, msg string) error { return &sentinel{class: class, msg: msg} }

// NewCause is New for an error that ends a request on purpose (a stall
// watch, an observer that stops a stream): it outranks the cancel it
// causes, wherever that is wrapped.
func NewCause(class, msg string) error { return &sentinel{class: class, msg: msg, cause: true} }

type sentinel struct {
	class, msg string
	cause      bool
}

func (s *sentinel) Error() string      { return s.msg }
func (s *sentinel) ErrorClass() string { return s.class }

// Of names err's class: "" for nil, Other when nothing in it is known.
func Of(err error) string {
	if err == nil {
		return ""
	}
	if c := find(err, ended); c != "" {
		return c
	}
	if c := find(err, direct); c != "" {
		return c
	}
	var ce *judgments.CandidateError
	var ne net.Error
	switch {
	case errors.As(err, &ce):
		return MissingCandidate // fails closed like one: no verdict from it
	case errors.As(err, &ne):
		return Transport
	}
	return Other
}

// find returns what name calls the first error in err's tree, depth first
// in wrapping order, that it names.
func find(err error, name func(error) string) string {
	if c := name(err); c != "" {
		return c
	}
	switch u := err.(type) {
	case *url.Error:
		if c := find(u.Err, name); c != "" {
			return c
		}
	case interface{ Unwrap() error }:
		if e := u.Unwrap(); e != nil {
			return find(e, name)
		}
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if c := find(e, name); c != "" {
				return c
			}
		}
	}
	return ""
}

// ended names why a request ended early: a cause, a cancel, a deadline.
func ended(err error) string {
	if s, ok := err.(*sentinel); ok && s.cause {
		return s.class
	}
	switch err {
	case context.Canceled:
		return Canceled
	case context.DeadlineExceeded:
		return Timeout
	}
	// A client's own deadline (http.Client.Timeout, a dial timeout) says
	// so through net.Error.
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return Timeout
	}
	if e, ok := err.(syscall.Errno); ok && e == syscall.ETIMEDOUT {
		return Timeout
	}
	return ""
}

// direct names what went wrong in err itself, not in what it wraps.
func direct(err error) string {
	if c, ok := err.(Classed); ok {
		return c.ErrorClass()
	}
	switch err {
	case io.ErrUnexpectedEOF, judgments.ErrTruncatedBody:
		return TruncatedBody
	case judgments.ErrMissingCandidate:
		return MissingCandidate
	case judgments.ErrDuplicateCandidate:
		return DuplicateCandidate
	case judgments.ErrNonFinite:
		return NonFinite
	case judgments.ErrImpossibleLogprob:
		return ImpossibleLogprob
	case judgments.ErrBodyTooLarge:
		return BodyTooLarge
	case judgments.ErrRedirect:
		return Redirect
	case judgments.ErrNoLogprobs:
		return NoLogprobs
	case judgments.ErrUnexpectedToken:
		return UnexpectedToken
	case judgments.ErrNoTokenizer:
		return NoTokenizer
	}
	switch e := err.(type) {
	case *url.Error:
		// The request phase: a connection closed before any answer is a
		// reset, whatever the transport calls it (EOF, unexpected EOF).
		if c := find(e.Err, direct); c == "" && (errors.Is(e.Err, io.EOF) || errors.Is(e.Err, io.ErrUnexpectedEOF)) {
			return ConnectionReset
		}
	case *judgments.StatusError:
		return HTTP(e.Code)
	case *json.SyntaxError:
		if e.Error() == "unexpected end of JSON input" {
			return TruncatedBody
		}
		return MalformedBody
	case *json.UnmarshalTypeError:
		return MalformedBody
	case *net.DNSError:
		return Unreachable
	case syscall.Errno:
		switch e {
		case syscall.ECONNREFUSED:
			return ConnectionRefused
		case syscall.ECONNRESET, syscall.EPIPE, syscall.ECONNABORTED:
			return ConnectionReset
		case syscall.EHOSTUNREACH, syscall.ENETUNREACH:
			return Unreachable
		}
	}
	return ""
}
