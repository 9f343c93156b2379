package errclass_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vetbench/vetbench/fixtures/sets"
	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/judgments/errclass"
	"github.com/vetbench/vetbench/stub"
)

// Errors as the packages below build them, named by Of. The wrapping is the
// real one (JudgeError, url.Error, fmt %w), so a change of it that loses
// the class fails here.
func TestOf(t *testing.T) {
	t.Parallel()
	opErr := func(errno syscall.Errno) error {
		return &url.Error{Op: "Post", URL: "http://h/v1/chat/completions",
			Err: &net.OpError{Op: "read", Net: "tcp", Err: &os.SyscallError{Syscall: "read", Err: errno}}}
	}
	judge := func(err error) error { return &judgments.JudgeError{Item: "r00", Question: "verdict", Err: err} }
	truncated := json.Unmarshal([]byte(`{"choices": [`), &struct{}{})
	malformed := json.Unmarshal([]byte(`{"choices": ]`), &struct{}{})
	streamCut := errclass.New("cut", "stream cut before [DONE]")
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"canceled", judge(fmt.Errorf("/v1/chat/completions: %w", &url.Error{Op: "Post", URL: "u", Err: context.Canceled})), errclass.Canceled},
		{"deadline", judge(fmt.Errorf("x: %w", &url.Error{Op: "Post", URL: "u", Err: context.DeadlineExceeded})), errclass.Timeout},
		{"refused", judge(fmt.Errorf("x: %w", opErr(syscall.ECONNREFUSED))), errclass.ConnectionRefused},
		{"reset", judge(fmt.Errorf("x: %w", opErr(syscall.ECONNRESET))), errclass.ConnectionReset},
		{"closed without an answer", judge(fmt.Errorf("x: %w", &url.Error{Op: "Post", URL: "u", Err: io.EOF})), errclass.ConnectionReset},
		{"no route", opErr(syscall.EHOSTUNREACH), errclass.Unreachable},
		{"dns", &url.Error{Op: "Get", URL: "u", Err: &net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "gpu-box"}}}, errclass.Unreachable},
		{"truncated body", judge(fmt.Errorf("/v1/chat/completions: decode 100-byte body: %w", truncated)), errclass.TruncatedBody},
		{"short read", judge(fmt.Errorf("/v1/chat/completions: read body: %w", io.ErrUnexpectedEOF)), errclass.TruncatedBody},
		{"malformed body", judge(fmt.Errorf("decode: %w", malformed)), errclass.MalformedBody},
		{"http 500", judge(&judgments.StatusError{Endpoint: "/v1/chat/completions", Code: 500}), "http_500"},
		{"http 429", judge(&judgments.StatusError{Code: 429}), "http_429"},
		{"missing candidate", judge(&judgments.CandidateError{Question: "q", Err: fmt.Errorf("no token id pinned: %w", judgments.ErrMissingCandidate)}), errclass.MissingCandidate},
		{"duplicate", judge(&judgments.CandidateError{Err: judgments.ErrDuplicateCandidate}), errclass.DuplicateCandidate},
		{"non finite", judge(&judgments.CandidateError{Err: judgments.ErrNonFinite}), errclass.NonFinite},
		{"no logprobs", judge(&judgments.CandidateError{Err: judgments.ErrNoLogprobs}), errclass.NoLogprobs},
		{"unexpected token", judge(&judgments.CandidateError{Err: fmt.Errorf("%w: %q", judgments.ErrUnexpectedToken, "x")}), errclass.UnexpectedToken},
		{"other candidate error", judge(&judgments.CandidateError{Err: errors.New("odd")}), errclass.MissingCandidate},
		{"no tokenizer", fmt.Errorf("tokenize: %w: %w", judgments.ErrNoTokenizer, &judgments.StatusError{Code: 404}), errclass.NoTokenizer},
		// A cancel is why a request ended, wherever it is wrapped, unless a
		// cause (a stall that cancelled its own request) says otherwise;
		// without either the first named error in wrapping order wins.
		{"cancel then cut", fmt.Errorf("%w: %w", context.Canceled, fmt.Errorf("%w after 3 tokens: %w", streamCut, io.EOF)), errclass.Canceled},
		{"cut of a cancel", fmt.Errorf("%w after 3 tokens: %w", streamCut, context.Canceled), errclass.Canceled},
		{"cut of a reset", fmt.Errorf("%w after 3 tokens: %w", streamCut, opErr(syscall.ECONNRESET)), "cut"},
		{"cause", fmt.Errorf("%w: nothing for 1s: %w", errclass.NewCause("stalled", "stream stalled"), context.Canceled), "stalled"},
		{"not a cause", fmt.Errorf("%w: nothing for 1s: %w", errclass.New("stalled", "stream stalled"), context.Canceled), errclass.Canceled},
		{"other network", &net.OpError{Op: "dial", Err: errors.New("weird")}, errclass.Transport},
		{"unknown", errors.New("boom"), errclass.Other},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, errclass.Of(tc.err), "%v", tc.err)
		})
	}
}

