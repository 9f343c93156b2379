package stub

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/stub/internal/twintest"
)

// faultFixture is one question about one item, asked through the judgments
// client as a benchmark would.
type faultFixture struct {
	spec judgments.Spec
	item judgments.Item
}

func newFaultFixture(t *testing.T) faultFixture {
	set := lookalikeChecks(t, 1)
	return faultFixture{spec: judgments.Spec{Name: "checks", Questions: set.Spec.Questions[2:3]}, item: set.Cases[0].Item}
}

func (f faultFixture) judge(t *testing.T, url string, mode judgments.Mode, opts ...judgments.ClientOption) error {
	t.Helper()
	cl := judgments.NewClient(url, append([]judgments.ClientOption{judgments.WithModel(ProfileFast().Model), judgments.WithMode(mode)}, opts...)...)
	ctrl, err := cl.Tokenize(t.Context(), f.spec.Controls())
	require.NoError(t, err)
	_, err = cl.Judge(t.Context(), f.spec, ctrl, f.item)
	return err
}

// rawChat sends the fixture's question as the client would and returns the
// raw answer.
func (f faultFixture) rawChat(t *testing.T, url string) (*http.Response, []byte, error) {
	t.Helper()
	ctrl := judgments.Controls{}
	for _, c := range f.spec.Controls() {
		ctrl[c], _ = ControlTokenID(c)
	}
	req, err := judgments.BuildRequest(ProfileFast().Model, judgments.ModeTokenIDs, 0, f.item, f.spec.Questions[0], ctrl,
		[]string{f.item.Images[0].DataURL()})
	require.NoError(t, err)
	body, err := json.Marshal(req)
	require.NoError(t, err)
	hr, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/v1/chat/completions", strings.NewReader(string(body)))
	require.NoError(t, err)
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("X-Request-Id", "faults|"+f.item.ID+"|"+f.spec.Questions[0].ID)
	res, err := http.DefaultClient.Do(hr)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	return res, data, err
}

