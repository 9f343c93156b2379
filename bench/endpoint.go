package bench

import (
	"net/http"
	"net/url"

	"github.com/vetbench/vetbench/receipts"
)

// Endpoint is the measuring library's view of a target: where to send
// judgments and how receipts record it. Whatever needs starting is started
// elsewhere (bench/target); bench only measures.
type Endpoint struct {
	BaseURL string // no trailing slash
	Model   string // empty: the first model the server lists
	APIKey  string // sent as a bearer token; never recorded
	// Target is how receipts record it (kind, endpoint without credentials,
	// twin profile, time scale, replay, ...).
	Target receipts.Target
	// Notes are facts about how it was chosen, for receipts.
	Notes []string
}

// Receipt is the target as a receipt records it: the endpoint (BaseURL when
// Target.Endpoint is empty) without user info, query or fragment, and never
// the API key.
func (e Endpoint) Receipt() receipts.Target {
	r := e.Target
	if r.Endpoint == "" {
		r.Endpoint = e.BaseURL
	}
	u, err := url.Parse(r.Endpoint)
	if err != nil {
		r.Endpoint = "" // unparseable: record nothing rather than a secret
		return r
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	r.Endpoint = u.String()
	return r
}

func (e Endpoint) authorize(req *http.Request) {
	if e.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+e.APIKey)
	}
}
