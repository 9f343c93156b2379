package judgments_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vetbench/vetbench/fixtures/sets"
	"github.com/vetbench/vetbench/judgments"
)

// capturedRequest is what the server saw of one scoring request.
type capturedRequest struct {
	id, contentType string
	length          int64
	body            []byte
}

// recorder is cannedVLLM that keeps every chat request it receives.
type recorder struct {
	canned cannedVLLM
	mu     sync.Mutex
	got    []capturedRequest
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.got = append(r.got, capturedRequest{id: req.Header.Get("X-Request-Id"), contentType: req.Header.Get("Content-Type"), length: req.ContentLength, body: body})
	r.mu.Unlock()
	r.canned.ServeHTTP(w, req)
}

// wirePins are the sha256 of every chat body the client sent for a whole
// set (token_ids and top_logprobs modes, in order), as main's client sent
// them when the wire format was last changed on purpose: the client's
// encoding may get faster, its bytes may not move.
var wirePins = map[string]string{
	sets.Checks:     "9e37049b5f646575d8a1d37229cdadf661f48224c01df6e542ee392699fe989c",
	sets.Faces:      "fa32e72e45150039f6d580aad080b9efff299286489d0ec35a9e75515886ff31",
	sets.Signatures: "c68e9501a742c034d0834157fd1164a62f7f708e50b6f8cd18dd7f9c4044f177",
}

// TestCapturedWireBodies sends every question of every item of the three
// default sets through the client, in both scoring modes, and checks what
// reached the server: each body is byte for byte json.Marshal of
// BuildRequest (the request as a struct), Content-Length says its length,
// and the digest over a set's bodies is the pinned one.
func TestCapturedWireBodies(t *testing.T) {
	for name, pin := range wirePins {
		t.Run("set="+name, func(t *testing.T) {
			set, err := sets.Open(t.Context(), name, sets.Options{})
			require.NoError(t, err)
			ctrl := judgments.Controls{}
			for i, k := range set.Spec.Controls() {
				ctrl[k] = 236048 + i
			}
			h := sha256.New()
			for _, mode := range []judgments.Mode{judgments.ModeTokenIDs, judgments.ModeTopLogprobs} {
				rec := &recorder{canned: newCannedVLLM(set.Spec, ctrl, mode)}
				srv := httptest.NewServer(rec)
				t.Cleanup(srv.Close)
				c := judgments.NewClient(srv.URL, judgments.WithModel(overheadModel), judgments.WithMode(mode))
				for _, cs := range set.Cases {
					_, err := c.Judge(t.Context(), set.Spec, ctrl, cs.Item)
					require.NoError(t, err)
				}
				require.Len(t, rec.got, len(set.Cases)*len(set.Spec.Questions), "every question was sent")
				k := 0
				for _, cs := range set.Cases {
					urls := make([]string, len(cs.Item.Images))
					for i, im := range cs.Item.Images {
						urls[i] = im.DataURL()
					}
					for _, q := range set.Spec.Questions {
						got := rec.got[k]
						k++
						req, err := judgments.BuildRequest(overheadModel, mode, judgments.DefaultTopLogprobs, cs.Item, q, ctrl, urls)
						require.NoError(t, err)
						want, err := json.Marshal(req)
						require.NoError(t, err)
						require.Equal(t, judgments.RequestID("vetbench", cs.Item.ID, q.ID), got.id)
						require.Equal(t, "application/json", got.contentType)
						require.Equal(t, int64(len(want)), got.length)
						require.Equal(t, string(want), string(got.body), "item %s question %s mode %s", cs.Item.ID, q.ID, mode)
						h.Write(got.body)
					}
				}
			}
			sum := hex.EncodeToString(h.Sum(nil))
			require.Equal(t, pin, sum, "the wire bytes of set %s moved", name)
		})
	}
}