// TestFaults shows that each fault produces its documented answer on the
// wire and that judgments.Client turns it into the right typed error.
func TestFaults(t *testing.T) {
	fx := newFaultFixture(t)
	statusErr := func(code int, typ string) func(*testing.T, error) {
		return func(t *testing.T, err error) {
			var se *judgments.StatusError
			require.ErrorAs(t, err, &se)
			require.Equal(t, code, se.Code)
			require.Equal(t, typ, se.Type)
		}
	}
	topLogprobs := func(t *testing.T, data []byte) []map[string]any {
		var body struct {
			Choices []struct {
				Logprobs *struct {
					Content []struct {
						TopLogprobs []map[string]any `json:"top_logprobs"`
					} `json:"content"`
				} `json:"logprobs"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal(data, &body), "%s", data)
		require.NotNil(t, body.Choices[0].Logprobs, "%s", data)
		return body.Choices[0].Logprobs.Content[0].TopLogprobs
	}
	cases := []struct {
		spec   string
		client []judgments.ClientOption
		// fake runs the row in a synctest bubble over an in-memory
		// transport: its deadline then races only the fault's own delay,
		// not a loaded machine's scheduling.
		fake bool
		// harmless faults leave a judgment as it was.
		harmless bool
		wire     func(t *testing.T, res *http.Response, data []byte, err error)
		typed    func(t *testing.T, err error)
	}{
		{spec: "http500",
			wire: func(t *testing.T, res *http.Response, data []byte, err error) {
				require.NoError(t, err)
				require.Equal(t, http.StatusInternalServerError, res.StatusCode)
				require.JSONEq(t, `{"error":{"message":"injected fault: internal server error","type":"InternalServerError","param":null,"code":500}}`, string(data))
			},
			typed: statusErr(500, "InternalServerError")},
		{spec: "http429:retry-after=3",
			wire: func(t *testing.T, res *http.Response, data []byte, err error) {
				require.NoError(t, err)
				require.Equal(t, http.StatusTooManyRequests, res.StatusCode)
				require.Equal(t, "3", res.Header.Get("Retry-After"))
			},
			typed: func(t *testing.T, err error) {
				statusErr(429, "RateLimitError")(t, err)
				var se *judgments.StatusError
				require.ErrorAs(t, err, &se)
				require.Equal(t, 3*time.Second, se.RetryAfter)
			}},
		{spec: "http400",
			wire: func(t *testing.T, res *http.Response, data []byte, err error) {
				require.NoError(t, err)
				require.Equal(t, http.StatusBadRequest, res.StatusCode)
			},
			typed: statusErr(400, "BadRequestError")},
		{spec: "engine-dead",
			wire: func(t *testing.T, res *http.Response, data []byte, err error) {
				require.NoError(t, err)
				require.Equal(t, http.StatusInternalServerError, res.StatusCode)
				require.Contains(t, string(data), EngineDeadMessage)
			},
			typed: func(t *testing.T, err error) {
				statusErr(500, "InternalServerError")(t, err)
				require.ErrorContains(t, err, "EngineCore encountered an issue")
			}},
		{spec: "slow:delay=2s", client: []judgments.ClientOption{judgments.WithRequestTimeout(100 * time.Millisecond)}, fake: true,
			wire: nil, // a raw request would wait the whole delay
			typed: func(t *testing.T, err error) {
				require.ErrorIs(t, err, context.DeadlineExceeded)
			}},
		{spec: "reset",
			wire: func(t *testing.T, res *http.Response, data []byte, err error) {
				require.Error(t, err, "the connection closes with no answer")
			},
			typed: func(t *testing.T, err error) {
				var se *judgments.StatusError
				require.False(t, errors.As(err, &se), "a reset is not an HTTP status: %v", err)
				require.ErrorIs(t, err, io.EOF)
			}},
		{spec: "truncate",
			wire: func(t *testing.T, res *http.Response, data []byte, err error) {
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, res.StatusCode)
				require.False(t, json.Valid(data), "the body is cut: %s", data)
				require.True(t, strings.HasPrefix(string(data), `{"choices":`) || strings.HasPrefix(string(data), "{"))
			},
			typed: func(t *testing.T, err error) {
				var se *judgments.StatusError
				require.False(t, errors.As(err, &se))
				var syn *json.SyntaxError
				require.ErrorAs(t, err, &syn, "a decode error: %v", err)
			}},
		{spec: "no-logprobs",
			wire: func(t *testing.T, res *http.Response, data []byte, err error) {
				require.NoError(t, err)
				require.Contains(t, string(data), `"logprobs":null`)
			},
			typed: func(t *testing.T, err error) { require.ErrorIs(t, err, judgments.ErrNoLogprobs) }},
		{spec: "missing-candidate",
			wire: func(t *testing.T, res *http.Response, data []byte, err error) {
				require.NoError(t, err)
				require.Len(t, topLogprobs(t, data), len(fx.spec.Questions[0].Options)-1)
			},
			typed: func(t *testing.T, err error) { require.ErrorIs(t, err, judgments.ErrMissingCandidate) }},
		{spec: "nan",
			wire: func(t *testing.T, res *http.Response, data []byte, err error) {
				require.NoError(t, err)
				top := topLogprobs(t, data)
				require.Len(t, top, len(fx.spec.Questions[0].Options))
				require.Nil(t, top[0]["logprob"], "NaN goes on the wire as null")
			},
			typed: func(t *testing.T, err error) { require.ErrorIs(t, err, judgments.ErrNonFinite) }},
		{spec: "stream-error",
			wire: func(t *testing.T, res *http.Response, data []byte, err error) {
				require.NoError(t, err)
				require.Equal(t, http.StatusInternalServerError, res.StatusCode, "a one-token request fails at its only token")
			},
			typed: statusErr(500, "InternalServerError")},
		// The loop fault shapes generated text: a one-token judgment is
		// untouched (stream_test.go shows the loop).
		{spec: "loop", harmless: true,
			wire: func(t *testing.T, res *http.Response, data []byte, err error) {
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, res.StatusCode)
			}},
	}
	kinds := map[FaultKind]bool{}
	for _, tc := range cases {
		t.Run(tc.spec, func(t *testing.T) {
			f, err := ParseFault(tc.spec)
			require.NoError(t, err)
			kinds[f.Kind] = true
			judge := func(t *testing.T, s *Server, url string, client []judgments.ClientOption) {
				for _, mode := range []judgments.Mode{judgments.ModeTokenIDs, judgments.ModeTopLogprobs} {
					err := fx.judge(t, url, mode, client...)
					if tc.harmless {
						require.NoError(t, err, "mode %s", mode)
						continue
					}
					require.Error(t, err, "mode %s", mode)
					tc.typed(t, err)
					if f.Kind == FaultEngineDead {
						s.ReviveEngine()
					}
				}
				require.Positive(t, s.Stats().FaultsFired[f.Kind])
			}
			if tc.fake {
				synctest.Test(t, func(t *testing.T) {
					s, err := New(Config{Faults: []Fault{f}})
					require.NoError(t, err)
					defer s.Close()
					hc := &http.Client{Transport: twintest.Transport(s)}
					judge(t, s, "http://twin", append([]judgments.ClientOption{judgments.WithHTTPClient(hc)}, tc.client...))
				})
				return
			}
			rs, err := Start(Config{Faults: []Fault{f}})
			require.NoError(t, err)
			defer rs.Close()
			if tc.wire != nil {
				res, data, err := fx.rawChat(t, rs.URL())
				tc.wire(t, res, data, err)
				if f.Kind == FaultEngineDead {
					rs.ReviveEngine() // the raw request killed it
				}
			}
			judge(t, rs.Server, rs.URL(), tc.client)
		})
	}
	for _, k := range FaultKinds {
		require.True(t, kinds[k], "fault %s has no row", k)
	}
	// Positive control: the same fixture passes without faults.
	rs, err := Start(Config{})
	require.NoError(t, err)
	defer rs.Close()
	require.NoError(t, fx.judge(t, rs.URL(), judgments.ModeTokenIDs))
	require.NoError(t, fx.judge(t, rs.URL(), judgments.ModeTopLogprobs))
}

// TestEngineDeath shows /health going 503 and every request failing until
// the engine is revived, with fresh metrics afterwards.
func TestEngineDeath(t *testing.T) {
	fx := newFaultFixture(t)
	rs, err := Start(Config{})
	require.NoError(t, err)
	defer rs.Close()
	health := func() int {
		res, err := http.Get(rs.URL() + "/health")
		require.NoError(t, err)
		res.Body.Close()
		return res.StatusCode
	}
	require.NoError(t, fx.judge(t, rs.URL(), judgments.ModeTokenIDs))
	before := twintest.ScrapeMetrics(t.Context(), t, http.DefaultClient, rs.URL())
	require.Equal(t, 1.0, before.Value("vllm:request_success_total"))
	rs.KillEngine()
	require.True(t, rs.Stats().Dead)
	require.Equal(t, http.StatusServiceUnavailable, health())
	require.ErrorContains(t, fx.judge(t, rs.URL(), judgments.ModeTokenIDs), EngineDeadMessage)
	require.ErrorContains(t, fx.judge(t, rs.URL(), judgments.ModeTokenIDs), EngineDeadMessage, "still dead")
	rs.ReviveEngine()
	require.Equal(t, http.StatusOK, health())
	after := twintest.ScrapeMetrics(t.Context(), t, http.DefaultClient, rs.URL())
	require.Equal(t, 0.0, after.Value("vllm:request_success_total"), "a restarted server's counters start at 0")
	require.Greater(t, after.Value("vllm:request_success_created"), before.Value("vllm:request_success_created"), "with a new _created")
	require.NoError(t, fx.judge(t, rs.URL(), judgments.ModeTokenIDs))
}

// TestFaultSchedules shows when faults fire: every Nth, after N, on a
// request-id match, at a seeded rate (the same seed fires on the same
// requests), up to a limit.
func TestFaultSchedules(t *testing.T) {
	fires := func(spec string, ids []string) []int {
		f, err := ParseFault(spec)
		require.NoError(t, err)
		fs := newFaultState(f)
		var out []int
		for i, id := range ids {
			if fs.fires(i+1, id) {
				out = append(out, i+1)
			}
		}
		return out
	}
	ids := make([]string, 12)
	for i := range ids {
		ids[i] = judgments.RequestID("run", []string{"r00:clean", "r01:unsigned", "r02:clean"}[i%3], "verdict")
	}
	require.Equal(t, []int{3, 6, 9, 12}, fires("http500:every=3", ids))
	require.Equal(t, []int{11, 12}, fires("http500:after=10", ids))
	require.Equal(t, []int{2, 5, 8, 11}, fires("http500:match=r01:", ids))
	require.Equal(t, []int{6, 9, 12}, fires("http500:every=3,match=clean,after=4", ids))
	require.Equal(t, []int{5, 8}, fires("http500:match=r01:,after=4,limit=2", ids))
	require.Equal(t, []int{3, 6}, fires("http500:every=3,limit=2", ids))
	all := fires("http500", ids)
	require.Len(t, all, 12, "no condition: every request")
	a, b := fires("http500:rate=0.5,seed=7", ids), fires("http500:rate=0.5,seed=7", ids)
	require.Equal(t, a, b, "a seeded rate fires on the same requests")
	require.NotEmpty(t, a)
	require.Less(t, len(a), 12)
	require.NotEqual(t, a, fires("http500:rate=0.5,seed=8", ids), "another seed, other requests")

	for _, bad := range []string{"http501", "http500:every=0", "http500:rate=1.5", "http500:rate=nan", "http500:rate=NaN", "http500:rate=+Inf", "slow:delay=-1s", "http500:colour=red", "http500:every"} {
		_, err := ParseFault(bad)
		require.Error(t, err, bad)
		require.ErrorContains(t, err, bad, "the error names the spec")
	}
	for _, spec := range []string{"http429:every=10,retry-after=2", "slow:match=r03:,delay=5s", "engine-dead:after=100,limit=1", "nan:rate=0.25,seed=3"} {
		f, err := ParseFault(spec)
		require.NoError(t, err)
		require.Equal(t, spec, f.String(), "String is the spec")
	}
}
