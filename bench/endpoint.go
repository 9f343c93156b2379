package bench

import (
	"net/http"
	"net/url"

	"github.com/vetbench/vetbench/judgments"
	"github.com/vetbench/vetbench/receipts"
)

// Endpoint is the measuring library's view of a target: where to send
// judgments and how receipts record it. Whatever needs starting is started
// elsewhere (bench/sweep/target); bench only measures.
type Endpoint struct {
	BaseURL string // no trailing slash
	// Replicas are further base URLs serving the same model: a session
	// spreads its judgments over BaseURL and these (Balancer), scrapes
	// each, and its receipts show each one's figures and the total.
	Replicas []string
	Model    string // empty: the first model the server lists
	APIKey   string // sent as a bearer token; never recorded
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
	if len(e.Replicas) > 0 && len(r.Endpoints) == 0 {
		r.Endpoints = []string{r.Endpoint}
		for _, raw := range e.Replicas {
			r.Endpoints = append(r.Endpoints, stripURL(raw))
		}
	}
	return r
}

// stripURL is raw without user info, query or fragment; "" when it does
// not parse (nothing rather than a secret).
func stripURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// Authorize sends the endpoint's key on req (judgments.Authorize).
func (e Endpoint) Authorize(req *http.Request) { judgments.Authorize(req, e.APIKey) }