// Every way the twin fails, and a server that does not answer or is not
// there, through the real client: each failure has its stable name, never
// a Go type name.
func TestOfClientFailures(t *testing.T) {
	set, err := sets.Open(t.Context(), sets.Checks, sets.Options{Size: 1})
	require.NoError(t, err)
	spec := judgments.Spec{Name: set.Spec.Name, Questions: set.Spec.Questions[2:3]}
	item := set.Cases[0].Item
	judge := func(t *testing.T, base string, opts ...judgments.ClientOption) error {
		cl := judgments.NewClient(base, append([]judgments.ClientOption{judgments.WithModel(stub.ProfileFast().Model)}, opts...)...)
		ctrl := judgments.Controls{}
		for _, c := range spec.Controls() {
			ctrl[c], _ = stub.ControlTokenID(c)
		}
		_, err := cl.Judge(t.Context(), spec, ctrl, item)
		return err
	}
	for _, tc := range []struct {
		fault, want string
	}{
		{"", ""}, // positive control: the same request passes
		{"http500", "http_500"},
		{"http429", "http_429"},
		{"http400", "http_400"},
		{"engine-dead", "http_500"},
		{"reset", errclass.ConnectionReset},
		{"truncate", errclass.TruncatedBody},
		{"no-logprobs", errclass.NoLogprobs},
		{"missing-candidate", errclass.MissingCandidate},
		{"nan", errclass.NonFinite},
		{"slow:delay=1h", errclass.Timeout},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			var cfg stub.Config
			if tc.fault != "" {
				f, err := stub.ParseFault(tc.fault)
				require.NoError(t, err)
				cfg.Faults = []stub.Fault{f}
			}
			rs, err := stub.Start(cfg)
			require.NoError(t, err)
			t.Cleanup(func() { _ = rs.Close() })
			// The timeout only matters for the slow fault, whose answer
			// never comes within the test.
			err = judge(t, rs.URL(), judgments.WithRequestTimeout(200*time.Millisecond))
			require.Equal(t, tc.want, errclass.Of(err), "%v", err)
		})
	}

	t.Run("refused", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := l.Addr().String()
		require.NoError(t, l.Close())
		err = judge(t, "http://"+addr)
		require.Equal(t, errclass.ConnectionRefused, errclass.Of(err), "%v", err)
	})
	t.Run("short body", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "1000")
			_, _ = io.WriteString(w, `{"choices": [`)
		}))
		t.Cleanup(srv.Close)
		err := judge(t, srv.URL)
		require.Equal(t, errclass.TruncatedBody, errclass.Of(err), "%v", err)
	})
	t.Run("canceled", func(t *testing.T) {
		hang := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-hang:
			case <-r.Context().Done():
			}
		}))
		t.Cleanup(func() { close(hang); srv.Close() })
		ctx, cancel := context.WithCancel(t.Context())
		cl := judgments.NewClient(srv.URL)
		go cancel()
		_, err := cl.Judge(ctx, spec, judgments.Controls{}, item)
		// ModeTokenIDs without pinned ids fails before sending; ask in
		// top_logprobs mode to reach the server.
		if errclass.Of(err) == errclass.MissingCandidate {
			_, err = judgments.NewClient(srv.URL, judgments.WithMode(judgments.ModeTopLogprobs)).Judge(ctx, spec, nil, item)
		}
		require.Equal(t, errclass.Canceled, errclass.Of(err), "%v", err)
	})
}
